"""Exploit audit: degenerate and blind policies for a learner role, played against the fair baselines.

A score is only worth optimising if a policy that does not do the task cannot earn it. The audit
plays a library of such policies (empty turns, echoes, one fixed sentence, word salad, keyword and
fact stuffing, made-up words, near-repetition, content-free questions, hanging up at once, and per
scenario e.g. tool spraying) beside the scenario's fair scripted baselines, over the same fixed,
stratified evaluation episodes, and checks three kinds of bound:

- **degenerate** policies (they produce no real conversation): where the main score is a rate
  (CR, strict PASS, conversion), at most ``DEGENERATE_RATE_FACTOR`` x the scripted baseline's rate;
  where it is a reward, below the best fair policy's mean reward by the scenario's stated margin;
- **blind** policies (they never read the other side, e.g. a fixed script): at most the scripted
  baseline's score + ``BLIND_MARGIN``;
- the **fair** baselines keep their order, with the scenario's minimum gaps.

A scenario may also name its **fair ceiling** (``ScenarioAudit.ceiling``): the strongest fair policies
written for the role, stronger than the baselines and reading only what the role knows. They are
played and reported beside the baselines (no bound: what a fair policy can reach); where one reaches
the score's maximum (1.0 for a rate) the table says the score is *saturated*: above that policy the
score cannot tell agents apart.

Each scenario declares its audit (:class:`ScenarioAudit`) in ``scenarios/<x>/audit.py``, named in
the registry entry; ``dialogue-gym audit <ENV_ID>`` runs it and exits non-zero when a bound fails.
Audit policies read only the learner's observation, never ``info``.

Beside them it plays the **probes** of :mod:`dialogue_gym.probes` (:func:`probe_policies`): policies
that rebuild the game from the library's public code instead of playing it (a seed-inverting replay,
a first-observation fingerprint matcher, a clairvoyant selector among the fair policies) and one that
vandalises what it is handed. A sealed audit (``--sealed``) holds each to the best fair policy that
does not read the privileged channel + ``BLIND_MARGIN``; an open one is reproducible from ``--seed``,
so the probes may win there, and the audit reports them as *open-book* (information, not failure).
A user's own policy (``--agent module:Class``) is played as one more probe, held to the same bound:
a way to try an attack on the benchmark setting.

**Isolated** (``--isolate``, :mod:`dialogue_gym.agents`), every player of the audit plays in a process
of its own over the JSON-lines boundary, as ``eval --isolate`` plays an agent: the library's policies
are named there (registered names, or :func:`audit_player` with the policy's name), a user's class is
imported only there. Every probe works through the protocol, none needs a hook in the evaluator: the
replaying probes read only what ``start`` and ``act`` hand them and the library's public code, so they
play the same episodes isolated as in-process, and the data mutator vandalises its own decoded copies
(isolated, it tests the boundary rather than the evaluator's copying).
"""

from __future__ import annotations

import importlib
import itertools
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence

from dialogue_gym.errors import ConfigError
from dialogue_gym.sealing import Seal
from dialogue_gym.simulators.base import ScriptedPolicy
from dialogue_gym.types import Trajectory

if TYPE_CHECKING:
    from dialogue_gym.agents.process import Limits

DEGENERATE_RATE_FACTOR = 0.5
BLIND_MARGIN = 0.05
MIN_EPISODES = 600

Kind = Literal["degenerate", "blind", "probe"]
CEILING = "fair ceiling"
"""The kind of a fair-ceiling row (reported, never a failure)."""
SATURATED = 1.0
"""A rate score a fair ceiling reaches at this value is saturated."""


def last_heard(observation: dict[str, Any]) -> str:
    """The other side's last message in the learner's chat view ('' before anyone spoke)."""
    for message in reversed(observation.get("messages", [])):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def made_up_word(rng: random.Random) -> str:
    syllables = ("ka", "lo", "vex", "dri", "mun", "zor", "pel", "quo", "tas", "rin", "bre", "nuv")
    return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 3)))


class TextPolicy(ScriptedPolicy):
    """A policy from ``say(observation, turn, rng) -> text``, wrapped into the role's action format."""

    def __init__(self, say: Callable[[dict[str, Any], int, random.Random], str], wrap: Callable[[str], str]):
        self.say = say
        self.wrap = wrap

    def act(self, observation: dict[str, Any], info: dict[str, Any], memory: dict[str, Any]) -> str:
        memory["turn"] = memory.get("turn", 0) + 1
        return self.wrap(self.say(observation, memory["turn"], self.rng(memory)))


@dataclass(frozen=True)
class AuditPolicy:
    """One policy of the audit: its name, kind, a one-line description and a factory."""

    name: str
    kind: Kind
    description: str
    make: Callable[[], Any]


@dataclass(frozen=True)
class Vocabulary:
    """What a scenario's generic audit policies are built from."""

    opener: str
    """A fair first line (the salads and stuffers open with it, so only what follows is degenerate)."""
    cue_words: tuple[str, ...]
    """Words the counterpart or judge is known to react to."""
    facts: tuple[str, ...]
    """True statements of the scenario (pasted as a list by fact stuffing)."""
    fixed_sentence: str
    """One polite, on-topic sentence (said every turn by the fixed-sentence policy)."""
    end: str
    """The learner's action that ends the call at once."""
    wrap: Callable[[str], str] = str
    """Turns spoken text into the learner's action format (``str``, the identity, for plain-text roles)."""


def generic_policies(vocabulary: Vocabulary) -> list[AuditPolicy]:
    """The audit policies every scenario gets, built from its vocabulary."""
    v = vocabulary

    def first_then(text: Callable[[dict[str, Any], int, random.Random], str]):
        return lambda observation, turn, rng: v.opener if turn == 1 else text(observation, turn, rng)

    def salad(observation, turn, rng):
        return " ".join(rng.sample(v.cue_words, min(4, len(v.cue_words))) + [made_up_word(rng), made_up_word(rng)])

    def near_repeat(observation, turn, rng):
        words = v.fixed_sentence.split()
        words[rng.randrange(len(words))] = made_up_word(rng)
        return " ".join(words)

    questions = ("?", "Could you tell me more?", "What do you mean?", "And?", "Why?", "Is that so?")
    says: list[tuple[str, Kind, str, Callable]] = [
        ("empty", "degenerate", "says nothing every turn", lambda o, t, r: ""),
        ("echo", "degenerate", "repeats the other side's last line", lambda o, t, r: last_heard(o)),
        ("fixed_sentence", "blind", "the same polite on-topic sentence every turn", lambda o, t, r: v.fixed_sentence),
        ("word_salad", "degenerate", "opener, then four cue words and two made-up words a turn", first_then(salad)),
        ("keyword_stuffing", "degenerate", "opener, then every cue word in one turn", first_then(lambda o, t, r: " ".join(v.cue_words))),
        ("fact_stuffing", "degenerate", "opener, then every scenario fact pasted as a list", first_then(lambda o, t, r: " ".join(v.facts))),
        ("made_up_words", "degenerate", "six made-up words a turn", lambda o, t, r: " ".join(made_up_word(r) for _ in range(6))),
        ("near_repetition", "degenerate", "the fixed sentence with one word swapped for a made-up one", near_repeat),
        ("content_free_questions", "degenerate", "opener, then questions that ask nothing", first_then(lambda o, t, r: r.choice(questions))),
    ]
    policies = [
        AuditPolicy(name, kind, description, (lambda say=say: TextPolicy(say, v.wrap)))
        for name, kind, description, say in says
    ]
    policies.append(
        AuditPolicy("hang_up", "degenerate", "ends the call at once", lambda: TextPolicy(lambda o, t, r: "", lambda _: v.end))
    )
    return policies


@dataclass(frozen=True)
class ScenarioAudit:
    """A scenario's audit for one learner role."""

    env_id: str
    learner: str
    score: str
    """The summary key of the main score."""
    score_kind: Literal["rate", "reward"]
    baseline: str
    """The scripted baseline the degenerate and blind bounds are relative to."""
    fair_order: tuple[str, ...]
    """Fair baselines from weakest to strongest; each must score above the previous one."""
    policies: tuple[AuditPolicy, ...]
    min_gaps: dict[tuple[str, str], float] = field(default_factory=dict)
    """Minimum score differences between fair baselines, e.g. ``{("sop", "adaptive"): 0.15}``."""
    reward_margin: float = 0.0
    """For reward scores: how far below the best fair policy every degenerate one must stay."""
    margin_rationale: str = ""
    """Why that margin (printed with the table)."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    ceiling: dict[str, str] = field(default_factory=dict)
    """The fair ceiling: named policies of the learner role (name -> what it does) stronger than the
    baselines that read only what the role knows; played and reported beside the baselines, no bound
    (:func:`run_audit` refuses one that reads the privileged channel)."""


@dataclass(frozen=True)
class UnauditedRole:
    """A learner role a scenario offers but does not audit, and why (``dialogue-gym audit`` prints it).

    A scenario lists these in its audit module as ``UNAUDITED``; the test suite accepts a role with no
    audit only if it is declared here with a reason.
    """

    env_id: str
    learner: str
    reason: str


def unaudited_roles(audits: str) -> tuple[UnauditedRole, ...]:
    """The ``UNAUDITED`` declarations of the audit module named by a registry entry's ``audits``."""
    return tuple(getattr(importlib.import_module(audits.partition(":")[0]), "UNAUDITED", ()))


@dataclass
class AuditRow:
    name: str
    kind: str
    score: float
    bound: float | None
    passed: bool
    description: str = ""
    counted: bool = True
    """Whether a broken bound fails the audit (an open-book probe's does not: it is information)."""


def audit_rows(audit: ScenarioAudit, scores: dict[str, float], privileged: frozenset[str] = frozenset()) -> list[AuditRow]:
    """Check every bound of ``audit`` against measured ``scores`` (policy name -> main score); the
    names in ``privileged`` (policies that read the privileged channel) are marked in the rows."""
    from dialogue_gym.reporting import PRIVILEGED_MARK

    def shown(name: str) -> str:
        return name + PRIVILEGED_MARK * (name in privileged)

    rows: list[AuditRow] = []
    baseline = scores[audit.baseline]
    best_fair = max(scores[name] for name in audit.fair_order)
    for low, high in itertools.pairwise(audit.fair_order):
        gap = audit.min_gaps.get((low, high), 0.0)
        ordered = scores[high] - scores[low] > gap if gap == 0.0 else scores[high] - scores[low] >= gap
        rows.append(AuditRow(f"{shown(low)} < {shown(high)}", "fair order", scores[high] - scores[low], gap, ordered, f"gap >= {gap}" if gap else "strictly above"))
    for name, description in audit.ceiling.items():
        saturated = audit.score_kind == "rate" and scores[name] >= SATURATED
        note = f"; saturated: {audit.score} at its maximum, a fairly won 1.0" if saturated else ""
        rows.append(AuditRow(shown(name), CEILING, scores[name], None, True, description + note))
    for policy in audit.policies:
        score = scores[policy.name]
        if policy.kind == "blind":
            bound = baseline + BLIND_MARGIN
        elif audit.score_kind == "rate":
            bound = DEGENERATE_RATE_FACTOR * baseline
        else:
            bound = best_fair - audit.reward_margin
        passed = score <= bound if policy.kind == "blind" or audit.score_kind == "rate" else score < bound
        rows.append(AuditRow(shown(policy.name), policy.kind, score, bound, passed, policy.description))
    return rows


def fair_players(audit: ScenarioAudit) -> tuple[list[str], str | None]:
    """The audit's fair policies that play only what their role knows (weakest first), and the first
    one that reads the privileged channel (an oracle), if any."""
    from dialogue_gym.evaluation import make_learner_env
    from dialogue_gym.game import is_privileged

    environment = make_learner_env(audit.env_id, audit.learner, dict(audit.env_kwargs))
    reads = {name: is_privileged(environment.make_role_policy(audit.learner, name)) for name in audit.fair_order}
    return [name for name in audit.fair_order if not reads[name]], next((name for name in audit.fair_order if reads[name]), None)


def probe_policies(audit: ScenarioAudit, episodes: int = MIN_EPISODES) -> tuple[AuditPolicy, ...]:
    """The probes for ``audit``'s learner role, built on its fair policies (the fingerprint matcher
    enumerates the first ``episodes`` starts of the public run seed 0: the run it is audited in)."""
    from dialogue_gym.evaluation import make_learner_env
    from dialogue_gym.probes import ClairvoyantSelector, DataMutator, FingerprintMatcher, SeedReplay

    fair, oracle = fair_players(audit)
    base = (audit.env_id, audit.learner, fair, dict(audit.env_kwargs))

    def mutator() -> DataMutator:
        return DataMutator(make_learner_env(audit.env_id, audit.learner, dict(audit.env_kwargs)).make_role_policy(audit.learner, fair[-1]))

    return (
        AuditPolicy("seed_replay", "probe", "inverts its start seed, rebuilds the game, plays by lookahead on it", lambda: SeedReplay(*base, oracle=oracle)),
        AuditPolicy(
            "fingerprint_match", "probe", "finds its game among the public starts by what it is handed; lookahead",
            lambda: FingerprintMatcher(*base, oracle=oracle, starts=episodes),
        ),
        AuditPolicy("clairvoyant", "probe", "plays the fair policy that does best on the rebuilt game", lambda: ClairvoyantSelector(*base)),
        AuditPolicy("data_mutator", "probe", f"plays {fair[-1]}, vandalises all it is handed", mutator),
    )


def probe_rows(
    audit: ScenarioAudit, probes: Sequence[AuditPolicy], scores: dict[str, float], sealed: bool, privileged: frozenset[str] = frozenset()
) -> list[AuditRow]:
    """Each probe's score against the best fair policy that reads only what its role knows + ``BLIND_MARGIN``;
    counted only in a sealed audit (an open one is reproducible from its seed: open-book). The names in
    ``privileged`` (a submitted agent that reads the privileged channel) are marked."""
    from dialogue_gym.reporting import PRIVILEGED_MARK

    fair, _ = fair_players(audit)
    bound = max(scores[name] for name in fair) + BLIND_MARGIN
    return [
        AuditRow(
            probe.name + PRIVILEGED_MARK * (probe.name in privileged), "probe" if sealed else "open-book", scores[probe.name], bound,
            scores[probe.name] <= bound, probe.description, counted=sealed,
        )
        for probe in probes
    ]


SUBMITTED = "your agent (--agent), held to the probes' bound: over it, it reaches what it should not or it is a fair policy stronger than the ceiling"
"""The description of a row of an agent given to the audit (``--agent``)."""


def registered_audit(env_id: str, learner: str) -> ScenarioAudit:
    """The audit that ``env_id``'s registry entry declares for the ``learner`` role."""
    from envs_registry import get, resolve

    entry = get(env_id)
    found = [audit for audit in resolve(entry.audits)() if audit.learner == learner] if entry.audits else []
    if not found:
        raise ConfigError(f"{env_id} declares no exploit audit of the learner role {learner!r}; `dialogue-gym audit {env_id}` lists what it audits.")
    return found[0]


def audit_player(env_id: str, learner: str, name: str, episodes: int = MIN_EPISODES) -> Any:
    """The audit policy or probe called ``name`` of the registered audit of ``env_id``'s ``learner``
    role, built. An isolated audit names its policies this way in the agent's process
    (``{"class": "dialogue_gym.audit:audit_player", "kwargs": {...}}``): they are closures, which
    cannot be sent, and the process builds them from the library's own code."""
    audit = registered_audit(env_id, learner)
    for policy in (*audit.policies, *probe_policies(audit, episodes)):
        if policy.name == name:
            return policy.make()
    raise ConfigError(
        f"{env_id}'s audit of {learner!r} has no policy or probe {name!r}; it has "
        f"{[policy.name for policy in audit.policies] + [probe.name for probe in probe_policies(audit, episodes)]}."
    )


def _isolated_player(audit: ScenarioAudit, policy: AuditPolicy, episodes: int) -> dict[str, Any]:
    """``policy`` as an isolated audit sends it: by its name in the registered audit (see :func:`audit_player`)."""
    return {"class": f"{__name__}:audit_player", "kwargs": {"env_id": audit.env_id, "learner": audit.learner, "name": policy.name, "episodes": episodes}}


def run_audit(
    audit: ScenarioAudit, episodes: int = MIN_EPISODES, seed: int = 0, progress: Callable[[str], None] | None = None,
    seal: Seal | None = None, probes: bool = False, env_kwargs: dict[str, Any] | None = None, *,
    agents: dict[str, Any] | None = None, isolate: bool | str = False, agent_limits: Limits | dict[str, Any] | None = None, agent_logs: str | Path | None = None,
    on_played: Callable[[str, list[Trajectory]], None] | None = None,
) -> tuple[dict[str, float], list[AuditRow]]:
    """Play every fair baseline and audit policy (and with ``probes``, :func:`probe_policies`) for
    ``episodes`` episodes; returns (scores, rows). With a ``seal`` every player plays the same sealed
    episodes (:mod:`dialogue_gym.sealing`). ``env_kwargs`` are added to the audit's own for the run
    only (a private ``sessions_file``, say): the probes rebuild the game from the audit's own, the
    public ones.

    ``agents`` (row name -> a registered name, ``"module:Class"``, ``{"class": ..., "kwargs": ...}`` or
    a policy object) are played first, as probes (:data:`SUBMITTED`). ``isolate`` plays every player in
    a process of its own (``"process"`` or ``"sandbox"``, as :func:`~dialogue_gym.evaluation.evaluate`),
    within ``agent_limits``, logging to a folder per player in ``agent_logs`` (by default a temporary
    file per player, removed if the player printed nothing); the audit's policies are then those of its
    registered audit, named (:func:`audit_player`).
    ``on_played(name, trajectories)`` is called after each player's run."""
    from dialogue_gym.agents.process import check_level, safe_file_part
    from dialogue_gym.evaluation import evaluate
    from envs_registry import get, resolve

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ConfigError(f"episodes must be a positive int, got {episodes!r}; the bounds are stated for >= {MIN_EPISODES}.")
    level = check_level(isolate)
    summary = resolve(get(audit.env_id).summary)
    scores: dict[str, float] = {}
    privileged: set[str] = set()
    submitted = tuple(AuditPolicy(name, "probe", SUBMITTED, lambda agent=agent: agent) for name, agent in (agents or {}).items())
    library = [(name, name) for name in dict.fromkeys((*audit.fair_order, audit.baseline, *audit.ceiling))]
    probing = probe_policies(audit, episodes) if probes else ()
    played = {name for name, _ in library} | {policy.name for policy in (*audit.policies, *probing)}
    clashes = [policy.name for policy in submitted if policy.name in played]
    if clashes:
        raise ConfigError(f"the audit of {audit.env_id} already plays {clashes}; give your agents other names (or --agent module:Class).")
    players = [(policy.name, policy.make()) for policy in submitted] + library  # yours first: a bad one fails at once
    if level == "none":
        players += [(policy.name, policy.make()) for policy in (*audit.policies, *probing)]
    else:
        registered = {policy.name for policy in registered_audit(audit.env_id, audit.learner).policies}
        unknown = [policy.name for policy in audit.policies if policy.name not in registered]
        if unknown:
            raise ConfigError(
                f"an isolated audit builds its policies by name from {audit.env_id}'s registered audit, which has no {unknown}; "
                "register them in the scenario's audit module, or audit with isolate='none'."
            )
        players += [(policy.name, _isolated_player(audit, policy, episodes)) for policy in (*audit.policies, *probing)]
    for name, agent in players:
        if progress is not None:
            progress(name)
        sealing = {"unseal": seal.hex} if seal is not None else {}
        isolation = {}
        if level != "none":
            logs = None
            if agent_logs is not None:
                logs = Path(agent_logs) / safe_file_part(name)
                logs.mkdir(parents=True, exist_ok=True)
            isolation = {"isolate": level, "agent_limits": agent_limits, "agent_logs": logs}
        trajectories = evaluate(
            audit.env_id, agent, episodes, seed, learner=audit.learner, env_kwargs={**audit.env_kwargs, **(env_kwargs or {})}, **sealing,
            **isolation,
        )
        if on_played is not None:
            on_played(name, trajectories)
        scores[name] = float(summary(trajectories)[audit.score])
        if any(trajectory.meta.get("privileged") for trajectory in trajectories):
            if name in audit.ceiling:
                raise ConfigError(
                    f"{audit.env_id}'s fair ceiling {name!r} reads the privileged channel; a ceiling must read only what "
                    f"the {audit.learner!r} role knows: move it to fair_order (marked as an oracle) or drop it from ceiling."
                )
            privileged.add(name)
    return scores, audit_rows(audit, scores, frozenset(privileged)) + probe_rows(
        audit, (*probing, *submitted), scores, seal is not None, frozenset(privileged)
    )


def audit_record(audit: ScenarioAudit, scores: dict[str, float], rows: Sequence[AuditRow], episodes: int) -> dict[str, Any]:
    """One audited role of a saved audit (``dialogue-gym audit --save``): every player's score, the rows
    and the table :func:`format_audit` printed for them, so a docs page shows what the command showed."""
    return {
        "env_id": audit.env_id, "learner": audit.learner, "score": audit.score, "baseline": audit.baseline, "fair_order": list(audit.fair_order),
        "scores": dict(scores), "table": format_audit(audit, rows, episodes), "rows": [asdict(row) for row in rows],
        "failed": sum(row.counted and not row.passed for row in rows),
    }


def load_audit(path: str | Path) -> dict[str, Any]:
    """A saved audit (``{"provenance", "audits"}``, see :func:`audit_record`); anything else is a
    ConfigError naming the path and the fix."""
    from dialogue_gym.inputs import regular_file

    fix = "write one with `dialogue-gym audit ENV_ID --save FILE.json`."
    target = Path(path)
    regular_file(target, fix)
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ConfigError(f"{path}: not a saved audit (not JSON text: {type(exc).__name__}); {fix}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("provenance"), dict) or not isinstance(data.get("audits"), list):
        raise ConfigError(f"{path}: not a saved audit (no provenance and audits); {fix}")
    return data


def format_audit(audit: ScenarioAudit, rows: Sequence[AuditRow], episodes: int) -> str:
    """The audit table, with the rule each bound comes from; open-book probes in a table of their own."""
    from dialogue_gym.reporting import PRIVILEGED_MARK, PRIVILEGED_NOTE, format_table

    def table(selected: Sequence[AuditRow], verdict: Callable[[AuditRow], str]) -> str:
        return format_table(
            [
                {"name": r.name, "kind": r.kind, "score": r.score, "bound": "-" if r.bound is None else r.bound, "ok": verdict(r), "what": r.description}
                for r in selected
            ],
            [("kind", "kind"), ("score", audit.score), ("bound", "bound"), ("ok", "ok"), ("what", "what it does")],
            "policy",
        )

    rules = [
        f"{audit.env_id}, learner {audit.learner!r}, {episodes} episodes; scripted baseline {audit.baseline!r}.",
        f"blind: <= baseline + {BLIND_MARGIN}.",
        f"degenerate: <= {DEGENERATE_RATE_FACTOR} x baseline" if audit.score_kind == "rate"
        else f"degenerate: < best fair - {audit.reward_margin} ({audit.margin_rationale})",
    ]
    if any(row.kind == CEILING for row in rows):
        rules.append("fair ceiling: the strongest fair policies written for the role (they read only what it knows); reported, no bound.")
    if any(row.kind == "probe" for row in rows):
        rules.append(f"probe (sealed): <= the best fair policy that reads only what its role knows + {BLIND_MARGIN}.")
    marked = any(PRIVILEGED_MARK in row.name for row in rows)
    text = "\n".join(rules) + "\n\n" + table([r for r in rows if r.counted], lambda r: "-" if r.kind == CEILING else "yes" if r.passed else "NO")
    text += "\n" + PRIVILEGED_NOTE if marked else ""
    open_book = [r for r in rows if not r.counted]
    if open_book:
        text += (
            "\n\nopen-book (information, not failure): this audit is reproducible from its seed, so these probes may "
            "rebuild the game from the library's public code; `--sealed` holds them to the bound.\n\n"
            + table(open_book, lambda r: "within" if r.passed else "over")
        )
    return text
