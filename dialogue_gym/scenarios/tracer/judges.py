"""DM-Bench's response-quality (RQ) judges: accuracy, helpfulness, informativeness, empathy, each 1-5.

* :class:`HeuristicJudge` (default, deterministic, CPU): transparent rules over what the assistant's
  turns say, read sentence by sentence (:mod:`dialogue_gym.scenarios.tracer.acts`) and checked
  against the merchant facts -- invented numbers, over-promises or scarcity claims cost accuracy;
  questions left without the fact that answers them cost helpfulness; turns without a new merchant
  fact, or crammed into a monologue, cost informativeness; pressure and ignoring a negative reply
  cost empathy; a turn that is gibberish, an echo of the user or a repeat meets no dimension.
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
from dialogue_gym.health import TurnHealth
from dialogue_gym.scenarios.common import bound_text, memoise_short_texts, safe_json_loads
from dialogue_gym.scenarios.tracer.acts import TurnReading, analyze, read_turn, read_turn_after, relevant_facts
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


def _scores(values: dict[str, float]) -> dict[str, float]:
    scores = {name: values[name] for name in DIMENSIONS}
    scores["rq"] = sum(scores.values()) / len(DIMENSIONS)
    return scores


def _unscored() -> dict[str, float | None]:
    return {**{name: None for name in DIMENSIONS}, "rq": None}


def _judge_health(record: TurnHealth) -> dict[str, Any]:
    return {"judge": record.to_dict()}


class HeuristicJudge:
    """The rubric (:data:`~dialogue_gym.scenarios.tracer.prompts.JUDGE_RUBRIC`) as transparent rules
    over what each assistant turn *says* (:func:`~dialogue_gym.scenarios.tracer.acts.read_turn`).

    Every dimension is the share of the assistant's turns that meet it (mapped to 1-5), and no turn
    meets any dimension when it is *no reply*: nothing understood (silence, fillers, made-up words),
    confusing (a keyword list or salad anywhere in it), an echo of the user or a repeat of an earlier
    turn. So keyword stuffing, fact stuffing and length cannot raise RQ:

    - accuracy: the turn's numbers all appear in the merchant's facts (or greeting) and it makes no
      promise or scarcity claim;
    - helpfulness: after a user question, the turn states the merchant fact that answers it (the fact
      sharing most content words with the question; any fact, or a real question back, when none
      shares one); after anything else, it answers or asks a real question. A monologue is not helpful;
    - informativeness: the turn states a merchant fact not stated before, in a turn that is not a
      monologue (brevity: a pasted fact list informs no one);
    - empathy: no pressure (urgency) and, after a negative or empty user reply, an empathic sentence.
    """

    name = "heuristic"

    def score(self, transcript: Transcript, merchant: dict[str, Any], opening: str | None = None) -> dict[str, float]:
        """The four scores of the assistant's turns in ``transcript``. ``opening``, the line the assistant
        opened with before the transcript, changes no score (it is neither judged nor context): given,
        each turn is read through :func:`~dialogue_gym.scenarios.tracer.acts.read_turn_after`, which
        reuses the reading the scripted user memoised where the opening cannot change it."""
        pairs = list(transcript)
        spoken = [i for i, (role, _) in enumerate(pairs) if role == "assistant"]
        if not spoken:
            return _unscored()
        facts = tuple(str(f) for f in merchant.get("facts", []))
        known_numbers = set(_NUMBER.findall(" ".join(facts + (str(merchant.get("greeting", "")),))))
        met = {name: 0 for name in DIMENSIONS}
        earlier: list[str] = []
        for i in spoken:
            text = pairs[i][1]
            heard = pairs[i - 1][1] if i > 0 and pairs[i - 1][0] == "user" else ""
            reading = read_turn(text, facts, heard, earlier) if opening is None else read_turn_after(opening, text, facts, heard, earlier)
            earlier.append(text)
            if reading.poor or reading.understood == 0:
                continue
            brief = "monologue" not in reading.flags
            numbers, overclaims = _claims(text)
            met["accuracy"] += numbers <= known_numbers and not overclaims
            if "?" in heard:
                met["helpfulness"] += brief and answers(heard, reading, facts)
            else:
                met["helpfulness"] += brief and bool(reading.acts & {"answer", "probe"})
            met["informativeness"] += brief and bool(reading.new_facts)
            sensitive = sounds_negative(heard.strip()) or not heard.strip()
            said = analyze(text, facts)  # what the turn says, before saturation: a judge reads each turn
            met["empathy"] += "urgency" not in said and (not sensitive or "empathy" in said)
        return _scores({name: 1.0 + 4.0 * count / len(spoken) for name, count in met.items()})

    def score_batch(self, items: Sequence[tuple[Transcript, dict[str, Any]]]) -> list[dict[str, float]]:
        return [self.score(transcript, merchant) for transcript, merchant in items]


@memoise_short_texts(maxsize=4096)
def _claims(text: str) -> tuple[frozenset[str], bool]:
    """The numbers an assistant turn states, and whether it promises or claims scarcity. Memoised, as
    :func:`sounds_negative` is: a scripted assistant repeats its lines."""
    return frozenset(_NUMBER.findall(text)), _OVERCLAIM.search(text) is not None


@memoise_short_texts(maxsize=4096)
def sounds_negative(reply: str) -> bool:
    """Whether a user reply carries one of the phrase file's negative cues. Memoised: the cue pattern is
    a long alternation (13 µs a search) and scripted users repeat their replies."""
    return re.compile(load_phrases()["negative_cues"], re.IGNORECASE).search(reply) is not None


def answers(question: str, reading: TurnReading, facts: Sequence[str]) -> bool:
    """Whether a turn read as ``reading`` answers the user's ``question``: it states the fact that
    shares most content words with the question, or, when no fact shares one, any fact or a real
    question back (asking what the user means is then the helpful move)."""
    asked = relevant_facts(question, tuple(facts))
    if not asked:
        return bool(reading.facts) or "probe" in reading.acts
    return bool(asked & reading.facts)


class LLMJudge:
    """Scores dialogues with a text-generation backend (a backend object or a JSON spec)."""

    name = "llm"

    def __init__(self, backend: Any, sampling: dict[str, Any] | None = None):
        from dialogue_gym.backends import SamplingParams, make_backend

        self.backend = make_backend(backend)
        self.sampling = SamplingParams(**{"temperature": 0.0, "max_new_tokens": 96, **(sampling or {})})

    @staticmethod
    def parse(text: str) -> dict[str, Any]:
        """The four scores from the judge's JSON answer (the first ``{...}`` of it, which may not nest
        objects); unscored (``None`` scores and an ``error``) when unreadable. Total: any ``str`` gives scores.

        ``health`` holds the answer's record (:mod:`dialogue_gym.health`) under ``"judge"``: in format
        when the answer is the rubric's JSON object alone; repaired when it was read from inside other
        text; a rule violation for a score outside the rubric's 1-5."""
        if not isinstance(text, str):
            return {**_unscored(), "error": f"judge output is a {type(text).__name__}, not text", "health": _judge_health(TurnHealth(False))}
        bounded, _ = bound_text(text)
        opening = bounded.find("{")
        closing = bounded.find("}", opening) if opening >= 0 else -1
        loaded, problem = safe_json_loads(bounded[opening : closing + 1]) if closing >= 0 else (None, "no JSON object")
        alone = opening >= 0 and not bounded[:opening].strip() and not bounded[closing + 1 :].strip()
        repaired = () if alone or not isinstance(loaded, dict) else ("JSON read from inside other text",)
        values = {}
        for name in DIMENSIONS:
            value = loaded.get(name) if isinstance(loaded, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 5:
                detail = f" ({problem})" if problem else ""
                numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
                health = TurnHealth(False, repaired, rule_violations=(f"{name} {value!r} outside the rubric's 1-5",) if numeric else ())
                return {**_unscored(), "error": f"judge output is not the rubric's JSON{detail}: {text[:120]!r}", "health": _judge_health(health)}
            values[name] = float(value)
        return {**_scores(values), "health": _judge_health(TurnHealth(not repaired, repaired))}

    def score_batch(self, items: Sequence[tuple[Transcript, dict[str, Any]]]) -> list[dict[str, float]]:
        from dialogue_gym.backends import GenerationRequest

        requests = [GenerationRequest(tuple(judge_prompt(list(t), m)), self.sampling) for t, m in items]
        outputs = self.backend.generate(requests)
        return [
            self.parse(output.text)
            if getattr(output, "error", None) is None
            else {**_unscored(), "error": output.error, "health": _judge_health(TurnHealth(False))}
            for output in outputs
        ]

    def score(self, transcript: Transcript, merchant: dict[str, Any], opening: str | None = None) -> dict[str, float]:
        """``opening`` is taken as :meth:`HeuristicJudge.score` takes it, and unused: the prompt leaves it out."""
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
