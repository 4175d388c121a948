"""SEAD trainer helpers pinned without a training run (issue 43 item 6, trainers/sead/train.py): a
held-out evaluation plays greedily and gives the policy back as it was, the curriculum metric counts
states seen, a plan saved for another iteration is not replayed, and the baseline bar is the best fair
agent."""

from __future__ import annotations

from dialogue_gym.curriculum import ProfileController
from dialogue_gym.evaluation import evaluate
from trainers.common import RunDir
from trainers.grpo.strategy import StrategyPolicy
from trainers.sead import train as sead_train
from trainers.sead.config import build_config

SMALL = {"eval_episodes": 3, "max_agent_turns": 3, "batch_size": 2}


class Watched(StrategyPolicy):
    """A strategy policy that notes whether it was greedy at each move."""

    def act_batch(self, observations, infos, memories):
        self.seen = [*getattr(self, "seen", []), self.greedy]
        return super().act_batch(observations, infos, memories)


def test_a_held_out_evaluation_plays_greedily_and_restores_sampling():
    config = build_config(**SMALL)
    policy = Watched(greedy=False)
    assert len(sead_train.held_out_trajectories(config, policy, "held-out")) == 3
    assert policy.seen and all(policy.seen) and policy.greedy is False  # the next iteration's rollouts sample again
    sampled = Watched(greedy=True)
    sead_train.held_out_trajectories(config, sampled, "held-out", greedy=False)
    assert not any(sampled.seen) and sampled.greedy is True


def test_seen_states_counts_the_states_drawn_at_least_once():
    controller = ProfileController(batch_size=2)
    controller.counts[:] = 0
    controller.counts[[0, 5]] = [3, 1]  # four draws of two states
    trajectories = evaluate("SEAD-Outbound-v0", "sop", 2, seed=0, env_kwargs={"max_agent_turns": 3})
    assert sead_train.iteration_metrics(7, trajectories, controller, {"x": 1.0})["curriculum/seen_states"] == 2


def test_a_plan_saved_for_another_iteration_is_not_replayed(tmp_path):
    config = build_config(**SMALL, run_dir=str(tmp_path / "run"))
    controller = ProfileController(batch_size=2)
    with RunDir.create(config.run_dir, config.to_dict()) as run:
        profiles = controller.sample()
        run.save_state("plan", {"iteration": 3, "profiles": profiles, "controller": controller.state_dict()})
        assert sead_train.load_plan(run, ProfileController(batch_size=2), 4) is None
        assert sead_train.load_plan(run, ProfileController(batch_size=2), 3) == profiles


def test_the_baseline_bar_is_the_best_fair_agent():
    result = sead_train.baseline_evaluation(build_config(eval_episodes=12))
    rates = result["cr_per_agent"]
    assert set(rates) == {"sop", "random", "adaptive"} and len(set(rates.values())) > 1  # the agents differ on these starts
    assert result["agent"] == max(rates, key=rates.get) and result["cr"] == max(rates.values())
