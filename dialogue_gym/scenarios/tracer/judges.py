"""DM-Bench's response-quality (RQ) judges: accuracy, helpfulness, informativeness, empathy, each 1-5.

* :class:`HeuristicJudge` (default, deterministic, CPU): transparent rules over the assistant's turns
  and the merchant facts -- invented numbers, over-promises or scarcity claims cost accuracy;
  questions left without an accurate answer cost helpfulness; turns without a merchant fact cost
  informativeness; pressure and ignoring a negative reply cost empathy.
* :class:`LLMJudge`: the LLM-as-a-judge protocol with the four-dimension rubric
  (:data:`~dialogue_gym.scenarios.tracer.prompts.JUDGE_RUBRIC`), one batched backend call for many dialogues.

RQ is the mean of the four. A dialogue in which the assistant never spoke is unscored: every score
is ``None`` (``null`` in a trajectory, which is strict JSON; metrics skip it). The LLM judge's answer
is read from its first ``MAX_ACTION_CHARS`` characters with the bounded JSON reader of
:mod:`dialogue_gym.scenarios.common`; any unreadable answer is unscored, with an ``error``.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.common import bound_text, safe_json_loads
from dialogue_gym.scenarios.tracer.acts import analyze
from dialogue_gym.scenarios.tracer.data import load_phrases
from dialogue_gym.scenarios.tracer.prompts import judge_prompt

DIMENSIONS = ("accuracy", "helpfulness", "informativeness", "empathy")
JUDGES = ("none", "heuristic", "llm")
Transcript = Sequence[tuple[str, str]]
"""``(role, text)`` pairs of the episode's moves (the opening excluded), in order."""

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_OVERCLAIM = re.compile(
    r"(\bguarantee[ds]?\b|100%|\balways\b|\bnever fails\b|\bthe best\b|\bcheapest\b|\bpromise\b"
    r"|\bends today\b|\bonly a few\b|\blast chance\b|\blimited\b)",
    re.IGNORECASE,
)
"""Promises and scarcity claims no merchant fact supports."""
_WORD = re.compile(r"[a-z]{4,}")


def _scores(values: dict[str, float]) -> dict[str, float]:
    scores = {name: values[name] for name in DIMENSIONS}
    scores["rq"] = sum(scores.values()) / len(DIMENSIONS)
    return scores


def _unscored() -> dict[str, float | None]:
    return {**{name: None for name in DIMENSIONS}, "rq": None}


class HeuristicJudge:
    name = "heuristic"

    def score(self, transcript: Transcript, merchant: dict[str, Any]) -> dict[str, float]:
        pairs = list(transcript)
        spoken = [(i, text) for i, (role, text) in enumerate(pairs) if role == "assistant"]
        if not spoken:
            return _unscored()
        facts = [str(f) for f in merchant.get("facts", [])]
        known_numbers = set(_NUMBER.findall(" ".join(facts + [str(merchant.get("greeting", ""))])))
        fact_words = [set(_WORD.findall(f.lower())) for f in facts]
        negative = re.compile(load_phrases()["negative_cues"], re.IGNORECASE)

        def accurate(text: str) -> bool:
            return set(_NUMBER.findall(text)) <= known_numbers and not _OVERCLAIM.search(text)

        def informative(text: str) -> bool:
            words = set(_WORD.findall(text.lower()))
            return any(fw and len(fw & words) >= max(1, len(fw) // 2) for fw in fact_words)

        def answers(text: str) -> bool:
            return informative(text) or ("answer" in analyze(text) and accurate(text))

        previous = {i: pairs[i - 1][1] if i > 0 else "" for i, _ in spoken}
        questions = [i for i, _ in spoken if "?" in previous[i]]
        if questions:
            helpful = sum(answers(pairs[i][1]) for i in questions) / len(questions)
        else:
            helpful = sum(bool(analyze(text) & {"answer", "probe"}) for _, text in spoken) / len(spoken)
        sensitive = [i for i, _ in spoken if negative.search(previous[i].strip()) or not previous[i].strip()]
        soothed = sum("empathy" in analyze(pairs[i][1]) for i in sensitive) / len(sensitive) if sensitive else 1.0
        pressure = sum("urgency" in analyze(text) for _, text in spoken) / len(spoken)
        fractions = {
            "accuracy": sum(accurate(text) for _, text in spoken) / len(spoken),
            "helpfulness": helpful,
            "informativeness": sum(informative(text) for _, text in spoken) / len(spoken),
            "empathy": min(1.0, max(0.0, soothed - 0.5 * pressure)),
        }
        return _scores({name: 1.0 + 4.0 * value for name, value in fractions.items()})

    def score_batch(self, items: Sequence[tuple[Transcript, dict[str, Any]]]) -> list[dict[str, float]]:
        return [self.score(transcript, merchant) for transcript, merchant in items]


class LLMJudge:
    """Scores dialogues with a text-generation backend (a backend object or a JSON spec)."""

    name = "llm"

    def __init__(self, backend: Any, sampling: dict[str, Any] | None = None):
        from dialogue_gym.backends import SamplingParams, make_backend

        self.backend = make_backend(backend)
        self.sampling = SamplingParams(**{"temperature": 0.0, "max_new_tokens": 96, **(sampling or {})})

    @staticmethod
    def parse(text: str) -> dict[str, float]:
        """The four scores from the judge's JSON answer (the first ``{...}`` of it, which may not nest
        objects); unscored (``None`` scores and an ``error``) when unreadable. Total: any ``str`` gives scores."""
        if not isinstance(text, str):
            return {**_unscored(), "error": f"judge output is a {type(text).__name__}, not text"}
        bounded, _ = bound_text(text)
        opening = bounded.find("{")
        closing = bounded.find("}", opening) if opening >= 0 else -1
        loaded, problem = safe_json_loads(bounded[opening : closing + 1]) if closing >= 0 else (None, "no JSON object")
        values = {}
        for name in DIMENSIONS:
            value = loaded.get(name) if isinstance(loaded, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 5:
                detail = f" ({problem})" if problem else ""
                return {**_unscored(), "error": f"judge output is not the rubric's JSON{detail}: {text[:120]!r}"}
            values[name] = float(value)
        return _scores(values)

    def score_batch(self, items: Sequence[tuple[Transcript, dict[str, Any]]]) -> list[dict[str, float]]:
        from dialogue_gym.backends import GenerationRequest

        requests = [GenerationRequest(tuple(judge_prompt(list(t), m)), self.sampling) for t, m in items]
        outputs = self.backend.generate(requests)
        return [
            self.parse(output.text) if getattr(output, "error", None) is None else {**_unscored(), "error": output.error}
            for output in outputs
        ]

    def score(self, transcript: Transcript, merchant: dict[str, Any]) -> dict[str, float]:
        return self.score_batch([(transcript, merchant)])[0]


def make_judge(name: str, backend: Any = None, sampling: dict[str, Any] | None = None) -> HeuristicJudge | LLMJudge | None:
    """``"none"`` -> ``None``; ``"heuristic"``; ``"llm"`` with ``backend`` (e.g. ``{"name": "transformers", ...}``)."""
    if name == "none":
        return None
    if name == "heuristic":
        return HeuristicJudge()
    if name == "llm":
        if backend is None:
            raise ConfigError("judge='llm' needs judge_backend=..., e.g. judge_backend={'name': 'transformers', 'model': 'smollm2'}.")
        return LLMJudge(backend, sampling)
    raise ConfigError(f"judge={name!r} is not supported; use one of {list(JUDGES)}.")
