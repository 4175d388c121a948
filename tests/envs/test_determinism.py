"""The same seed gives the same transcript in the single, AEC, parallel and vector views."""

import pytest
from views import play_aec, play_parallel, play_single, play_vector

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import sead_outbound_v0
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.sead.agents import AdaptiveAgent
from dialogue_gym.scenarios.sead.data import load_behaviors
from dialogue_gym.scenarios.sead.scripted_user import ScriptedUser

SEEDS = [0, 1, 2, 3]


def players():
    return {"agent": AdaptiveAgent(), "user": ScriptedUser(load_behaviors())}


def transcript(trajectory):
    return [(turn.role, turn.raw, turn.state) for turn in trajectory.turns], trajectory.outcome


@pytest.mark.parametrize("seed", SEEDS)
def test_single_aec_parallel_agree(seed):
    single = transcript(play_single("SEAD-Outbound-v0", players, "agent", seed))
    assert len(single[0]) >= 2
    assert transcript(play_aec(sead_outbound_v0, players, seed)) == single
    assert transcript(play_parallel(sead_outbound_v0, players, seed)) == single


def test_vector_agrees_with_single():
    singles = [transcript(play_single("SEAD-Outbound-v0", players, "agent", seed)) for seed in SEEDS]
    assert [transcript(t) for t in play_vector("SEAD-Outbound-v0", players, "agent", SEEDS)] == singles


def test_evaluate_agrees_with_single_view():
    trajectory = evaluate("SEAD-Outbound-v0", "adaptive", 1, seed=5)[0]
    options = {"profile": trajectory.profile}
    assert transcript(play_single("SEAD-Outbound-v0", players, "agent", trajectory.seed, options=options)) == transcript(trajectory)
