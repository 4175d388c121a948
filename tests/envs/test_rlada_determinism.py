"""RL-ADA: the same seed gives the same transcript in the single, AEC, parallel and vector views and in evaluate()."""

import pytest
import views

import dialogue_gym  # noqa: F401
from dialogue_gym.envs import rlada_banking_v0
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.rlada.agents import KeywordRouterAgent
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer
from dialogue_gym.scenarios.rlada.data import load_domain

SEEDS = [0, 1, 2, 3, 4]
DOMAIN = load_domain()


def play_single(seed):
    return transcript(views.play_single("RLADA-Banking-v0", players, "agent", seed))


def players():
    return {"agent": KeywordRouterAgent(DOMAIN), "customer": ScriptedCustomer(DOMAIN)}


def transcript(trajectory):
    return [(turn.role, turn.raw) for turn in trajectory.turns], trajectory.outcome, trajectory.rewards


@pytest.mark.parametrize("seed", SEEDS)
def test_single_aec_and_parallel_agree(seed):
    reference = play_single(seed)
    assert len(reference[0]) >= 4
    assert transcript(views.play_aec(rlada_banking_v0, players, seed)) == reference
    assert transcript(views.play_parallel(rlada_banking_v0, players, seed)) == reference


def test_vector_and_evaluate_agree_with_single():
    singles = [play_single(seed) for seed in SEEDS]
    assert [transcript(t) for t in views.play_vector("RLADA-Banking-v0", players, "agent", SEEDS)] == singles
    assert len({str(s) for s in singles}) == len(SEEDS)
    evaluated = evaluate("RLADA-Banking-v0", "keyword", 6, seed=7)
    again = evaluate("RLADA-Banking-v0", "keyword", 6, seed=7, batch_size=2)
    assert [transcript(t) for t in evaluated] == [transcript(t) for t in again]
