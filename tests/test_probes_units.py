"""Probe helpers pinned by hand (issue 43, item 6: probes.py's mutants): how deep vandalising reaches,
cycles and sets, and the SplitMix64 inversion's pieces."""

from __future__ import annotations

import random

from dialogue_gym.probes import _MASK64, VANDAL, DataMutator, _unshift, invert_mix_seed, vandalise
from dialogue_gym.seeding import mix_seed


def _nested(levels: int) -> tuple[dict, list]:
    """A dict holding ``levels`` dicts one in another, the last holding a list; returns both ends."""
    innermost = [1]
    value: object = innermost
    for _ in range(levels):
        value = {"k": value}
    return value, innermost


def test_vandalise_follows_twelve_levels_down_and_no_further():
    outer, innermost = _nested(12)  # the list is at depth 12
    vandalise(outer)
    assert innermost == [VANDAL, VANDAL]
    outer, innermost = _nested(13)  # depth 13: past the limit, untouched
    vandalise(outer)
    assert innermost == [1]


def test_vandalise_handles_cycles_sets_and_tuples_of_mutables():
    cyclic: list = [1]
    cyclic.append(cyclic)
    vandalise(cyclic)
    assert cyclic == [VANDAL, VANDAL, VANDAL]
    inner = {"a": 1}
    handed = ({"b": inner}, {1, 2})
    vandalise(handed)
    assert inner == {"a": VANDAL, VANDAL: VANDAL} and handed[1] == {VANDAL}
    for atom in ("text", b"bytes", 5, 1.5, None):
        vandalise(atom)  # nothing to write: no error


def test_unshift_inverts_a_xor_shift_for_every_shift_the_mixer_uses():
    draw = random.Random(7)
    for shift in (27, 30, 31, 1, 63):
        for _ in range(50):
            x = draw.getrandbits(64)
            assert _unshift(x ^ (x >> shift), shift) == x
    assert _MASK64 == 2**64 - 1


def test_both_candidates_of_the_inversion_map_back_to_the_output():
    for episode in (5, 2**63 + 9):
        output = mix_seed(episode, 0)
        candidates = invert_mix_seed(output, 0)
        assert len(candidates) == 2 and episode in candidates
        assert all(0 <= candidate <= _MASK64 for candidate in candidates)
        assert [mix_seed(candidate, 0) for candidate in candidates] == [output, output]


def test_a_seed_replay_considers_start_zero_and_no_negative_start():
    from dialogue_gym.probes import SeedReplay

    probe = SeedReplay("RLADA-Customer-v0", "customer", ["direct", "contextual"])
    found = probe.candidates({"seed": mix_seed(0, 1)})  # start 0 of an open run from run seed 0 (the customer is role 1)
    assert (0, 0) in found and all(start >= 0 for start, _ in found)


def test_a_seed_replay_believes_in_starts_below_a_million_only():
    from dialogue_gym.probes import MAX_START, SeedReplay

    probe = SeedReplay("RLADA-Customer-v0", "customer", ["direct", "contextual"])
    assert (MAX_START - 1, 0) in probe.candidates({"seed": mix_seed(MAX_START - 1, 1)})
    assert (MAX_START, 0) not in probe.candidates({"seed": mix_seed(MAX_START, 1)})


class _ScoredReplica:
    """A stand-in for a rebuilt game: a fork played to the end by a policy returns that policy's score,
    and records the text said first and the history it was forked from."""

    def __init__(self, scores: dict[str, float], played: list | None = None, history: list | None = None):
        self.scores, self.played, self.history = scores, played if played is not None else [], history

    def fork(self, history):
        return _ScoredReplica(self.scores, self.played, list(history))

    def step(self, text):
        self.played.append((tuple(self.history), text))

    def finish(self, policy, memory):
        return self.scores[policy]


def _selector(kind, fair: list[str]):
    """A probe of ``kind`` whose fair policies are their own names (the stand-in replica scores names)."""
    probe = object.__new__(kind)
    probe.fair = {name: name for name in fair}
    probe.fallback, probe.oracle = fair[-1], None
    return probe


def test_the_clairvoyant_selector_keeps_the_best_policy_and_the_fallback_on_a_tie():
    from dialogue_gym.probes import ClairvoyantSelector

    class Named(str):
        def start(self, profile, seed):
            return {"profile": profile, "seed": seed}

    probe = _selector(ClairvoyantSelector, ["weak", "middle", "best"])
    probe.fair = {name: Named(name) for name in probe.fair}
    proposed = {name: (f"{name} says", None) for name in probe.fair}
    memory = {"profile": {}, "seed": 0}
    assert probe.choose(_ScoredReplica({"weak": 0.2, "middle": 0.9, "best": 0.5}), proposed, memory) == "middle says"
    assert memory["chosen"] == "middle"
    assert probe.choose(_ScoredReplica({"weak": 1.0, "middle": 1.0, "best": 0.0}), proposed, memory) == "middle says"  # chosen once, kept
    tie = {"profile": {}, "seed": 0}  # weak and the fallback tie at the top: the fallback, whatever the order
    assert probe.choose(_ScoredReplica({"weak": 0.7, "middle": 0.1, "best": 0.7}), proposed, tie) == "best says"
    first = {"profile": {}, "seed": 0}  # two non-fallback policies tie: the first one stays
    assert probe.choose(_ScoredReplica({"weak": 0.8, "middle": 0.8, "best": 0.1}), proposed, first) == "weak says"
    assert probe.choose(None, proposed, {"profile": {}, "seed": 0}) == "best says"  # no game rebuilt: the fallback


def test_a_seed_replay_says_the_proposal_whose_fork_scores_best_after_the_history_so_far():
    from dialogue_gym.probes import SeedReplay

    probe = _selector(SeedReplay, ["weak", "best"])
    proposed = {"weak": ("weak says", {}), "best": ("best says", {})}
    played: list = []
    memory = {"history": ["hello"]}
    assert probe.choose(_ScoredReplica({"weak": 1.0, "best": 0.5}, played), proposed, memory) == "weak says"
    assert played == [(("hello",), "best says"), (("hello",), "weak says")]  # the fallback tried first, each after the history
    assert probe.choose(_ScoredReplica({"weak": 0.5, "best": 0.5}), proposed, memory) == "best says"  # a tie keeps the fallback's
    assert probe.choose(None, proposed, memory) == "best says"


def test_the_snoop_keeps_its_env_kwargs_as_its_own_copy_and_none_as_empty():
    from dialogue_gym.probes import GarbageCollectorSnoop

    kwargs = {"max_agent_turns": 6}
    snoop = GarbageCollectorSnoop("RLADA-Customer-v0", "customer", "direct", "oracle", kwargs)
    kwargs["max_agent_turns"] = 99
    assert snoop.spec == ("RLADA-Customer-v0", "customer", "direct", "oracle", {"max_agent_turns": 6})
    assert GarbageCollectorSnoop("RLADA-Customer-v0", "customer", "direct", "oracle").spec[-1] == {}


def test_a_probe_that_found_no_starts_yet_looks_again_next_turn():
    """candidates() says "not yet" (None) on the first turn and names start 0 on the second: the probe
    must rebuild that start then (and not keep the empty list it filtered on the first turn)."""
    from dialogue_gym.probes import FingerprintMatcher, Replica, role_info

    probe = FingerprintMatcher("RLADA-Customer-v0", "customer", ["direct", "contextual"], starts=12, narrow=3)
    answers = iter([None, [(0, 0)]])
    probe.candidates = lambda memory: next(answers)
    handed: list = []

    def choose(replica, proposed, memory):
        handed.append(None if replica is None else (replica.start, replica.run_seed))
        return proposed[probe.fallback][0]

    probe.choose = choose
    real = Replica(probe.environment, 0, 0)  # the episode the probe is playing: start 0 of an open run
    learner = probe.environment.learner
    memory = probe.start(real.game.role_profile(learner), 0)
    for _ in range(2):
        real.step(probe.act(real.game.observe(learner), role_info(real.game, learner, probe), memory))
    assert handed == [None, (0, 0)]


def test_the_snoop_takes_the_started_game_whose_learner_is_handed_what_it_was_handed_and_no_other():
    from dialogue_gym.probes import FingerprintMatcher, GarbageCollectorSnoop, Replica

    environment = FingerprintMatcher("RLADA-Customer-v0", "customer", ["direct"], starts=1).environment
    decoys = [Replica(environment, start, 0) for start in (1, 2, 3)]  # started games at the customer's turn, other starts
    target = Replica(environment, 5, 0)
    snoop = GarbageCollectorSnoop("RLADA-Customer-v0", "customer", "direct", "oracle")
    assert snoop.live_game(target.game.observe("customer")) is target.game
    assert snoop.live_game({**target.game.observe("customer"), "unseen": True}) is None
    assert all(decoy.game.started for decoy in decoys)


class _Keeper:
    """An inner policy that keeps what its start was handed."""

    def start(self, profile, seed):
        return {"profile": profile, "seed": seed}


def test_the_data_mutator_starts_its_inner_policy_on_a_copy_then_vandalises_the_profile_it_was_handed():
    items, nested = [1, 2], {"c": 3}
    profile = {"a": items, "b": nested}
    memory = DataMutator(_Keeper()).start(profile, 7)
    assert memory == {"profile": {"a": [1, 2], "b": {"c": 3}}, "seed": 7}  # the inner policy's copy is whole
    # the handed profile and everything in it: every value replaced, one key added, a list one longer
    assert profile == {"a": VANDAL, "b": VANDAL, VANDAL: VANDAL}
    assert items == [VANDAL] * 3 and nested == {"c": VANDAL, VANDAL: VANDAL}
