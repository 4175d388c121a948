"""What a sealed run takes from its seal (issue 43, item 6): the order of its starts, their reset
options and the episode seeds all come from the secret, never from the public seed; each role gets a
role seed of its own; the seal's inputs cannot run into each other; and no trajectory, ``--out`` line or
printed line carries the secret before the run has ended."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.cli import main
from dialogue_gym.envs.driver import CounterpartDriver, role_seed
from dialogue_gym.evaluation import EvaluationOrder, episode_seed, evaluate, make_learner_env
from dialogue_gym.sealing import Seal

SECRET = "00112233445566778899aabbccddeeff"
SEAL = Seal.parse(SECRET)


def keyed(*parts: str) -> int:
    """The seed function written out from its documentation: BLAKE2b-64 keyed with the secret over the
    parts joined by the unit separator, the top 63 bits."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), key=bytes.fromhex(SECRET), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def test_every_seed_is_the_documented_keyed_function_so_a_published_secret_replays_forever():
    """A secret printed today must replay the same episodes in every later version: the seeds are
    pinned to the formula, not only to themselves."""
    assert SEAL.run_seed == keyed("run")
    assert SEAL.episode_seed(3, 1) == keyed("episode", "3", "1") != keyed("episode", "1", "3") == SEAL.episode_seed(1, 3)
    assert SEAL.role_seed(12345, 1) == keyed("role", "12345", "1")
    assert SEAL.run_seed not in {SEAL.episode_seed(0, 0), SEAL.seed("run", 0)}


@pytest.mark.parametrize(
    "one, other",
    [((1, 23), (12, 3)), (("ab", "c"), ("a", "bc")), (("episode", 1, 23), ("episode", 12, 3)), (("role", 11, 1), ("role", 1, 11))],
)
def test_the_seals_inputs_are_separated_so_two_part_lists_never_share_a_seed(one, other):
    assert SEAL.seed(*one) != SEAL.seed(*other)
    assert SEAL.episode_seed(1, 23) != SEAL.episode_seed(12, 3)


def test_a_sealed_runs_order_options_and_episode_seeds_all_come_from_the_seal():
    """Each is checked against the seal and shown to differ from what the public seed (0, the only one
    allowed beside sealing) would give, so a run that took any of them from the seed fails here."""
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 12, unseal=SECRET, repeats=2)
    game = make_learner_env("SEAD-Outbound-v0", "agent", {}).game
    strata = game.evaluation_strata()
    sealed_order, open_order = EvaluationOrder(strata, SEAL.run_seed).starts(12), EvaluationOrder(strata, 0).starts(12)
    assert sealed_order != open_order
    assert [(t.meta["start"], t.meta["repeat"]) for t in trajectories] == [(start, r) for start in sealed_order for r in (0, 1)]
    for trajectory in trajectories:
        start, repeat = trajectory.meta["start"], trajectory.meta["repeat"]
        assert trajectory.seed == SEAL.episode_seed(start, repeat) != episode_seed(0, start, repeat)
        assert trajectory.profile == game.evaluation_options(start, SEAL.run_seed)["profile"]
    assert sum(t.profile != game.evaluation_options(t.meta["start"], 0)["profile"] for t in trajectories) >= 12


class SeedSpy:
    """Plays nothing; records the seed its ``start`` gets."""

    def __init__(self) -> None:
        self.seeds: list[int] = []

    def start(self, profile, seed):
        self.seeds.append(seed)

    def act_batch(self, observations, infos, memories):
        raise AssertionError("never asked to move here")


def test_each_role_of_a_sealed_run_gets_a_role_seed_of_its_own_keyed_by_the_secret():
    game = make_learner_env("SEAD-Outbound-v0", "agent", {}).game.spawn()
    spies = {role: SeedSpy() for role in game.roles}
    driver = CounterpartDriver(spies, learner=None, seal=SEAL)
    for seed in (5, 6):
        game.reset(seed=seed, options=game.evaluation_options(0, 0))
        driver.start(game)
    for index, role in enumerate(game.roles):
        assert spies[role].seeds == [SEAL.role_seed(5, index), SEAL.role_seed(6, index)]
        assert not set(spies[role].seeds) & {role_seed(seed, role, game.roles) for seed in (5, 6)}  # not the open, invertible one
    assert len({seed for spy in spies.values() for seed in spy.seeds}) == 2 * len(game.roles)


def test_no_trajectory_or_out_line_carries_the_secret_before_the_run_ends(tmp_path):
    """While the run goes on (each ``on_episode`` call) neither the episode handed over nor the
    ``out`` file holds the secret; the returned trajectories carry it once the run has ended."""
    out = tmp_path / "run.jsonl"
    seen = []

    def on_episode(trajectory):
        assert SECRET not in trajectory.to_json() and "secret" not in trajectory.meta
        assert SECRET not in out.read_text()
        seen.append(trajectory.meta["start"])

    trajectories = evaluate("SEAD-Outbound-v0", "sop", 6, unseal=SECRET, out=out, on_episode=on_episode, batch_size=2)
    assert len(seen) == 6 and all(t.meta["secret"] == SECRET for t in trajectories)
    lines = out.read_text().splitlines()
    assert len(lines) == 6 and SECRET not in out.read_text()
    assert all(json.loads(line)["meta"]["sealed"] is True for line in lines)


def test_the_cli_prints_the_secret_only_in_its_last_line_and_never_into_the_out_file(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert main(["eval", "SEAD-Outbound-v0", "--episodes", "4", "--quiet", "--bootstrap", "0", "--sealed", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    secret = re.search(r"its secret: ([0-9a-f]{32})", printed.out).group(1)
    lines = printed.out.rstrip("\n").splitlines()
    assert [i for i, line in enumerate(lines) if secret in line] == [len(lines) - 1]
    assert secret not in printed.err and secret not in out.read_text()
    assert len(out.read_text().splitlines()) == 4
