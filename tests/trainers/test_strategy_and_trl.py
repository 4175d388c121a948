import os

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as sead_metrics
from dialogue_gym.scenarios.sead.acts import analyze
from dialogue_gym.scenarios.sead.parsing import parse_agent_output
from trainers.grpo.strategy import FEATURES, MOVES, StrategyPolicy, features, render


def test_strategy_policy_acts_in_sead_format_and_learns_from_advantages(tmp_path):
    policy = StrategyPolicy(learning_rate=1.0)
    memory = policy.start({}, seed=0)
    observation = {"turn": 0, "messages": [{"role": "user", "content": "(call)"}]}
    move = parse_agent_output(policy.act(observation, memory))
    assert move.problem is None and move.estimate is not None
    active, choice = memory["steps"][0]
    before = policy.probabilities(active)[choice]
    policy.update([policy.record(memory)], [1.0])
    assert policy.probabilities(active)[choice] > before
    policy.save(tmp_path / "run" / "policy")  # a checkpoint folder whose parents do not exist yet
    assert np.array_equal(StrategyPolicy.load(tmp_path / "run" / "policy").weights, policy.weights)


def test_strategy_features_read_only_what_the_agent_sees():
    observation = {"turn": 3, "messages": [{"role": "user", "content": "Ugh. Are there any hidden fees?"}]}
    names = {FEATURES[i] for i in features(observation, {})}
    assert names == {"bias", "middle", "signal:irritated", "cue:cost", "cue:empathy", "steps_0"}
    assert not getattr(StrategyPolicy, "privileged", False)  # the driver never hands it the privileged channel
    with pytest.raises(ConfigError, match="weights must have shape"):
        StrategyPolicy(weights=np.zeros((2, len(MOVES))))


def _owner(memory, line, turn=3):
    """The policy hears one owner line (its only view of the owner)."""
    return {FEATURES[i] for i in features({"turn": turn, "messages": [{"role": "user", "content": line}]}, memory)}


@pytest.mark.parametrize("move", MOVES)
def test_every_move_is_understood_by_the_owner_in_every_phrasing(move):
    """The owner only hears acts in understood sentences and drops monologues: every move, in each of
    its phrasings, must land its acts (the policy could not succeed otherwise, whatever it learns)."""
    memory = StrategyPolicy().start({}, seed=0)
    memory["needs"] = ["cost"]  # what ``answer`` answers: the owner just asked about fees
    expected = {"opening": {"greeting", "identity_check"}, "answer": {"cost"}}
    wanted = set().union(*(expected.get(act, {act}) for act in move.split("+")))
    for _ in range(3):
        recognition = analyze(render(move, memory))
        assert not recognition.confusing and not recognition.monologue, (move, recognition)
        assert wanted <= recognition.acts, (move, recognition.acts)


def test_answer_says_what_the_concern_calls_for_never_a_step_or_a_pitch():
    memory = StrategyPolicy().start({}, seed=0)
    _owner(memory, "Wait, are you a real person or a robot?")
    assert analyze(render("answer", memory)).acts == {"ai_disclosure"}
    _owner(memory, "Alright, so what do I need to do?")
    assert analyze(render("answer", memory)).acts == {"empathy"}  # readiness is for the policy to act on
    assert memory["said"] >= {"ai_disclosure", "empathy"}


def test_guide_walks_the_owner_through_the_steps_in_the_order_it_confirms_them():
    """The old policy never tracked the owner's confirmations and gave "open the app" forever, which
    the owner answers with "I did that already": CR 0 at every iteration."""
    memory = StrategyPolicy().start({}, seed=0)
    assert {"ready", "steps_0"} <= _owner(memory, "Alright, so what do I need to do?")
    assert analyze(render("guide", memory)).steps == ("open_app",)
    assert {"ready", "steps_1"} <= _owner(memory, "Okay, the app is open. Okay, what's next?")
    assert analyze(render("simplify+guide", memory)).steps == ("tap_entry",)
    assert "steps_2" in _owner(memory, "Okay, I tapped 'get more exposure'.")
    first = render("guide", memory)
    assert "signal:stuck" in _owner(memory, "Hmm, wait, let me look at this screen again.")
    again = render("guide", memory)
    assert analyze(first).steps == analyze(again).steps == ("claim",) and again != first  # rephrased, not repeated
    assert "last:guide" in _owner(memory, "Uh-huh.") and "quiet" in _owner(memory, "Uh-huh.")


def _weights(preferences):
    weights = np.zeros((len(FEATURES), len(MOVES)))
    for feature, move, value in preferences:
        weights[FEATURES.index(feature), MOVES.index(move)] += value
    return weights


HAND_STRATEGY = (
    ("first_turn", "opening", 20), ("ready", "guide", 20), ("signal:stuck", "simplify+guide", 20),
    *((f"cue:{act}", "answer", 8) for act in ("ai_disclosure", "evidence", "cost", "rules", "value", "confirm", "simplify", "empathy", "respect_time")),
    ("bias", "empathy+value", 2), ("said:value", "empathy+value", -3), ("said:value", "evidence", 1.5),
    ("said:evidence", "evidence", -2), ("said:evidence", "cost", 2), ("said:cost", "cost", -4), ("said:cost", "rules", 2.5),
    ("said:rules", "rules", -4), ("said:rules", "ask_readiness", 3), ("signal:not_agreed", "empathy+value", 5),
)
"""A strategy written by hand in the policy's own features and moves: identity check first, answer
concerns, pitch value -> evidence -> cost -> rules, walk the owner through the claim when it asks."""


def test_a_good_call_is_within_the_policys_reach_and_the_uniform_policy_is_not_one():
    """What the trainer can find at best: the hand strategy reaches a real completion rate against
    the scripted owner (about the adaptive baseline's 0.60), the untrained (uniform) policy almost
    none. A move set or feature set the owner does not understand fails here, before any training."""
    hand = sead_metrics.cr(evaluate("SEAD-Outbound-v0", StrategyPolicy(greedy=True, weights=_weights(HAND_STRATEGY)), 300, seed=10_000))
    uniform = sead_metrics.cr(evaluate("SEAD-Outbound-v0", StrategyPolicy(), 300, seed=10_000))
    assert hand >= 0.45 and uniform <= 0.05, (hand, uniform)


def test_trl_grpo_trainer_runs_two_steps_with_the_sead_rollout(tiny_model_dir, tmp_path):
    pytest.importorskip("trl")
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from dialogue_gym.rewards.sead import outcome_reward
    from trainers.sead.trl_rollout import call_prompt, make_rollout_func

    rollout = make_rollout_func(max_agent_turns=2, max_new_tokens=8)
    seen = []

    def spy(prompts, trainer):
        output = rollout(prompts, trainer)
        seen.append(output)
        return output

    args = GRPOConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=2, max_steps=2, max_completion_length=64,
        report_to=[], use_cpu=True, learning_rate=1e-4, save_strategy="no", logging_steps=1,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)), reward_funcs=[outcome_reward], args=args,
        train_dataset=Dataset.from_list([{"prompt": call_prompt(i)} for i in range(8)]),
        processing_class=AutoTokenizer.from_pretrained(str(tiny_model_dir)), rollout_func=spy,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    output = seen[0]
    assert len(output["completion_ids"]) == 4 and set(output["outcome"]) <= {"success", "hangup", "timeout", "invalid", "truncated"}
    for ids, mask, logprobs in zip(output["completion_ids"], output["env_mask"], output["logprobs"]):
        assert len(ids) == len(mask) == len(logprobs) and mask[0] == 1
        assert all(lp == 0.0 for lp, m in zip(logprobs, mask) if m == 0)
    assert any(0 in mask for mask in output["env_mask"])  # user tokens are in the sequence, masked out


def test_the_strategy_agent_estimates_from_the_owners_last_words_only():
    # Its UPA estimate follows the adaptive tracker over what the owner just said: the owner's
    # annoyance ("ugh", emotion -1) and doubt ("scam", trust -1) move it; the agent's own words ("I
    # promise", a trust cue if it were read) and the owner's earlier words do not.
    policy = StrategyPolicy(greedy=True)
    memory = policy.start({}, seed=0)
    messages = [{"role": "system", "content": "You are calling."}, {"role": "user", "content": "Okay, that answers it."}]
    first = parse_agent_output(policy.act({"messages": messages, "turn": 1}, memory)).estimate
    messages = [*messages, {"role": "assistant", "content": "I promise this is not a scam."}, {"role": "user", "content": "Ugh, is this a scam?"}]
    second = parse_agent_output(policy.act({"messages": messages, "turn": 2}, memory)).estimate
    assert tuple(first) == (2, 2, 3) and tuple(second) == (2, 1, 2)


def test_one_update_by_hand_gradient_step_and_statistics():
    # Zero weights: every move has probability 1/M. Two episodes, one move each on feature 0:
    # A = +1 for move 0, A = -0.5 for move 1. Gradient row 0 = 1 * (e_0 - u) - 0.5 * (e_1 - u) with u = 1/M,
    # i.e. 1 - 0.5/M at move 0, -0.5 - 0.5/M at move 1, -0.5/M elsewhere; the step is lr * gradient / 2.
    moves = len(MOVES)
    policy = StrategyPolicy(learning_rate=0.4, weights=np.zeros((len(FEATURES), moves)))
    stats = policy.update([{"steps": [[[0], 0]]}, {"steps": [[[0], 1]]}], [1.0, -0.5])
    row = np.full(moves, -0.5 / moves)
    row[0], row[1] = 1 - 0.5 / moves, -0.5 - 0.5 / moves
    assert np.allclose(policy.weights[0], 0.4 * row / 2) and not policy.weights[1:].any()
    assert stats["loss/policy_gradient_norm"] == pytest.approx(np.linalg.norm(row) / 2)
    assert stats["policy/entropy"] == pytest.approx(np.log(moves))  # the mean entropy of the two uniform moves
    assert StrategyPolicy().update([{"steps": []}], [1.0])["policy/entropy"] == 0.0
    # one episode: the step and the norm are not halved
    single = StrategyPolicy(learning_rate=0.4, weights=np.zeros((len(FEATURES), moves)))
    stats = single.update([{"steps": [[[0], 0]]}], [1.0])
    alone = np.full(moves, -1 / moves)
    alone[0] = 1 - 1 / moves
    assert np.allclose(single.weights[0], 0.4 * alone) and stats["loss/policy_gradient_norm"] == pytest.approx(np.linalg.norm(alone))
    assert stats["policy/entropy"] == pytest.approx(np.log(moves))


def test_a_saved_policy_with_other_moves_is_refused_and_describe_lists_three(tmp_path):
    import json

    policy = StrategyPolicy()
    policy.save(tmp_path)
    saved = json.loads((tmp_path / "strategy.json").read_text())
    (tmp_path / "strategy.json").write_text(json.dumps({**saved, "moves": [*saved["moves"][:-1], "sing"]}))  # same features
    with pytest.raises(ConfigError, match=r"saved strategy policy has other features/moves than this version; retrain it\."):
        StrategyPolicy.load(tmp_path)
    assert all(len(moves) == 3 for moves in policy.describe().values())


@pytest.mark.parametrize(
    "turn, phase", [(1, "early"), (2, "early"), (3, "middle"), (5, "middle"), (6, "late"), (15, "late")]
)
def test_the_turn_phase_features_at_their_edges(turn, phase):
    names = {FEATURES[i] for i in features({"turn": turn, "messages": [{"role": "user", "content": "Okay."}]}, {})}
    assert phase in names and not ({"early", "middle", "late"} - {phase}) & names


def test_steps_confirmed_saturate_at_two():
    observation = {"turn": 4, "messages": [{"role": "user", "content": "Okay."}]}
    assert "steps_2" in {FEATURES[i] for i in features(observation, {"steps_done": 3})}


def test_learning_rate_default_bound_and_describe_order():
    assert StrategyPolicy().learning_rate == 0.5
    with pytest.raises(ConfigError, match=r"^learning_rate must be > 0, got 0\.0\.$"):
        StrategyPolicy(learning_rate=0.0)
    weights = np.zeros((len(FEATURES), len(MOVES)))
    weights[FEATURES.index("bias"), 4] = 2.0
    weights[FEATURES.index("bias"), 1] = 1.0
    assert StrategyPolicy(weights=weights).describe()["bias"][:2] == [MOVES[4], MOVES[1]]
