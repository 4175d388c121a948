"""Probe details the scenario-level probe tests do not reach (issue 43, item 6): vandalising follows
containers all the way down, the seed inversion uses the learner's own role index (RLADA's customer is
the second role), and the fingerprint matcher replays once at most ``narrow`` starts are left."""

from __future__ import annotations

from dialogue_gym.probes import VANDAL, FingerprintMatcher, SeedReplay, vandalise
from dialogue_gym.seeding import mix_seed


def test_vandalise_reaches_a_list_four_containers_down():
    innermost = [1]
    handed = {"l1": {"l2": [{"l3": innermost}]}}
    vandalise(handed)
    assert innermost == [VANDAL, VANDAL]


def test_a_seed_replay_inverts_the_role_seed_with_the_learners_own_role_index():
    probe = SeedReplay("RLADA-Customer-v0", "customer", ["direct", "contextual"])
    assert probe.environment.game.roles.index("customer") == 1
    for run_seed in (0, 3):
        episode = run_seed + 41  # start 41 of an open run from run_seed
        found = probe.candidates({"seed": mix_seed(episode, 1)})
        assert (41, run_seed) in found


def test_the_fingerprint_matcher_replays_once_at_most_narrow_starts_match(monkeypatch):
    probe = FingerprintMatcher("RLADA-Customer-v0", "customer", ["direct", "contextual"], starts=12, narrow=3)
    memory = {"seen": ["x"], "history": []}
    monkeypatch.setattr(probe, "matching", lambda seen, said: [(start, 0) for start in range(3)])
    assert probe.candidates(memory) == [(0, 0), (1, 0), (2, 0)]
    monkeypatch.setattr(probe, "matching", lambda seen, said: [(start, 0) for start in range(4)])
    assert probe.candidates(memory) is None
