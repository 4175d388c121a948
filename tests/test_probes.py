"""Probe policies (issue 32, item 5): open-book they rebuild the public simulator and beat the fair
policies; sealed, each stays within the best fair policy + ``BLIND_MARGIN`` on every id."""

from __future__ import annotations

import numpy as np
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.audit import BLIND_MARGIN, MIN_EPISODES, fair_players, format_audit, probe_policies, run_audit
from dialogue_gym.evaluation import evaluate, make_learner_env
from dialogue_gym.probes import VANDAL, ClairvoyantSelector, FingerprintMatcher, SeedReplay, invert_mix_seed, vandalise
from dialogue_gym.readonly import frozen
from dialogue_gym.scenarios.tracer.synthetic import generate, write
from dialogue_gym.seeding import mix_seed
from envs_registry import REGISTRY, get, resolve

AUDITS = [audit for entry in REGISTRY for audit in resolve(entry.audits)()]
SECRET = "5eed" * 8


@pytest.fixture(scope="module")
def private_sessions(tmp_path_factory):
    """A held-out TRACER reference file no probe knows (what a sealed TRACER benchmark keeps private)."""
    path = tmp_path_factory.mktemp("private") / "sessions.jsonl"
    write(generate(groups=8, per_group=5, seed=11), path)
    return str(path)


def score(audit, agent, episodes, env_kwargs=None, **sealing) -> float:
    trajectories = evaluate(audit.env_id, agent, episodes, learner=audit.learner, env_kwargs={**audit.env_kwargs, **(env_kwargs or {})}, **sealing)
    return float(resolve(get(audit.env_id).summary)(trajectories)[audit.score])


def audit_of(env_id: str):
    return next(audit for audit in AUDITS if audit.env_id == env_id)


def test_an_open_runs_role_seed_gives_away_its_episode_seed():
    for episode in (0, 7, 123_456, 2**62 + 11):
        for role_index in (0, 1):
            assert episode in invert_mix_seed(mix_seed(episode, role_index), role_index)


def test_vandalise_writes_wherever_it_can_and_read_only_data_refuses():
    class Holder:
        def __init__(self):
            self.items = [1, {"a": "b"}]

    listed, nested, array, holder, cold = [1, 2], {"x": [3]}, np.zeros(2), Holder(), frozen({"k": ["v"]})
    handed = {"list": listed, "nested": nested, "array": array, "object": holder, "cold": cold}
    vandalise(handed)
    assert handed == {"list": VANDAL, "nested": VANDAL, "array": VANDAL, "object": VANDAL, "cold": VANDAL, VANDAL: VANDAL}
    assert listed == [VANDAL] * 3 and nested == {"x": VANDAL, VANDAL: VANDAL} and array.tolist() == [1.0, 1.0]
    assert holder.items == VANDAL
    assert cold == {"k": ("v",)}  # read-only: refused, unchanged


@pytest.mark.parametrize("probe", [SeedReplay, FingerprintMatcher])
def test_open_book_a_replaying_probe_reads_the_hidden_state_of_its_copy(probe):
    audit = audit_of("RLADA-Banking-v0")
    fair, oracle = fair_players(audit)
    assert (fair, oracle) == (["random", "keyword"], "oracle")
    extra = {"starts": 60} if probe is FingerprintMatcher else {}
    assert score(audit, probe(audit.env_id, audit.learner, fair, oracle=oracle, **extra), 60) == 1.0 > score(audit, "keyword", 60) + BLIND_MARGIN


def test_open_book_the_seed_replay_finds_runs_of_other_public_seeds_too():
    audit = audit_of("RLADA-Banking-v0")
    trajectories = evaluate(audit.env_id, SeedReplay(audit.env_id, audit.learner, ["random", "keyword"], oracle="oracle"), 24, 2)
    assert resolve(get(audit.env_id).summary)(trajectories)["strict_pass"] == 1.0


def test_sealed_a_replaying_probe_finds_no_game_and_plays_its_fallbacks_episodes():
    audit = audit_of("RLADA-Banking-v0")
    probe = evaluate(audit.env_id, SeedReplay(audit.env_id, audit.learner, ["random", "keyword"], oracle="oracle"), 12, unseal=SECRET)
    fallback = evaluate(audit.env_id, "keyword", 12, unseal=SECRET)
    assert [t.turns for t in probe] == [t.turns for t in fallback]


def test_open_book_a_clairvoyant_choice_among_fair_customers_beats_each_of_them():
    audit = audit_of("RLADA-Customer-v0")
    fair, _ = fair_players(audit)
    assert score(audit, ClairvoyantSelector(audit.env_id, audit.learner, fair), 60) > max(score(audit, name, 60) for name in fair) + BLIND_MARGIN


def sealed_rows(audit, episodes, private_sessions):
    """The probe rows of a sealed audit (TRACER's ids on a private reference file: see ``public_targets``)."""
    private = {"sessions_file": private_sessions} if audit.env_id in ("TRACER-UserSim-v0", "DMBench-Assistant-v0") else {}
    fair, _ = fair_players(audit)
    probes = probe_policies(audit, episodes)
    scores = {name: score(audit, name, episodes, private, unseal=SECRET) for name in fair}
    scores.update({probe.name: score(audit, probe.make(), episodes, private, unseal=SECRET) for probe in probes})
    bound = max(scores[name] for name in fair) + BLIND_MARGIN
    return {probe.name: (scores[probe.name], bound) for probe in probes}


@pytest.mark.parametrize("audit", AUDITS, ids=lambda audit: f"{audit.env_id}-{audit.learner}")
def test_sealed_no_probe_beats_the_best_fair_policy(audit, private_sessions):
    for name, (value, bound) in sealed_rows(audit, 60, private_sessions).items():
        assert value <= bound, f"{name}: {value:.3f} > {bound:.3f}"


@pytest.mark.slow
@pytest.mark.parametrize("audit", AUDITS, ids=lambda audit: f"{audit.env_id}-{audit.learner}")
def test_sealed_no_probe_beats_the_best_fair_policy_at_the_stated_strength(audit, private_sessions):
    for name, (value, bound) in sealed_rows(audit, MIN_EPISODES, private_sessions).items():
        assert value <= bound, f"{name}: {value:.3f} > {bound:.3f}"


def test_an_open_audit_reports_its_probes_as_open_book_and_a_sealed_one_counts_them():
    audit = audit_of("RLADA-Banking-v0")
    _, rows = run_audit(audit, episodes=24, probes=True)
    probes = [row for row in rows if row.name in {p.name for p in probe_policies(audit)}]
    assert len(probes) == 4 and not any(row.counted for row in probes) and not all(row.passed for row in probes)
    text = format_audit(audit, rows, 24)
    assert "open-book (information, not failure)" in text and "| seed_replay       | open-book | 1.000" in text
    from dialogue_gym.sealing import Seal

    _, rows = run_audit(audit, episodes=24, probes=True, seal=Seal.parse(SECRET))
    probes = [row for row in rows if row.kind == "probe"]
    assert len(probes) == 4 and all(row.counted and row.passed for row in probes)
    assert "probe (sealed): <= the best fair policy" in format_audit(audit, rows, 24)


def test_the_shipped_tracer_references_are_public_targets_and_a_private_file_is_not(private_sessions):
    for env_id in ("TRACER-UserSim-v0", "DMBench-Assistant-v0"):
        assert "sealing hides seeds, not public data" in make_learner_env(env_id, "user", {}).game.public_targets()
        assert make_learner_env(env_id, "user", {"sessions_file": private_sessions}).game.public_targets() is None
    assert make_learner_env("SEAD-Outbound-v0", "agent", {}).game.public_targets() is None
