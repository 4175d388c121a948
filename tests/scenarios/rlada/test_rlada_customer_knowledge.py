"""The RL-ADA customer is not handed ``bank_seed`` (issue 42, item 7): with it a customer policy
rebuilt the whole simulated bank and replayed its own episode against the deterministic ``keyword``
agent (+0.17 customer reward). Written as the attack: a customer that searches everything it is
handed for the seed finds nothing, and one that rebuilds its episode from what it was handed gets
another bank. The seed stays where metrics and oracles read it (episode profile, privileged channel,
trajectory)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.evaluation import evaluate, make_learner_env
from dialogue_gym.game import PRIVILEGED_INFO_KEY
from dialogue_gym.scenarios.rlada.game import CUSTOMER_UNKNOWN

EPISODES = 8


def leaks(value, secret: int, path: str = "") -> list[str]:
    """Where ``value`` holds a ``bank_seed`` key, the seed as a number, or its digits inside a string."""
    found = []
    if isinstance(value, dict):
        for key, child in value.items():
            if str(key) in CUSTOMER_UNKNOWN:
                found.append(f"{path}.{key}")
            found += leaks(child, secret, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, child in enumerate(value):
            found += leaks(child, secret, f"{path}[{index}]")
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int) and value == secret or isinstance(value, str) and str(secret) in value:
        found.append(path)
    return found


class SeedSnoop:
    """Plays the scripted customer and keeps everything it is handed, to search it afterwards."""

    def __init__(self, env_id: str):
        environment = make_learner_env(env_id, "customer", {})
        self.inner = environment.make_role_policy("customer", "scripted")
        self.handed: list = []

    def start(self, profile, seed):
        self.handed.append(("start", profile, seed))
        return self.inner.start(profile, seed)

    def act_batch(self, observations, infos, memories):
        self.handed.append(("act", list(observations), list(infos)))
        return self.inner.act_batch(observations, infos, memories)


@pytest.mark.parametrize("env_id", ["RLADA-Customer-v0", "RLADA-Banking-v0"])
def test_a_customer_that_searches_what_it_is_handed_for_the_bank_seed_finds_nothing(env_id):
    snoop = SeedSnoop(env_id)
    trajectories = evaluate(env_id, snoop, EPISODES, 0, learner="customer", batch_size=4)
    seeds = {trajectory.profile["bank_seed"] for trajectory in trajectories}
    assert len(seeds) == EPISODES, "metrics still read each episode's bank_seed from the trajectory"
    starts = [entry for entry in snoop.handed if entry[0] == "start"]
    assert len(starts) == EPISODES and all("intent" in profile and "facts" in profile for _, profile, _ in starts)
    for secret in seeds:
        assert leaks(snoop.handed, secret) == [], f"bank_seed {secret} reached the customer policy"


def test_the_gym_views_of_the_customer_hold_no_bank_seed_but_the_privileged_channel_does():
    environment = gym.make("RLADA-Customer-v0", disable_env_checker=True).unwrapped
    observation, info = environment.reset(seed=7, options={"scenario": "dispute_duplicate", "profile": {"bank_seed": 123456789}})
    game = environment.game
    assert leaks([observation, info, game.observe("customer"), game.info("customer"), game.role_profile("customer")], 123456789) == []
    assert game.episode_profile()["bank_seed"] == 123456789
    assert game.privileged()["profile"]["bank_seed"] == 123456789


def test_an_oracle_customer_still_gets_the_whole_profile():
    class Oracle(SeedSnoop):
        privileged = True

    oracle = Oracle("RLADA-Customer-v0")
    trajectories = evaluate("RLADA-Customer-v0", oracle, 2, 0, learner="customer")
    handed = [profile["bank_seed"] for kind, profile, _ in oracle.handed if kind == "start"]
    assert handed == [trajectory.profile["bank_seed"] for trajectory in trajectories]
    infos = [info for kind, _, infos in oracle.handed if kind == "act" for info in infos]
    assert infos and all(PRIVILEGED_INFO_KEY in info for info in infos)


def test_a_customer_that_replays_its_episode_from_what_it_was_handed_rebuilds_another_bank():
    """The replay attack: reset a copy of the game with the handed profile. Without the seed the copy
    draws its own bank, so the agent it would simulate sees another customer and account."""
    environment = gym.make("RLADA-Customer-v0", disable_env_checker=True).unwrapped
    environment.reset(seed=3, options={"scenario": "dispute_duplicate", "profile": {"bank_seed": 5}})
    real = environment.game
    copy_ = real.spawn()
    copy_.reset(seed=3, options={"profile": real.role_profile("customer")})
    assert copy_.episode_profile()["bank_seed"] != 5
    assert copy_.observe("agent")["messages"][0]["content"] != real.observe("agent")["messages"][0]["content"]
    assert copy_.episode_profile()["facts"] == real.episode_profile()["facts"], "what the customer knows is kept"
