"""Transcript viewer: one self-contained HTML page from a run file.

    dialogue-gym view run.jsonl [-o run.html]
    dialogue-gym view runs/sead-cpu-lm-scratch-seed0 [--per-iteration 20] [--sample-seed 0]

reads the trajectories that ``dialogue-gym eval ... --out run.jsonl`` (or any view's
``trajectory().to_json()``) wrote, one per line, and writes a single HTML file with its CSS, script and
data inline: it opens from disk with no network, no CDN and no fonts to fetch. The page shows

- summary plots of the dialogues the filters let through (outcome counts per agent, the learner's
  reward distribution per agent) and a per-agent table, as inline SVG;
- the list of dialogues, filterable by env id, agent (``meta["agent"]``), outcome, start
  (``meta["start"]``: ``12``, ``10-20`` or ``1,5,9``), flags and text, paginated;
- one dialogue at a time, turn by turn: each role's text (the learner's on the right), the hidden
  state (SEAD: cooperation, emotion and trust) or intent level (TRACER, DM-Bench) as a small chart and
  per turn, invalid-action reasons, health flags (:mod:`dialogue_gym.health`: out of format, repaired,
  role reversal, rule violations), what the parser read, the raw output where it differs from the
  text, rewards per role and their terms, the profile and the rest of ``meta``.

Every field is optional: a record only has to be a JSON object, and what it lacks is left out of
the page (RL-ADA records no hidden state, so they get no chart). The data sit in the page as one JSON
blob whose per-dialogue part is kept as strings, parsed only when a dialogue is opened, so a run of
10,000 dialogues loads in about a second. All text is placed with ``textContent`` by the page's script;
the blob is escaped so that no ``</script>`` or markup in a dialogue can end it, and lone surrogates
(which no UTF-8 file can hold) become U+FFFD. Names from the run key maps without a prototype (an agent
called ``__proto__`` or ``constructor`` is a name like any other), bidi controls are shown as visible
marks (``⟦U+202E⟧``) rather than reordering the text, and a dialogue is drawn ``TURNS_PER_PAGE`` turns
at a time, so a 100,000-turn dialogue opens as fast as a short one.

**Training runs.** Given a trainer's run folder (``config.json`` and ``trajectories.jsonl``, whose
records carry ``iteration`` and ``episode``: :mod:`trainers.common.rundir`), the page filters by
iteration, names the agent as the trainer's policy (``trained agent: lm (scratch)``, from the run's
config and each record's learner) and keeps at most ``per_iteration`` dialogues of each iteration:
those whose ``(iteration, episode)`` hash lowest under ``sample_seed`` (:func:`sample_training_run`),
the same ones on every machine and for any order of the file; the page states both. A run of tens of
thousands of dialogues so gives a page of a bounded size. The trainer's own records (``learner_record``:
token ids and log-probabilities) are left out of the page.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from dialogue_gym.errors import ConfigError
from dialogue_gym.health import HEALTH_KEY, UNHEALTHY_KEY
from dialogue_gym.inputs import read_utf8, regular_file
from dialogue_gym.scenarios.common import json_depth_exceeds
from dialogue_gym.scenarios.sead.state import STATE_DIMS, STATE_NAMES
from dialogue_gym.scenarios.tracer.data import LEVELS as INTENT_LEVELS

PAGE_SIZE = 50
"""Dialogues per page of the list."""
TURNS_PER_PAGE = 200
"""Turns of one dialogue drawn at a time (with its chart); longer dialogues page through them."""
MAX_PARSED_CHARS = 600
"""What the parser read from a turn is shown as JSON cut to this many characters."""
MAX_RECORD_DEPTH = 100
"""Deepest nesting of arrays and objects in one record; deeper lines are refused before parsing (a
trajectory nests a few levels, and Python's JSON reader and writer recurse per level)."""
PREVIEW_CHARS = 90
"""Characters of the profile shown in the list."""
LIST_META_KEYS = ("agent", "env_id", "start", "repeat")
"""``meta`` keys shown as list columns, so left out of the dialogue's own ``meta`` block."""
PER_ITERATION = 20
"""Dialogues a training run's page keeps per iteration (``--per-iteration``)."""
SAMPLE_SEED = 0
"""The seed that picks them (``--sample-seed``)."""
TRAINER_RECORDS = ("learner_record", "user_record")
"""``meta`` entries a trainer keeps for its update (token ids, log-probabilities): not shown."""
TRAINING_HINT = "give a trainer's run folder (it holds config.json and trajectories.jsonl), e.g. runs/sead-cpu-strategy-seed0"
RUN_HINT = "give a run file written by `dialogue-gym eval ENV_ID --out RUN.jsonl` (one trajectory JSON per line)"

_BIG_INT_DIGITS = 16
"""Integers with this many digits or more are kept as strings: JavaScript numbers would round them."""
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Bidi controls, which reorder the text around them: the page shows each as a visible mark (as its script does)."""


def _bidi_mark(match: re.Match) -> str:
    return f"\u27e6U+{ord(match.group()):04X}\u27e7"
_SLOT = re.compile("%(TITLE|STYLE|SCRIPT|DATA)%")


def _parse_int(text: str) -> int | str:
    return int(text) if len(text.lstrip("-")) < _BIG_INT_DIGITS else text


def _no_constant(_: str) -> None:
    return None  # NaN / Infinity: not strict JSON, and JSON.parse refuses them; shown as absent


def _parse_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None  # 1e999 reads as infinity: absent, as above


def load_run(path: str | Path) -> list[dict[str, Any]]:
    """The records of a run file, each a dict (fields may be absent). A missing file, a folder, a line
    that is not a JSON object, or a file with none is a :class:`ConfigError` naming the file and the fix."""
    records = list(iter_run(path))
    if not records:
        raise ConfigError(f"{str(path)!r} holds no trajectories; {RUN_HINT}.")
    return records


def _deeper_than_a_record(line: str) -> bool:
    # Counting brackets (at C speed) clears nearly every line before the exact scan, which skips strings.
    return line.count("[") + line.count("{") > MAX_RECORD_DEPTH and json_depth_exceeds(line, MAX_RECORD_DEPTH)


def iter_run(path: str | Path) -> Iterator[dict[str, Any]]:
    """:func:`load_run` one record at a time (an empty file yields nothing)."""
    path = regular_file(path, f"{RUN_HINT}.")
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                if _deeper_than_a_record(line):
                    raise ConfigError(f"{str(path)!r}: line {number} nests arrays/objects deeper than {MAX_RECORD_DEPTH} levels, "
                                      f"deeper than any trajectory; {RUN_HINT}.")
                try:
                    record = json.loads(line, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_no_constant)
                except json.JSONDecodeError as exc:
                    hint = " (a results .json from `eval --save` is read by `compare`, not `view`)" if path.suffix == ".json" else ""
                    raise ConfigError(
                        f"{str(path)!r}: line {number} is not JSON ({exc.msg}, column {exc.colno}){hint}; {RUN_HINT}."
                    ) from exc
                if not isinstance(record, dict):
                    raise ConfigError(
                        f"{str(path)!r}: line {number} is a JSON {type(record).__name__}, not a trajectory object; {RUN_HINT}."
                    )
                yield record
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); {RUN_HINT}.") from exc


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float | int | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _compact(value: Any, limit: int) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def health_flags(parsed: dict[str, Any]) -> list[str]:
    """One short label per thing a turn's health record (``parsed["health"]``) flags, in the order
    :class:`~dialogue_gym.health.TurnHealth` lists them; ``[]`` for a healthy or unchecked turn."""
    record = parsed.get(HEALTH_KEY)
    if not isinstance(record, dict):
        return []
    flags = [] if record.get("format_ok", True) else ["out of format"]
    for key, label in (("repaired", "repaired"), ("role_reversal", "role reversal"), ("rule_violations", "rule")):
        items = record.get(key) or []
        if isinstance(items, list):
            flags.extend(f"{label}: {_text(item)}" for item in items)
    return flags


def _failed(parsed: dict[str, Any]) -> bool:
    record = parsed.get(HEALTH_KEY)
    if not isinstance(record, dict):
        return False
    return not record.get("format_ok", True) or bool(record.get("role_reversal")) or bool(record.get("rule_violations"))


def _numeric_vector(state: Any) -> bool:
    return isinstance(state, list) and bool(state) and all(_number(v) is not None for v in state)


def state_series(scenario: str, states: Sequence[Any]) -> list[dict[str, Any]]:
    """The hidden state per turn as chart series ``{"name", "max", "values"}`` (``None`` where a turn
    has none): SEAD's cooperation, emotion and trust, TRACER's / DM-Bench's intent level, otherwise
    ``state[k]`` on the range seen. ``[]`` when no turn records a numeric state."""
    vectors = [s if _numeric_vector(s) else None for s in states]
    width = max((len(v) for v in vectors if v is not None), default=0)
    if not width:
        return []
    if width == len(STATE_NAMES) and scenario.upper().startswith("SEAD"):
        names, tops = list(STATE_NAMES), [n - 1 for n in STATE_DIMS]
    elif width == 1:
        names, tops = ["intent level"], [INTENT_LEVELS - 1]
    else:
        names, tops = [f"state[{k}]" for k in range(width)], [None] * width
    series = []
    for k, (name, top) in enumerate(zip(names, tops)):
        values = [v[k] if v is not None and k < len(v) else None for v in vectors]
        seen = [v for v in values if v is not None]
        series.append({"name": name, "min": min([0, *seen]), "max": max([top if top is not None else 0, *seen]), "values": values})
    return series


def _profile_preview(profile: dict[str, Any]) -> str:
    parts = []
    for key, value in profile.items():
        if value is None or isinstance(value, dict):
            continue
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        parts.append(f"{key}={shown}")
    text = " ".join(parts)
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "\u2026"


def dialogue_entry(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(row, detail)`` of one record: the row holds what the list and its filters need, the detail
    what the page shows when the dialogue is opened."""
    meta = _dict(record.get("meta"))
    profile = record.get("profile")
    learner = record.get("learner") if isinstance(record.get("learner"), str) else None
    scenario = _text(record.get("scenario"))
    env_id = _text(meta.get("env_id")) or scenario
    raw_turns = record.get("turns") if isinstance(record.get("turns"), list) else []
    turns, states, invalid, unhealthy_turns = [], [], 0, 0
    for raw_turn in raw_turns:
        turn = _dict(raw_turn)
        parsed = _dict(turn.get("parsed"))
        text, raw = _text(turn.get("text")), _text(turn.get("raw"))
        shown: dict[str, Any] = {"role": _text(turn.get("role")), "text": text or raw}
        if raw and raw != shown["text"]:
            # Most raw outputs wrap the text in tags: kept as [before, after] around it, not twice.
            at = raw.find(shown["text"]) if shown["text"] else -1
            shown["raw"] = [raw[:at], raw[at + len(shown["text"]):]] if at >= 0 else raw
        state = turn.get("state")
        states.append(state)
        if turn.get("invalid") is not None:
            shown["invalid"] = _text(turn.get("invalid"))
            invalid += 1
        flags = health_flags(parsed)
        if flags:
            shown["health"] = flags
        if _failed(parsed):
            shown["failed"] = True
            unhealthy_turns += 1
        rest = {key: value for key, value in parsed.items() if key != HEALTH_KEY and value not in (None, [], {}, "")}
        if rest:
            shown["parsed"] = _compact(rest, MAX_PARSED_CHARS)
        turns.append(shown)
    series = state_series(scenario or env_id, states)
    estimates = [_dict(_dict(raw_turn).get("parsed")).get("estimate") for raw_turn in raw_turns]
    for k, one in enumerate(series):
        values = [e[k] if _numeric_vector(e) and len(e) == len(series) else None for e in estimates]
        if any(v is not None for v in values):
            one["estimate"] = values  # SEAD: the agent's own reading of the state, beside the true one
    for shown, state in zip(turns, states):
        if state is not None and not (series and _numeric_vector(state)):
            shown["state"] = state  # numeric states are read from the series, the rest shown as they are
    rewards = {key: value for key, value in _dict(record.get("rewards")).items() if _number(value) is not None}
    terms = {key: value for key, value in _dict(record.get("reward_terms")).items() if _number(value) is not None}
    if learner in rewards:
        reward = rewards[learner]
    elif len(rewards) == 1:
        reward = next(iter(rewards.values()))
    else:
        reward = None
    row = {
        "env": env_id,
        "agent": _text(meta.get("agent")) or "(none)",
        "outcome": _text(record.get("outcome")) or "(none)",
        "start": meta.get("start") if _number(meta.get("start")) is not None or isinstance(meta.get("start"), str) else None,
        "repeat": meta.get("repeat") if _number(meta.get("repeat")) is not None else None,
        "seed": record.get("seed") if _number(record.get("seed")) is not None or isinstance(record.get("seed"), str) else None,
        "iteration": _index(record.get("iteration")),
        "episode": _index(record.get("episode")),
        "learner": learner,
        "turns": len(turns),
        "learner_turns": sum(1 for shown in turns if learner is not None and shown["role"] == learner),
        "reward": reward,
        "invalid": invalid,
        "unhealthy_turns": unhealthy_turns,
        "unhealthy": UNHEALTHY_KEY in meta,
        "preview": _profile_preview(profile) if isinstance(profile, dict) else _compact(profile, PREVIEW_CHARS) if profile is not None else "",
    }
    detail = {
        "scenario": scenario,
        "profile": profile,
        "turns": turns,
        "series": series,
        "rewards": rewards,
        "terms": terms,
        "meta": {key: value for key, value in meta.items() if key not in LIST_META_KEYS},
    }
    return row, detail


def _safe_json(value: Any) -> str:
    """JSON text that can sit inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` (and
    the JavaScript line separators) are written as ``\\uXXXX`` escapes, which only strings can hold, so
    the text cannot end the script element; a lone surrogate becomes U+FFFD (U+FFFD's own escape)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escape in _ESCAPES.items():
        text = text.replace(char, escape)
    return _SURROGATE.sub("\\\\ufffd", text)


def page_data(records: Iterable[dict[str, Any]], source: str = "", training: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the page embeds: ``rows`` (one per dialogue, for the list, filters and plots), ``details``
    (each dialogue's turns as a JSON string, parsed by the page when opened), ``facets`` (the sorted
    values the filters offer), the source's name and, for a training run, ``training``: how its
    dialogues were sampled (:func:`sample_training_run`)."""
    rows, details, used = [], [], set()
    for record in records:
        row, detail = dialogue_entry(record)
        rows.append(row)
        details.append(json.dumps(detail, ensure_ascii=False, separators=(",", ":"), allow_nan=False))
        profile = detail["profile"]
        if row["env"].startswith("SEAD") and isinstance(profile, dict) and isinstance(profile.get("behaviors"), list):
            used.update(code for code in profile["behaviors"] if isinstance(code, str))
    facets: dict[str, list[Any]] = {key: sorted({row[key] for row in rows}) for key in ("env", "agent", "outcome")}
    facets["iteration"] = sorted({row["iteration"] for row in rows if row["iteration"] is not None})
    codes = behaviour_codes(used)
    return {
        "source": source, "page_size": PAGE_SIZE, "turn_page": TURNS_PER_PAGE, "rows": rows, "details": details, "facets": facets,
        "codes": codes, "training": training,
    }


# -- training runs ----------------------------------------------------------------------------------------------
def is_training_run(path: str | Path) -> bool:
    """Whether ``path`` is a trainer's run folder (a folder with ``trajectories.jsonl``) rather than a run file."""
    return Path(path).is_dir() and (Path(path) / "trajectories.jsonl").exists()


def trainer_policy(config: dict[str, Any], learner: str | None) -> str:
    """The name the page gives the policy a trainer trains in the seat ``learner``, from the run's
    config: ``trained agent: lm (scratch)`` (SEAD), ``trained user: strategy`` (TRACER), ``trained
    customer: ...`` (RL-ADA, whose two seats each have a policy)."""
    seat = learner or "learner"
    policy = config.get(f"{seat}_policy", config.get("policy"))
    model = config.get(f"{seat}_model", config.get("model"))
    name = f"trained {seat}: {_text(policy) or 'policy'}"
    return f"{name} ({_text(model)})" if policy == "lm" and model else name


def _priority(seed: int, iteration: int | None, episode: Any) -> bytes:
    return hashlib.blake2b(json.dumps([seed, iteration, _text(episode)]).encode(), digest_size=8).digest()


def sample_training_run(folder: str | Path, per_iteration: int = PER_ITERATION, sample_seed: int = SAMPLE_SEED) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The records of the run folder ``folder`` the page shows, and what says how they were chosen.

    Of each iteration's dialogues it keeps the ``per_iteration`` whose ``(sample_seed, iteration,
    episode)`` hash lowest: a uniform sample without replacement that depends on neither the file's
    order nor the machine, read in one pass holding ``per_iteration`` records per iteration. A record
    played again after a resume (the same iteration and episode) replaces the earlier one. Each kept
    record's agent is the trainer's policy (:func:`trainer_policy`) and its :data:`TRAINER_RECORDS` are
    dropped. Records are returned by iteration, then episode."""
    if isinstance(per_iteration, bool) or not isinstance(per_iteration, int) or per_iteration < 1:
        raise ConfigError(f"--per-iteration must be an integer >= 1, got {per_iteration!r}; e.g. --per-iteration {PER_ITERATION}.")
    folder = Path(folder)
    config_path = folder / "config.json"
    config: Any = {}
    if config_path.exists():
        text = read_utf8(config_path, f"{TRAINING_HINT}.")
        if _deeper_than_a_record(text):
            raise ConfigError(f"{str(config_path)!r} nests arrays/objects deeper than {MAX_RECORD_DEPTH} levels; {TRAINING_HINT}.")
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{str(config_path)!r} is not JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); {TRAINING_HINT}.") from exc
        if not isinstance(config, dict):
            raise ConfigError(f"{str(config_path)!r} holds a JSON {type(config).__name__}, not a trainer config object; {TRAINING_HINT}.")
    kept: dict[int | None, dict[str, tuple[bytes, dict[str, Any]]]] = {}
    totals: dict[int | None, set[str]] = {}
    for record in iter_run(folder / "trajectories.jsonl"):
        iteration = _index(record.get("iteration"))
        episode = json.dumps(record.get("episode"))
        totals.setdefault(iteration, set()).add(episode)
        chosen = kept.setdefault(iteration, {})
        priority = _priority(sample_seed, iteration, record.get("episode"))
        chosen[episode] = (priority, record)
        if len(chosen) > per_iteration:
            del chosen[max(chosen, key=lambda key: chosen[key][0])]
    records = []
    for iteration in sorted(kept, key=lambda value: (value is None, value or 0)):
        for _, record in sorted(kept[iteration].values(), key=lambda item: (_index(item[1].get("episode")) is None, _index(item[1].get("episode")) or 0, item[0])):
            learner = record.get("learner") if isinstance(record.get("learner"), str) else None
            meta = {key: value for key, value in _dict(record.get("meta")).items() if key not in TRAINER_RECORDS}
            records.append({**record, "meta": {**meta, "agent": trainer_policy(config, learner)}})
    iterations = [value for value in totals if value is not None]
    training = {
        "folder": folder.name, "per_iteration": per_iteration, "sample_seed": sample_seed, "iterations": len(iterations),
        "dialogues": sum(map(len, totals.values())), "shown": len(records), "preset": _text(config.get("preset")),
    }
    return records, training


def behaviour_codes(used: Iterable[str]) -> dict[str, str]:
    """The meaning of each SEAD behaviour code in ``used`` (``TS4``, ``CM2``, ... from the dialogues'
    profiles), from SEAD's behaviour library (``scenarios/sead/data/behaviors.json``), e.g.
    ``{"TS4": "Trust and Skepticism: asks for proof that the promotion works"}``; unknown codes are left out."""
    used = set(used)
    if not used:
        return {}
    from dialogue_gym.scenarios.sead.data import DEFAULT_BEHAVIORS_FILE

    library = json.loads(DEFAULT_BEHAVIORS_FILE.read_text(encoding="utf-8"))
    meaning = {item["id"]: f"{item['category'].replace('_', ' ')}: {item['description']}" for item in library["behaviors"]}
    return {code: meaning[code] for code in sorted(used) if code in meaning}


def render_html(records: Iterable[dict[str, Any]], *, source: str = "", title: str | None = None) -> str:
    """The whole page as one string."""
    return page_html(page_data(records, source), title)


def page_html(data: dict[str, Any], title: str | None = None) -> str:
    """The page that shows :func:`page_data`'s ``data``."""
    data["source"] = _SURROGATE.sub("\ufffd", data.get("source") or "")
    heading = _BIDI.sub(_bidi_mark, _SURROGATE.sub("\ufffd", title or f"dialogue-gym view: {data['source'] or 'run'}"))
    parts = {"TITLE": html.escape(heading), "STYLE": _STYLE, "SCRIPT": _SCRIPT, "DATA": _safe_json(data)}
    return _SLOT.sub(lambda match: parts[match.group(1)], _TEMPLATE)  # one pass: no part is read for slots


def default_output(run_path: str | Path) -> Path:
    """``run.jsonl`` -> ``run.html`` beside it; a training run's folder ``runs/x`` -> ``runs/x.html``."""
    path = Path(run_path)
    return path.with_name(path.name + ".html") if path.is_dir() else path.with_suffix(".html")


def write_view(run_path: str | Path, out: str | Path | None = None, per_iteration: int = PER_ITERATION, sample_seed: int = SAMPLE_SEED) -> tuple[Path, int]:
    """Read ``run_path`` (a run file, or a trainer's run folder: :func:`sample_training_run` with
    ``per_iteration`` and ``sample_seed``) and write its page to ``out`` (default: beside it, ``.html``),
    overwriting an earlier page. Returns the page's path and the number of dialogues on it."""
    training = is_training_run(run_path)
    if Path(run_path).is_dir() and not training:
        raise ConfigError(f"{str(run_path)!r} is a folder without trajectories.jsonl; {RUN_HINT}, or {TRAINING_HINT}.")
    if not training:
        regular_file(run_path, f"{RUN_HINT}.")  # a missing input is named before any problem with the output
    target = Path(out) if out is not None else default_output(run_path)
    if target.is_dir():
        raise ConfigError(f"-o {str(target)!r} is a folder; give a file path such as {str(target / 'report.html')!r}.")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ConfigError(f"-o {str(target)!r}: the folder {str(folder)!r} does not exist; create it first (mkdir -p {folder}).")
    if target.exists() and target.resolve() == Path(run_path).resolve():
        raise ConfigError(f"-o {str(target)!r} is the run file itself; give another path, e.g. {str(default_output(run_path))!r}.")
    if training:
        records, sampled = sample_training_run(run_path, per_iteration, sample_seed)
        data = page_data(records, Path(run_path).name, sampled)
    else:
        data = page_data(iter_run(run_path), Path(run_path).name)  # one record at a time: a big run is not held twice
    if not data["rows"]:
        raise ConfigError(f"{str(run_path)!r} holds no trajectories; {RUN_HINT}.")
    page = page_html(data)
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"-o {str(target)!r} cannot be written ({exc.strerror}); give a path in a folder you can write to.") from exc
    return target, len(data["rows"])


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>%TITLE%</title>
<style>%STYLE%</style>
</head>
<body>
<header><h1>%TITLE%</h1><p id="dg-counts" class="muted"></p></header>
<noscript><p>This page draws the dialogues with JavaScript; enable it to read them.</p></noscript>
<section id="dg-summary" aria-label="summary"></section>
<section id="dg-filters" aria-label="filters"></section>
<main>
<section id="dg-list-pane" aria-label="dialogues"><ol id="dg-list"></ol><nav id="dg-pager"></nav></section>
<section id="dg-detail" aria-label="dialogue"><p class="muted">Open a dialogue from the list.</p></section>
</main>
<script type="application/json" id="dg-data">%DATA%</script>
<script>%SCRIPT%</script>
</body>
</html>
"""

_STYLE = """
:root { --fg:#1d2330; --muted:#5f6b7a; --line:#d8dde5; --bg:#f6f7f9; --card:#fff; --learner:#e8f0fe; --other:#f1f3f4;
  --success:#2e7d32; --hangup:#c62828; --timeout:#ef8f00; --invalid:#6a1b9a; --backend_failure:#616161; --none:#9e9e9e; --accent:#1a56db; }
* { box-sizing:border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; color:var(--fg); background:var(--bg); }
header { padding:12px 20px 4px; } h1 { font-size:18px; margin:0; word-break:break-all; } h2 { font-size:15px; margin:0 0 6px; } h3 { font-size:13px; margin:10px 0 4px; }
.muted { color:var(--muted); } .small { font-size:12px; }
#dg-summary { padding:4px 20px; } .cards { display:flex; flex-wrap:wrap; gap:12px; margin-bottom:8px; } h2.envname { margin:8px 0 4px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:6px; padding:10px 12px; }
#dg-filters { display:flex; flex-wrap:wrap; gap:10px; align-items:end; padding:6px 20px 10px; }
#dg-filters label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); gap:2px; }
#dg-filters label.check { flex-direction:row; align-items:center; gap:4px; }
select, input[type=text], button { font:inherit; font-size:13px; padding:3px 6px; border:1px solid var(--line); border-radius:4px; background:#fff; color:var(--fg); }
input.bad { border-color:var(--hangup); background:#fdecea; }
button { cursor:pointer; } button:disabled { cursor:default; opacity:.5; }
main { display:grid; grid-template-columns:minmax(320px,420px) 1fr; gap:12px; padding:0 20px 20px; align-items:start; }
#dg-list-pane { position:sticky; top:0; }
#dg-list { list-style:none; margin:0; padding:0; background:var(--card); border:1px solid var(--line); border-radius:6px; max-height:78vh; overflow:auto; }
#dg-list li { padding:6px 10px; border-bottom:1px solid var(--line); cursor:pointer; }
#dg-list li:hover, #dg-list li:focus { background:#f0f4ff; outline:none; } #dg-list li.open { background:var(--learner); }
.rowtop { display:flex; gap:6px; align-items:center; flex-wrap:wrap; } .preview { font-size:12px; color:var(--muted); white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
#dg-pager { display:flex; gap:8px; align-items:center; padding:6px 0; font-size:12px; }
.badge { display:inline-block; padding:0 6px; border-radius:9px; font-size:11px; color:#fff; background:var(--none); white-space:nowrap; }
.flag { display:inline-block; padding:0 6px; border-radius:4px; font-size:11px; background:#fff3e0; color:#8a4b00; border:1px solid #f3c58a; margin:1px 2px 1px 0; }
.flag.bad { background:#fdecea; color:#8e1b1b; border-color:#f1a9a9; }
.chip { display:inline-block; padding:0 5px; border-radius:4px; font-size:11px; background:#eef1f5; color:#333; margin-right:3px; font-variant-numeric:tabular-nums; }
#dg-detail { background:var(--card); border:1px solid var(--line); border-radius:6px; padding:12px 16px; min-height:200px; }
.turn { display:flex; margin:6px 0; } .turn.learner { justify-content:flex-end; }
.bubble { max-width:78%; border-radius:8px; padding:6px 10px; background:var(--other); border:1px solid var(--line); }
.turn.learner .bubble { background:var(--learner); border-color:#c3d4f7; } .turn.failed .bubble { border-color:var(--hangup); }
.who { font-size:11px; color:var(--muted); margin-bottom:2px; } .text { white-space:pre-wrap; overflow-wrap:anywhere; }
.parsed, pre { font:11px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; color:var(--muted); white-space:pre-wrap; overflow-wrap:anywhere; margin:3px 0 0; }
details summary { cursor:pointer; font-size:12px; color:var(--muted); }
table { border-collapse:collapse; font-size:12px; } td, th { padding:2px 8px; border-bottom:1px solid var(--line); text-align:left; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
svg text { font:10px system-ui,sans-serif; fill:#444; } svg text.tick { fill:#7a8594; } .chips-label { font-size:11px; color:var(--muted); margin-right:4px; } .legend span { margin-right:10px; font-size:12px; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:3px; vertical-align:-1px; }
@media (max-width:900px) { main { grid-template-columns:1fr; } }
"""

_SCRIPT = r"""
(function () {
"use strict";
var DATA = JSON.parse(document.getElementById("dg-data").textContent);
var CODES = dict(DATA.codes);  // SEAD behaviour code -> "Category: description", for the legend
var ROWS = DATA.rows, DETAILS = DATA.details, PAGE = DATA.page_size || 50, TURN_PAGE = DATA.turn_page || 200;
var SVGNS = "http://www.w3.org/2000/svg";
// Names from the run (agents, env ids, outcomes) key these maps: no prototype, so "__proto__" or "constructor" is a name like any other.
function dict(from) { var d = Object.create(null); for (var key in (from || {})) d[key] = from[key]; return d; }
var OUTCOME_COLORS = dict({success: "#2e7d32", hangup: "#c62828", timeout: "#ef8f00", invalid: "#6a1b9a", backend_failure: "#616161"});
var SERIES_COLORS = ["#1a56db", "#d9480f", "#2b8a3e", "#862e9c", "#0b7285"];
var cache = dict(), lowered = null, shown = [], page = 0, openIndex = -1, turnPage = 0;
var filters = {env: "", agent: "", outcome: "", start: null, iteration: null, flagged: false, text: ""};
// Bidi controls would reorder the text around them: each is shown as a visible mark instead.
var BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
function visible(text) { return String(text).replace(BIDI, function (c) { return "\u27e6U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e7"; }); }

function el(tag, attrs, kids) {
  var node = document.createElement(tag);
  for (var key in (attrs || {})) {
    if (key === "text") node.textContent = visible(attrs[key]);
    else if (key === "cls") node.className = attrs[key];
    else node.setAttribute(key, attrs[key]);
  }
  (kids || []).forEach(function (kid) { if (kid !== null && kid !== undefined) node.appendChild(typeof kid === "string" ? document.createTextNode(visible(kid)) : kid); });
  return node;
}
function sv(tag, attrs, text) {
  var node = document.createElementNS(SVGNS, tag);
  for (var key in (attrs || {})) node.setAttribute(key, attrs[key]);
  if (text !== undefined) node.textContent = visible(text);
  return node;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
function fmt(x) { return x === null || x === undefined ? "" : (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(3)) : String(x)); }
function color(outcome) { return OUTCOME_COLORS[outcome] || "#9e9e9e"; }
function badge(outcome) { var b = el("span", {cls: "badge", text: outcome}); b.style.background = color(outcome); return b; }
function detail(i) { if (!(i in cache)) cache[i] = JSON.parse(DETAILS[i]); return cache[i]; }

function parseStarts(text) {
  text = text.trim();
  if (!text) return null;
  var parts = text.split(","), tests = [];
  for (var k = 0; k < parts.length; k++) {
    var m = /^\s*(-?\d+)\s*(?:(?:-|\.\.)\s*(-?\d+)\s*)?$/.exec(parts[k]);
    if (!m) return undefined;
    tests.push([Number(m[1]), m[2] === undefined ? Number(m[1]) : Number(m[2])]);
  }
  return function (start) {
    if (start === null || start === undefined) return false;
    var s = Number(start);
    return tests.some(function (t) { return s >= t[0] && s <= t[1]; });
  };
}

function passes(i) {
  var r = ROWS[i];
  if (filters.env && r.env !== filters.env) return false;
  if (filters.agent && r.agent !== filters.agent) return false;
  if (filters.outcome && r.outcome !== filters.outcome) return false;
  if (filters.start && !filters.start(r.start)) return false;
  if (filters.iteration && !filters.iteration(r.iteration)) return false;
  if (filters.flagged && !(r.invalid || r.unhealthy_turns || r.unhealthy)) return false;
  if (filters.text) {
    if (!lowered) lowered = DETAILS.map(function (d) { return d.replace(/"[a-z_]+":/g, " ").toLowerCase(); });  // values, not key names
    if (lowered[i].indexOf(filters.text) < 0) return false;
  }
  return true;
}

function apply() {
  shown = [];
  for (var i = 0; i < ROWS.length; i++) if (passes(i)) shown.push(i);
  page = 0;
  renderList();
  renderSummary();
}

function select(name, label, values) {
  var s = el("select", {id: "dg-filter-" + name, "aria-label": label}, [el("option", {value: "", text: "all (" + values.length + ")"})]);
  values.forEach(function (v) { s.appendChild(el("option", {value: v, text: v})); });
  s.addEventListener("change", function () { filters[name] = s.value; apply(); });
  return el("label", {}, [label, s]);
}

function rangeInput(name, label, placeholder) {
  // "12", "10-20" or "1,5,9"; a text that is none of these marks the box and keeps the last filter
  var input = el("input", {type: "text", id: "dg-filter-" + name, placeholder: placeholder, size: "14", "aria-label": label});
  input.addEventListener("input", function () {
    var test = parseStarts(input.value);
    input.classList.toggle("bad", test === undefined);
    if (test === undefined) return;
    filters[name] = test; apply();
  });
  return el("label", {}, [label, input]);
}

function buildFilters() {
  var box = document.getElementById("dg-filters"), f = DATA.facets;
  if (f.iteration && f.iteration.length) {
    var its = f.iteration;
    box.appendChild(rangeInput("iteration", "iteration", its[0] + "-" + its[its.length - 1] + ", e.g. " + its[its.length - 1]));
  }
  if (f.env.length > 1) box.appendChild(select("env", "env id", f.env));
  box.appendChild(select("agent", "agent", f.agent));
  box.appendChild(select("outcome", "outcome", f.outcome));
  box.appendChild(rangeInput("start", "start", "e.g. 12, 10-20, 1,5"));
  var text = el("input", {type: "text", id: "dg-filter-text", placeholder: "words in the dialogue", size: "18", "aria-label": "text"});
  var timer = null;
  text.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { filters.text = text.value.trim().toLowerCase(); apply(); }, 200);
  });
  box.appendChild(el("label", {}, ["text contains", text]));
  var flagged = el("input", {type: "checkbox", id: "dg-filter-flagged"});
  flagged.addEventListener("change", function () { filters.flagged = flagged.checked; apply(); });
  box.appendChild(el("label", {cls: "check"}, [flagged, "only flagged (invalid action or health)"]));
}

function renderList() {
  var list = clear(document.getElementById("dg-list")), pager = clear(document.getElementById("dg-pager"));
  var pages = Math.max(1, Math.ceil(shown.length / PAGE));
  page = Math.min(page, pages - 1);
  var first = page * PAGE, last = Math.min(shown.length, first + PAGE);
  for (var k = first; k < last; k++) list.appendChild(rowItem(shown[k]));
  if (!shown.length) list.appendChild(el("li", {cls: "muted", text: "No dialogue matches the filters."}));
  var prev = el("button", {type: "button", id: "dg-prev", text: "\u2190 previous"}), next = el("button", {type: "button", id: "dg-next", text: "next \u2192"});
  prev.disabled = page === 0; next.disabled = page >= pages - 1;
  prev.addEventListener("click", function () { page--; renderList(); list.scrollTop = 0; });
  next.addEventListener("click", function () { page++; renderList(); list.scrollTop = 0; });
  pager.appendChild(prev);
  pager.appendChild(el("span", {id: "dg-range", text: shown.length ? (first + 1) + "\u2013" + last + " of " + shown.length : "0 of " + ROWS.length}));
  pager.appendChild(next);
  document.getElementById("dg-counts").textContent = visible(shown.length + " of " + ROWS.length + " dialogues shown" + (DATA.source ? " \u00b7 " + DATA.source : ""));
}

function rowItem(i) {
  var r = ROWS[i];
  var top = el("div", {cls: "rowtop"}, [el("strong", {text: "#" + i}), badge(r.outcome), el("span", {text: r.agent}),
    el("span", {cls: "muted small", text: (r.iteration !== null && r.iteration !== undefined ? "iteration " + r.iteration + " \u00b7 " : "") + "start " + fmt(r.start) + (r.repeat ? " r" + r.repeat : "") + " \u00b7 " + turnCount(r) + (r.reward !== null ? " \u00b7 R " + fmt(r.reward) : "")})]);
  if (r.invalid) top.appendChild(el("span", {cls: "flag bad", text: r.invalid + " invalid"}));
  if (r.unhealthy_turns) top.appendChild(el("span", {cls: "flag", text: r.unhealthy_turns + " health"}));
  if (r.unhealthy) top.appendChild(el("span", {cls: "flag bad", text: "unhealthy"}));
  var item = el("li", {tabindex: "0", role: "button", "data-index": String(i)}, [top, el("div", {cls: "preview", text: (ROWS.length && DATA.facets.env.length > 1 ? r.env + " \u00b7 " : "") + r.preview})]);
  if (i === openIndex) item.classList.add("open");
  item.addEventListener("click", function () { open(i); });
  item.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(i); } });
  return item;
}

function turnCount(r) {
  // Both sides' turns, and the learner's own (what max_agent_turns and ATT count).
  return r.turns + " turns" + (r.learner && typeof r.learner_turns === "number" ? " (" + r.learner_turns + " by the " + r.learner + ")" : "");
}

function chart(series, turns, offset) {
  var n = turns.length, rowH = 34, left = 96, step = Math.max(14, Math.min(36, 560 / Math.max(n, 1)));
  var width = left + step * Math.max(n, 1) + 12, height = rowH * series.length + 26;
  var g = sv("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "hidden state per turn", "class": "state-chart"});
  series.forEach(function (s, k) {
    var y0 = k * rowH + 4, h = rowH - 10, span = (s.max - s.min) || 1, c = SERIES_COLORS[k % SERIES_COLORS.length];
    g.appendChild(sv("text", {x: 0, y: y0 + h / 2 + 3}, s.name));
    laneTicks(s).forEach(function (v, j, all) {
      // a faint line at each value; its number at the lane's left edge for the lowest and highest
      var y = y0 + h - (v - s.min) / span * h;
      g.appendChild(sv("line", {x1: left, y1: y.toFixed(1), x2: width - 6, y2: y.toFixed(1), stroke: j ? "#eef1f5" : "#d8dde5"}));
      if (j === 0 || j === all.length - 1) g.appendChild(sv("text", {x: left - 4, y: (y + 3).toFixed(1), "text-anchor": "end", "class": "tick"}, fmt(v)));
    });
    var path = "", pen = false;
    s.values.slice(offset, offset + n).forEach(function (v, t) {
      if (v === null || v === undefined) { pen = false; return; }
      var x = left + step * t + step / 2, y = y0 + h - (v - s.min) / span * h;
      path += (pen ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1);
      pen = true;
      var dot = sv("circle", {cx: x.toFixed(1), cy: y.toFixed(1), r: 2.6, fill: c});
      dot.appendChild(sv("title", {}, "turn " + (offset + t + 1) + ": " + s.name + " " + v));
      g.appendChild(dot);
    });
    g.insertBefore(sv("path", {d: path, fill: "none", stroke: c, "stroke-width": 1.6}), g.firstChild);
    (s.estimate || []).slice(offset, offset + n).forEach(function (v, t) {
      if (v === null || v === undefined) return;
      var x = left + step * t + step / 2, y = y0 + h - (Math.min(Math.max(v, s.min), s.max) - s.min) / span * h;
      var mark = sv("circle", {cx: x.toFixed(1), cy: y.toFixed(1), r: 3.2, fill: "none", stroke: c, "stroke-dasharray": "2 1.5", "class": "estimate"});
      mark.appendChild(sv("title", {}, "turn " + (offset + t + 1) + ": estimated " + s.name + " " + v));
      g.appendChild(mark);
    });
  });
  turns.forEach(function (t, i) {
    var x = left + step * i + step / 2;
    if (t.invalid || t.failed) g.appendChild(sv("rect", {x: x - 3, y: height - 23, width: 6, height: 6, fill: t.invalid ? "#6a1b9a" : "#c62828"}));
    if (n <= 40 || (offset + i) % 5 === 4) g.appendChild(sv("text", {x: x, y: height - 2, "text-anchor": "middle"}, String(offset + i + 1)));
  });
  return g;
}

function laneTicks(s) {
  // every value of a small integer scale (SEAD's 0-4, TRACER's intent levels), else its ends and middle
  if (Number.isInteger(s.min) && Number.isInteger(s.max) && s.max - s.min <= 8) {
    var all = []; for (var v = s.min; v <= s.max; v++) all.push(v); return all;
  }
  return [s.min, (s.min + s.max) / 2, s.max];
}

function kvTable(obj, head) {
  var keys = Object.keys(obj);
  if (!keys.length) return null;
  var t = el("table", {}, [el("tr", {}, [el("th", {text: head[0]}), el("th", {cls: "num", text: head[1]})])]);
  keys.forEach(function (k) { t.appendChild(el("tr", {}, [el("td", {text: k}), el("td", {cls: "num", text: fmt(obj[k])})])); });
  return t;
}

function open(i, part) {
  if (i !== openIndex) turnPage = 0;
  if (part !== undefined) turnPage = part;
  openIndex = i;
  var r = ROWS[i], d = detail(i), box = clear(document.getElementById("dg-detail"));
  var parts = Math.max(1, Math.ceil(d.turns.length / TURN_PAGE)), first = turnPage * TURN_PAGE, part = d.turns.slice(first, first + TURN_PAGE);
  Array.prototype.forEach.call(document.querySelectorAll("#dg-list li"), function (li) { li.classList.toggle("open", li.getAttribute("data-index") === String(i)); });
  box.appendChild(el("h2", {}, ["Dialogue #" + i + " ", badge(r.outcome)]));
  var place = r.iteration !== null && r.iteration !== undefined ? ["iteration " + r.iteration, "episode " + fmt(r.episode)] : [];
  box.appendChild(el("p", {cls: "muted small", text: place.concat([r.env, "agent " + r.agent, "learner " + (r.learner || "?"), "start " + fmt(r.start),
    "repeat " + fmt(r.repeat), "seed " + fmt(r.seed), turnCount(r)]).join(" \u00b7 ")}));
  if (d.series.length) {
    box.appendChild(el("h3", {text: d.series.length > 1 ? "Hidden state per turn" : "Intent level per turn"}));
    box.appendChild(chart(d.series, part, first));
    var hasEstimate = d.series.some(function (s) { return s.estimate; });
    box.appendChild(el("p", {cls: "muted small", text: "Dots: the hidden state after each turn" + (hasEstimate ? "; rings: the learner's estimate of it" : "") +
      ". Numbers at a lane's left: its lowest and highest value. Squares under a turn: invalid action (purple), failed health check (red). Hover a point for its value."}));
  }
  var rewards = kvTable(d.rewards, ["role", "reward"]), terms = kvTable(d.terms, ["term", "value"]);
  if (rewards || terms) {
    box.appendChild(el("h3", {text: "Rewards"}));
    var wrap = el("div", {cls: "rewards"}, [rewards, terms]);
    wrap.style.display = "flex"; wrap.style.gap = "24px"; wrap.style.alignItems = "flex-start";
    box.appendChild(wrap);
  }
  var shownCodes = d.profile && Array.isArray(d.profile.behaviors) ? d.profile.behaviors.filter(function (c) { return typeof c === "string" && c in CODES; }) : [];
  if (shownCodes.length) {
    var codeList = el("ul", {cls: "codes small"});
    shownCodes.forEach(function (c) { codeList.appendChild(el("li", {}, [el("code", {text: c}), " " + CODES[c]])); });
    box.appendChild(el("div", {}, [el("h3", {text: "Counterpart's behaviours"}), codeList]));
  }
  if (d.profile !== null && d.profile !== undefined) box.appendChild(el("details", {}, [el("summary", {text: "profile"}), el("pre", {text: JSON.stringify(d.profile, null, 2)})]));
  box.appendChild(el("h3", {text: "Turns"}));
  if (!d.turns.length) box.appendChild(el("p", {cls: "muted", text: "No turns recorded."}));
  var pager = parts > 1 ? turnPager(i, parts, first, first + part.length, d.turns.length) : null;
  if (pager) box.appendChild(pager);
  part.forEach(function (t, k) { box.appendChild(turnItem(t, first + k, r.learner, d.series)); });
  if (pager) box.appendChild(turnPager(i, parts, first, first + part.length, d.turns.length));
  if (Object.keys(d.meta).length) box.appendChild(el("details", {}, [el("summary", {text: "meta (judge verdict, reference, alignment, ...)"}), el("pre", {text: JSON.stringify(d.meta, null, 2)})]));
  if (history.replaceState) history.replaceState(null, "", "#d" + i);
}

function turnPager(i, parts, first, last, total) {
  // Long dialogues are drawn TURN_PAGE turns at a time: a 100,000-turn dialogue opens as fast as a short one.
  var prev = el("button", {type: "button", cls: "dg-turn-prev", text: "\u2190 earlier turns"}), next = el("button", {type: "button", cls: "dg-turn-next", text: "later turns \u2192"});
  prev.disabled = turnPage === 0; next.disabled = turnPage >= parts - 1;
  prev.addEventListener("click", function () { open(i, turnPage - 1); });
  next.addEventListener("click", function () { open(i, turnPage + 1); });
  return el("nav", {cls: "turn-pager"}, [prev, el("span", {cls: "dg-turn-range", text: "turns " + (first + 1) + "\u2013" + last + " of " + total}), next]);
}

function turnItem(t, k, learner, series) {
  var isLearner = learner !== null && t.role === learner;
  var who = el("div", {cls: "who"}, [(k + 1) + " \u00b7 " + t.role + (isLearner ? " (learner)" : "")]);
  var bubble = el("div", {cls: "bubble"}, [who, el("div", {cls: "text", text: t.text})]);
  var chips = el("div", {});
  series.forEach(function (s) { var v = s.values[k]; if (v !== null && v !== undefined) chips.appendChild(el("span", {cls: "chip", text: s.name + " " + fmt(v)})); });
  if (t.state !== undefined) chips.appendChild(el("span", {cls: "chip", text: "state " + JSON.stringify(t.state)}));
  if (chips.firstChild) {
    // The chips are the game's true hidden state after this turn, never the learner's own reading of it.
    var label = isLearner ? "counterpart's true state (not the learner's estimate):" : "true state:";
    chips.insertBefore(el("span", {cls: "chips-label", title: "The hidden state the game held after this turn; the learner's estimate, when it gives one, is in 'parsed' and drawn as rings in the chart.", text: label}), chips.firstChild);
    bubble.appendChild(chips);
  }
  if (t.invalid) bubble.appendChild(el("div", {}, [el("span", {cls: "flag bad", text: "invalid: " + t.invalid})]));
  if (t.health) { var h = el("div", {}); t.health.forEach(function (f) { h.appendChild(el("span", {cls: "flag" + (/^repaired/.test(f) ? "" : " bad"), text: f})); }); bubble.appendChild(h); }
  if (t.parsed && t.parsed.length <= 140) bubble.appendChild(el("div", {cls: "parsed", text: "parsed " + t.parsed}));
  else if (t.parsed) bubble.appendChild(el("details", {}, [el("summary", {text: "parsed"}), el("pre", {text: t.parsed})]));
  if (t.raw !== undefined) {
    var raw = Array.isArray(t.raw) ? t.raw[0] + t.text + t.raw[1] : t.raw;
    bubble.appendChild(el("details", {}, [el("summary", {text: "raw output"}), el("pre", {cls: "raw", text: raw})]));
  }
  return el("div", {cls: "turn" + (isLearner ? " learner" : "") + (t.failed || t.invalid ? " failed" : "")}, [bubble]);
}

function renderSummary() {
  var box = clear(document.getElementById("dg-summary")), envs = dict();
  shown.forEach(function (i) {
    var r = ROWS[i], e = envs[r.env] || (envs[r.env] = {agents: dict(), outcomes: dict(), iterations: dict()});
    if (r.iteration !== null && r.iteration !== undefined) {
      var it = e.iterations[r.iteration] || (e.iterations[r.iteration] = {n: 0, success: 0, rewards: []});
      it.n++; it.success += r.outcome === "success" ? 1 : 0;
      if (typeof r.reward === "number") it.rewards.push(r.reward);
    }
    var a = e.agents[r.agent] || (e.agents[r.agent] = {n: 0, out: dict(), rewards: [], invalid: 0, unhealthy: 0});
    a.n++; a.out[r.outcome] = (a.out[r.outcome] || 0) + 1; e.outcomes[r.outcome] = true;
    if (typeof r.reward === "number") a.rewards.push(r.reward);
    a.invalid += r.invalid ? 1 : 0; a.unhealthy += (r.unhealthy || r.unhealthy_turns) ? 1 : 0;
  });
  var names = Object.keys(envs).sort();
  if (!names.length) box.appendChild(el("p", {cls: "muted", text: "No dialogue matches the filters."}));
  names.forEach(function (env) {
    var e = envs[env], order = Object.keys(e.agents).sort(), outs = Object.keys(e.outcomes).sort(), agents = e.agents;
    var group = el("div", {cls: "envsummary"});
    if (DATA.facets.env.length > 1) group.appendChild(el("h2", {cls: "envname", text: env}));
    var cards = el("div", {cls: "cards"});
    cards.appendChild(el("div", {cls: "card outcomes"}, [el("h3", {text: "Outcomes per agent"}), outcomeChart(order, agents, outs), legend(outs)]));
    cards.appendChild(el("div", {cls: "card rewards"}, [el("h3", {text: "Learner reward per agent"}), rewardChart(order, agents)]));
    if (Object.keys(e.iterations).length) cards.appendChild(el("div", {cls: "card iterations"}, [el("h3", {text: "Per iteration"}), iterationChart(e.iterations),
      el("p", {cls: "muted small", text: "Of the dialogues the filters show" + (DATA.training ? " (the page's sample)" : "") + ": success rate (green, 0 to 1) and mean learner reward (blue, its own scale on the right)."})]));
    var t = el("table", {}, [el("tr", {}, [el("th", {text: "agent"}), el("th", {cls: "num", text: "dialogues"}), el("th", {cls: "num", text: "success"}),
      el("th", {cls: "num", text: "mean reward"}), el("th", {cls: "num", text: "with invalid"}), el("th", {cls: "num", text: "health flags"})])]);
    order.forEach(function (name) {
      var a = agents[name], mean = a.rewards.length ? a.rewards.reduce(function (x, y) { return x + y; }, 0) / a.rewards.length : null;
      t.appendChild(el("tr", {}, [el("td", {text: name}), el("td", {cls: "num", text: String(a.n)}), el("td", {cls: "num", text: ((a.out.success || 0) / a.n * 100).toFixed(1) + "%"}),
        el("td", {cls: "num", text: mean === null ? "" : mean.toFixed(3)}), el("td", {cls: "num", text: String(a.invalid)}), el("td", {cls: "num", text: String(a.unhealthy)})]));
    });
    cards.appendChild(el("div", {cls: "card"}, [el("h3", {text: "Agents"}), t,
      el("p", {cls: "muted small", text: "Of the dialogues the filters show. Columns count dialogues."})]));
    var codes = Object.keys(CODES).sort();
    if (codes.length && env.indexOf("SEAD") === 0) {
      var legendList = el("dl", {cls: "codes small"});
      codes.forEach(function (c) { legendList.appendChild(el("dt", {}, [el("code", {text: c})])); legendList.appendChild(el("dd", {text: CODES[c]})); });
      cards.appendChild(el("details", {cls: "card codes-legend"}, [el("summary", {text: "Behaviour codes (" + codes.length + ")"}), legendList,
        el("p", {cls: "muted small", text: "The owner's behaviours in the profiles (TS4, CM2, ...), from SEAD's behaviour library."})]));
    }
    group.appendChild(cards);
    box.appendChild(group);
  });
}

function iterationChart(iterations) {
  var its = Object.keys(iterations).map(Number).sort(function (a, b) { return a - b; });
  var left = 40, plotW = 300, h = 90, width = left + plotW + 40, height = h + 30, lo = its[0], hi = its[its.length - 1];
  var g = sv("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "success rate and mean reward per iteration", "class": "iteration-chart"});
  var means = its.map(function (k) { var rs = iterations[k].rewards; return rs.length ? rs.reduce(function (x, y) { return x + y; }, 0) / rs.length : null; });
  var known = means.filter(function (v) { return v !== null; }), rlo = known.length ? Math.min.apply(null, known) : 0, rhi = known.length ? Math.max.apply(null, known) : 1;
  if (rhi === rlo) { rlo -= 0.5; rhi += 0.5; }
  function x(k) { return left + (hi === lo ? plotW / 2 : (k - lo) / (hi - lo) * plotW); }
  function line(values, top, bottom, c, label) {
    var path = "", pen = false;
    values.forEach(function (v, j) {
      if (v === null) { pen = false; return; }
      var y = 4 + h - (v - bottom) / (top - bottom) * h;
      path += (pen ? "L" : "M") + x(its[j]).toFixed(1) + " " + y.toFixed(1); pen = true;
      var dot = sv("circle", {cx: x(its[j]).toFixed(1), cy: y.toFixed(1), r: 2.2, fill: c});
      dot.appendChild(sv("title", {}, "iteration " + its[j] + ": " + label + " " + fmt(v) + " (" + iterations[its[j]].n + " dialogues)"));
      g.appendChild(dot);
    });
    g.insertBefore(sv("path", {d: path, fill: "none", stroke: c, "stroke-width": 1.4}), g.firstChild);
  }
  g.appendChild(sv("line", {x1: left, y1: h + 4, x2: left + plotW, y2: h + 4, stroke: "#9aa4b1"}));
  line(its.map(function (k) { return iterations[k].success / iterations[k].n; }), 1, 0, "#2e7d32", "success rate");
  line(means, rhi, rlo, "#1a56db", "mean reward");
  g.appendChild(sv("text", {x: left - 4, y: 10, "text-anchor": "end", "class": "tick"}, "1"));
  g.appendChild(sv("text", {x: left - 4, y: h + 6, "text-anchor": "end", "class": "tick"}, "0"));
  g.appendChild(sv("text", {x: left + plotW + 4, y: 10, "class": "tick"}, rhi.toFixed(2)));
  g.appendChild(sv("text", {x: left + plotW + 4, y: h + 6, "class": "tick"}, rlo.toFixed(2)));
  g.appendChild(sv("text", {x: left, y: h + 18, "class": "tick"}, String(lo)));
  g.appendChild(sv("text", {x: left + plotW, y: h + 18, "text-anchor": "end", "class": "tick"}, String(hi)));
  g.appendChild(sv("text", {x: left + plotW / 2, y: h + 28, "text-anchor": "middle"}, "iteration"));
  return g;
}

function legend(outs) {
  var l = el("div", {cls: "legend"});
  outs.forEach(function (o) { var s = el("span", {cls: "swatch"}); s.style.background = color(o); l.appendChild(el("span", {}, [s, o])); });
  return l;
}

function outcomeChart(order, agents, outs) {
  var left = 100, barW = 260, rowH = 20, width = left + barW + 50, height = Math.max(1, order.length) * rowH + 4;
  var g = sv("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "outcome counts per agent"});
  order.forEach(function (name, k) {
    var a = agents[name], x = left, y = k * rowH + 2;
    g.appendChild(sv("text", {x: left - 6, y: y + 12, "text-anchor": "end"}, name.length > 16 ? name.slice(0, 15) + "\u2026" : name));
    outs.forEach(function (o) {
      var count = a.out[o] || 0; if (!count) return;
      var w = count / a.n * barW, r = sv("rect", {x: x.toFixed(1), y: y, width: Math.max(w, 0.5).toFixed(1), height: rowH - 5, fill: color(o)});
      r.appendChild(sv("title", {}, name + ": " + o + " " + count + " of " + a.n));
      g.appendChild(r); x += w;
    });
    g.appendChild(sv("text", {x: left + barW + 4, y: y + 12}, String(a.n)));
  });
  return g;
}

function rewardChart(order, agents) {
  var all = [];
  order.forEach(function (name) { all = all.concat(agents[name].rewards); });
  if (!all.length) return el("p", {cls: "muted small", text: "No learner rewards recorded."});
  var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all), bins = 20;
  if (hi === lo) { lo -= 0.5; hi += 0.5; }
  var left = 100, plotW = 240, rowH = 30, width = left + plotW + 44, height = order.length * rowH + 40;
  var g = sv("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "reward distribution per agent"});
  order.forEach(function (name, k) {
    var counts = new Array(bins).fill(0), rs = agents[name].rewards, y0 = k * rowH + 2, h = rowH - 6;
    rs.forEach(function (v) { counts[Math.min(bins - 1, Math.floor((v - lo) / (hi - lo) * bins))]++; });
    var peak = Math.max.apply(null, counts) || 1;
    g.appendChild(sv("text", {x: left - 6, y: y0 + h / 2 + 4, "text-anchor": "end"}, name.length > 16 ? name.slice(0, 15) + "\u2026" : name));
    counts.forEach(function (c, b) {
      if (!c) return;
      var bh = c / peak * h, r = sv("rect", {x: (left + b * plotW / bins).toFixed(1), y: (y0 + h - bh).toFixed(1), width: (plotW / bins - 1).toFixed(1), height: bh.toFixed(1), fill: "#1a56db"});
      r.appendChild(sv("title", {}, name + ": " + c + " dialogues with reward in [" + (lo + b * (hi - lo) / bins).toFixed(3) + ", " + (lo + (b + 1) * (hi - lo) / bins).toFixed(3) + ")"));
      g.appendChild(r);
    });
    g.appendChild(sv("line", {x1: left, y1: y0 + h, x2: left + plotW, y2: y0 + h, stroke: "#d8dde5"}));
    // the count scale of this agent's row: its tallest bar's count at the top, 0 at the base, n dialogues
    g.appendChild(sv("line", {x1: left + plotW + 2, y1: y0, x2: left + plotW + 2, y2: y0 + h, stroke: "#d8dde5"}));
    g.appendChild(sv("text", {x: left + plotW + 5, y: y0 + 8, "class": "tick"}, String(peak)));
    g.appendChild(sv("text", {x: left + plotW + 5, y: y0 + h, "class": "tick"}, "0"));
    g.appendChild(sv("title", {}, name + ": " + rs.length + " dialogues; tallest bar " + peak));
  });
  var axisY = order.length * rowH + 2;
  g.appendChild(sv("line", {x1: left, y1: axisY, x2: left + plotW, y2: axisY, stroke: "#9aa4b1"}));
  [0, 1, 2, 3, 4].forEach(function (j) {
    var x = left + j * plotW / 4, v = lo + j * (hi - lo) / 4;
    g.appendChild(sv("line", {x1: x.toFixed(1), y1: axisY, x2: x.toFixed(1), y2: axisY + 4, stroke: "#9aa4b1"}));
    g.appendChild(sv("text", {x: x.toFixed(1), y: axisY + 14, "text-anchor": j === 0 ? "start" : j === 4 ? "end" : "middle", "class": "tick"}, Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2)));
  });
  g.appendChild(sv("text", {x: left + plotW / 2, y: height - 2, "text-anchor": "middle"}, "learner reward (bar height: dialogues)"));
  return g;
}

function trainingNote() {
  // A training run's page holds a sample: say which, so no reader takes it for every dialogue.
  var t = DATA.training;
  if (!t) return;
  var note = "Training run " + t.folder + (t.preset ? " (preset " + t.preset + ")" : "") + ": " + t.shown + " of its " + t.dialogues +
    " dialogues over " + t.iterations + " iterations, at most " + t.per_iteration + " per iteration, sampled with seed " + t.sample_seed +
    " (the same dialogues on every machine; dialogue-gym view FOLDER --per-iteration N --sample-seed S picks others). The agent is the policy the trainer trains.";
  document.querySelector("header").appendChild(el("p", {id: "dg-training", cls: "muted small", text: note}));
}

trainingNote();
buildFilters();
apply();
var m = /^#d(\d+)$/.exec(location.hash);
if (m && Number(m[1]) < ROWS.length) open(Number(m[1]));
document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));  // since navigation started
document.body.setAttribute("data-ready", "1");
})();
"""
