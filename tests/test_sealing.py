"""Sealed evaluation (issue 32, items 2, 3 and 6): seeds from a secret no policy can recover, revealed
when the run ends, and a run replayed exactly from its secret."""

from __future__ import annotations

import dataclasses

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.envs.driver import role_seed
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.sead.policies import make_policy
from dialogue_gym.sealing import SECRET_BYTES, Seal
from dialogue_gym.simulators.base import ScriptedPolicy

SECRET = "0123456789abcdef" * 2


class Spy(ScriptedPolicy):
    """Plays SEAD's ``sop`` agent and records the text of everything it is handed."""

    def __init__(self) -> None:
        self.sop = make_policy("agent", "sop", None)
        self.seen: list[str] = []
        self.seeds: list[int] = []

    def start(self, profile, seed):
        self.seen.append(repr((profile, seed)))
        self.seeds.append(seed)
        return self.sop.start(profile, seed)

    def act_batch(self, observations, infos, memories):
        self.seen.extend(repr(item) for item in (*observations, *infos))
        return self.sop.act_batch(observations, infos, memories)


def played(trajectories) -> list[str]:
    """The episodes as strict JSON, without the secret (which only an ended run carries)."""
    for trajectory in trajectories:
        trajectory.meta.pop("secret", None)
    return [trajectory.to_json() for trajectory in trajectories]


def test_an_unsealed_run_replays_the_sealed_one_and_another_secret_plays_other_episodes():
    first = evaluate("SEAD-Outbound-v0", "sop", 8, sealed=True)
    secret = first[0].meta["secret"]
    assert all(t.meta["sealed"] and t.meta["secret"] == secret for t in first)
    assert played(evaluate("SEAD-Outbound-v0", "sop", 8, unseal=secret)) == played(first)
    other = evaluate("SEAD-Outbound-v0", "sop", 8, sealed=True)
    assert other[0].meta["secret"] != secret
    assert not {t.seed for t in first} & {t.seed for t in other}
    assert [t.profile for t in first] != [t.profile for t in other]


def test_an_open_run_plays_the_seeds_it_always_played():
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 4, 7)
    assert sorted(t.seed for t in trajectories) == [7 + t.meta["start"] for t in sorted(trajectories, key=lambda t: t.seed)]
    assert not any("sealed" in t.meta or "secret" in t.meta for t in trajectories)


def test_no_policy_sees_the_secret_or_a_seed_it_could_invert():
    spy = Spy()
    trajectories = evaluate("SEAD-Outbound-v0", spy, 6, unseal=SECRET, batch_size=2)
    seal = Seal.parse(SECRET)
    seen = "\n".join(spy.seen)
    for secret_number in (SECRET, str(seal.run_seed), *(str(t.seed) for t in trajectories)):
        assert secret_number not in seen
    assert set(spy.seeds) == {seal.role_seed(t.seed, 0) for t in trajectories}
    assert not set(spy.seeds) & {role_seed(t.seed, "agent", ("agent", "user")) for t in trajectories}
    assert SECRET not in repr(seal) and SECRET not in str(seal)


@pytest.mark.parametrize(
    "value, shown",
    [("abc", "'abc'"), ("g" * 32, "'gggg"), (SECRET + "00", SECRET), (123, "int: 123"), (None, "NoneType")],
)
def test_a_malformed_secret_is_a_config_error_naming_it_and_where_the_secret_is(value, shown):
    with pytest.raises(ConfigError, match=rf"--unseal needs the secret of a sealed run: {2 * SECRET_BYTES} hexadecimal digits") as caught:
        Seal.parse(value)
    assert shown in str(caught.value) and "provenance['secret']" in str(caught.value)


def test_a_secret_is_read_back_in_either_case_and_with_spaces_around():
    assert Seal.parse(f"  {SECRET.upper()}\n").hex == SECRET


def test_a_seed_beside_sealing_is_refused_and_sealed_must_be_a_bool():
    with pytest.raises(ConfigError, match=r"seed=3 \(--seed\) has no effect on a sealed run"):
        evaluate("SEAD-Outbound-v0", "sop", 1, 3, sealed=True)
    with pytest.raises(ConfigError, match=r"seed=3 \(--seed\) has no effect on a sealed run"):
        evaluate("SEAD-Outbound-v0", "sop", 1, 3, unseal=SECRET)
    with pytest.raises(ConfigError, match=r"sealed must be True or False, got str: 'yes'"):
        evaluate("SEAD-Outbound-v0", "sop", 1, sealed="yes")
    with pytest.raises(ConfigError, match=r"unseal \(--unseal\) needs the secret"):
        evaluate("SEAD-Outbound-v0", "sop", 1, unseal="nope")


def test_seeds_are_keyed_by_the_secret():
    one, two = Seal.parse(SECRET), Seal.parse("f" * 32)
    assert one.episode_seed(0, 0) != two.episode_seed(0, 0)
    assert one.episode_seed(0, 0) == Seal.parse(SECRET).episode_seed(0, 0) < 2**63
    assert len({one.episode_seed(start, repeat) for start in range(50) for repeat in range(3)}) == 150
    assert len(Seal.draw().secret) == SECRET_BYTES and Seal.draw() != Seal.draw()
    assert max(one.episode_seed(start, 0) for start in range(64)) >= 2**62  # 63 bits, like mix_seed
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.secret = b"\0" * SECRET_BYTES
