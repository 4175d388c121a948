"""Every regular expression that reads model or user text stays linear on hostile input.

The patterns come from three places: every string of every scenario data file that is written as a
pattern, the pattern literals passed to ``re`` in the package's source, and the compiled patterns the
package's modules keep. Each is run over text built to make a backtracking engine retry (long runs
without spaces, repeated '@' and '.', digit runs, distinct amounts) as long as the most a parser
reads of one action (``MAX_ACTION_CHARS``). A quadratic pattern takes seconds there (the old email
pattern ``\\S+@\\S+\\.\\w+``: about 3 s on 20,000 characters without spaces); a linear one takes
about a millisecond, so the bounds below are generous and do not flake.

Then every id and role steps a 1 MB and a 10 MB action, and every counterpart played by a model that
answers a megabyte (measured: every step under 10 ms, 30 ms with a model-played SEAD owner; the bounds
below are seconds).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import pkgutil
import re
import time
from pathlib import Path

import gymnasium as gym
import pytest

import dialogue_gym
from dialogue_gym.scenarios.common import MAX_ACTION_CHARS
from envs_registry import REGISTRY

PACKAGE = Path(dialogue_gym.__file__).parent
PATTERN_SIGNS = ("\\", "|", "(", "[", "{")
RE_FUNCTIONS = {"compile", "search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}
PATTERN_SECONDS = 0.25
"""The most one pattern may take over one hostile text (linear ones: about 1 ms; the old email pattern: 3 s)."""
STEP_SECONDS = 2.0
"""The most one step of a 1 MB or 10 MB action may take (measured: under 10 ms)."""


def _hostile_texts(n: int) -> dict[str, str]:
    amounts = "".join(f"${1000 + i:,}.{i % 100:02d} " for i in range(n // 8))
    return {
        "no spaces": "a" * n,
        "a@": "a@" * (n // 2),
        "a@.": "a@." * (n // 3),
        "at then dots": "a@a" + "." * n,
        "digits": "1" * n,
        "digits then x": "123" + "x" * n,
        "amounts": amounts[:n],
        "dollar digits": "$" + "1" * n,
        "spaces": " \n" * (n // 2),
        "words": "refund " * (n // 7),
        "wechat": "wechat is " * (n // 10),
        "brackets": "<" * n,
        "non-ascii": "é" * n,
    }


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def data_file_patterns() -> dict[str, str]:
    """``{where: pattern}``: every string of a data file that compiles and is written as a pattern."""
    found = {}
    for path in sorted(PACKAGE.glob("scenarios/*/data/*.json*")):
        lines = path.read_text(encoding="utf-8").splitlines() if path.suffix == ".jsonl" else [path.read_text(encoding="utf-8")]
        for number, line in enumerate(lines, 1):
            for text in _strings(json.loads(line) if line.strip() else None):
                if any(sign in text for sign in PATTERN_SIGNS):
                    try:
                        re.compile(text)
                    except re.error:
                        continue
                    found.setdefault(text, f"{path.relative_to(PACKAGE)}:{number}")
    return {f"{where} {text!r:.60}": text for text, where in found.items()}


def source_literal_patterns() -> dict[str, str]:
    """``{where: pattern}``: every string literal given to a function of ``re`` in the package's source."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RE_FUNCTIONS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
            ):
                found[f"{path.relative_to(PACKAGE)}:{node.lineno}"] = node.args[0].value
    return found


def _compiled(value, depth: int = 0):
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from _compiled(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _compiled(item, depth + 1)


def module_patterns() -> dict[str, re.Pattern]:
    """``{where: pattern}``: the compiled patterns the package's modules hold (alone or in tuples,
    lists and dicts), and those its data loaders build."""
    from dialogue_gym.scenarios.tracer.health import load_health_rules

    found = {}
    for info in pkgutil.walk_packages(dialogue_gym.__path__, "dialogue_gym."):
        source = importlib.util.find_spec(info.name).origin
        if not source or "re.compile" not in Path(source).read_text(encoding="utf-8"):
            continue  # keeps no compiled pattern (and ray, trl or torch stay unimported)
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (its patterns, if any, are in the source literals)
            continue
        for name, value in vars(module).items():
            for index, pattern in enumerate(_compiled(value)):
                found.setdefault(pattern, f"{info.name}.{name}[{index}]")
    found.setdefault(load_health_rules().contact, "tracer health.json contact_patterns, joined")
    return {where: pattern for pattern, where in found.items()}


def _all_patterns() -> dict[str, re.Pattern]:
    """Each distinct pattern once (a module's pattern is often also a source literal), by where it was first found."""
    patterns = {pattern: where for where, pattern in module_patterns().items()}
    for where, text in {**data_file_patterns(), **source_literal_patterns()}.items():
        patterns.setdefault(re.compile(text, re.IGNORECASE), where)
    return {where: pattern for pattern, where in patterns.items()}


def test_the_pattern_sources_are_found():
    data, literals, modules = data_file_patterns(), source_literal_patterns(), module_patterns()
    files = {where.split(":")[0] for where in data}
    assert {"scenarios/tracer/data/health.json", "scenarios/sead/data/health.json", "scenarios/rlada/data/lexicon.json",
            "scenarios/rlada/data/judge.json", "scenarios/tracer/data/sop.json"} <= files
    assert len(data) > 100 and len(literals) > 10 and len(modules) > 30


def test_every_pattern_is_linear_on_hostile_text():
    texts = _hostile_texts(MAX_ACTION_CHARS)
    slow = []
    for where, pattern in _all_patterns().items():
        for name, text in texts.items():
            started = time.perf_counter()
            for _ in pattern.finditer(text):
                pass
            seconds = time.perf_counter() - started
            if seconds > PATTERN_SECONDS:
                slow.append(f"{where} {pattern.pattern!r:.80} on {name!r}: {seconds:.2f} s")
    assert not slow, "\n".join(slow)


def test_the_email_contact_pattern_matches_what_the_quadratic_form_matched():
    """Same spans as ``\\S+@\\S+\\.\\w+`` on text like replies and on every short string of an
    alphabet of its edge characters, and linear where that form took seconds."""
    from dialogue_gym.scenarios.tracer.health import load_health_rules

    quadratic = re.compile(r"\S+@\S+\.\w+", re.IGNORECASE)
    linear = re.compile(json.loads((PACKAGE / "scenarios/tracer/data/health.json").read_text())["contact_patterns"][-1], re.IGNORECASE)
    samples = [
        "mail me at bob@example.com now", "x@y.z", "a@b", "@a.b", "@@a.b", "a@.b", "a@.b.c", "a@b.c.d!", "me:joe.doe@mail.co.uk.",
        "a@b@c.d", "first a@b then c@d.e", "a@b\n.c", "a@b.\u00e9t\u00e9", "a\u3000@b.c", "a@b_.c_", "",
    ]
    alphabet = "a@. \n"
    samples += [""]
    for _ in range(6):
        samples = sorted({*samples, *(text + char for text in samples if len(text) < 6 for char in alphabet)})
    for text in samples:
        old, new = quadratic.search(text), linear.search(text)
        assert (old and old.span()) == (new and new.span()), text
    assert load_health_rules().contact.search("reach me at bob@example.com")
    started = time.perf_counter()
    linear.search("a" * 1_000_000)
    linear.search("a@" * 500_000)
    assert time.perf_counter() - started < PATTERN_SECONDS * 4


ROLE_CASES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]
BIG_ACTIONS = {
    "1 MB, no spaces": "a" * 1_000_000,
    "1 MB of a@": "a@" * 500_000,
    "10 MB, no spaces": "a" * 10_000_000,
    "1 MB reply in a TRACER user's tags": "<think>x</think><intent_level>3</intent_level><reply>" + "a@" * 500_000 + "</reply>",
    "1 MB SEAD owner response": "<response>" + "a" * 1_000_000 + "</response><cooperation_score>2</cooperation_score>",
    "1 MB RL-ADA speech": '{"thinking": "", "action_type": "speak", "content": "' + "a" * 1_000_000 + '", "tool_args": {}}',
}


@pytest.mark.parametrize("env_id, learner", ROLE_CASES)
def test_every_id_and_role_steps_a_huge_action_quickly(env_id, learner):
    env = gym.make(env_id, learner=learner)
    slow = []
    for name, action in BIG_ACTIONS.items():
        env.reset(seed=0)
        started = time.perf_counter()
        env.step(action)
        seconds = time.perf_counter() - started
        if seconds > STEP_SECONDS:
            slow.append(f"{name}: {seconds:.2f} s")
    assert not slow, f"{env_id} as {learner}: " + "; ".join(slow)


def _counterpart_cases():
    return [
        (entry.id, learner, role) for entry in REGISTRY for learner in entry.roles for role in entry.roles if role != learner
    ]


BIG_REPLIES = [BIG_ACTIONS["1 MB of a@"], BIG_ACTIONS["1 MB reply in a TRACER user's tags"], "1" * 1_000_000, BIG_ACTIONS["1 MB SEAD owner response"]]


@pytest.mark.parametrize("env_id, learner, role", _counterpart_cases())
def test_a_model_played_counterpart_that_answers_a_megabyte_steps_quickly(env_id, learner, role):
    env = gym.make(env_id, learner=learner, **{role: "llm", f"{role}_backend": {"name": "canned", "replies": BIG_REPLIES}})
    env.reset(seed=0)
    for seed in range(1, 5):
        started = time.perf_counter()
        _, _, terminated, truncated, _ = env.step("Hello, how can I help you today?")
        assert time.perf_counter() - started < STEP_SECONDS, f"{env_id}: {role} played by a model answering 1 MB"
        if terminated or truncated:
            env.reset(seed=seed)
