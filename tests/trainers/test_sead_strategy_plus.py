"""The cpu-strategy-plus agent: hand-checked features of a short call, no hidden state read, every
move understood by the owner, the two-step walkthrough, persistence, the preset and the seeds CLI."""

import copy
import json

import gymnasium as gym
import numpy as np
import pytest

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.errors import ConfigError
from dialogue_gym.game import PRIVILEGED_INFO_KEY, is_privileged
from dialogue_gym.scenarios.sead.acts import analyze
from dialogue_gym.scenarios.sead.parsing import parse_agent_output
from dialogue_gym.types import Trajectory, Turn
from trainers.grpo.strategy import MOVES
from trainers.sead import seeds
from trainers.sead.config import build_config
from trainers.sead.strategy_plus import FEATURES_PLUS, MOVES_PLUS, StrategyPlusPolicy, features_plus, render_plus
from trainers.sead.train import train


def _heard(memory, turn, line):
    observation = {"turn": turn, "messages": [{"role": "user", "content": line}]}
    return {FEATURES_PLUS[i] for i in features_plus(observation, memory)}


def test_features_of_a_short_call_by_hand():
    memory = StrategyPlusPolicy().start({}, seed=0)
    # Before the owner says anything: only the prior estimate (2, 2, 2), whose trust 2 reads as doubtful.
    assert _heard(memory, 0, "(call)") == {"bias", "first_turn", "steps_0", "estimate:doubtful"}
    render_plus("opening", memory)
    # "Ugh." lowers the estimated emotion 2 -> 1 (upset) and is the first push-back.
    assert _heard(memory, 1, "Ugh. Are there any hidden fees?") == {
        "bias", "early", "turn_1", "steps_0", "last:opening", "cue:cost", "cue:empathy", "signal:irritated",
        "estimate:doubtful", "estimate:upset", "pushback_1",
    }
    assert analyze(render_plus("answer2", memory)).acts == {"cost", "empathy"}  # both cues answered, as adaptive does
    # The same concern again: the answer did not settle it; a second push-back; emotion estimate 1 -> 0.
    assert _heard(memory, 2, "Look, are there any hidden fees?") == {
        "bias", "early", "turn_2", "steps_0", "last:answer2", "cue:cost", "cue:empathy", "signal:irritated",
        "estimate:doubtful", "estimate:upset", "pushback_2+", "concern_again", "said:cost", "said:empathy",
    }
    assert memory["estimate"] == [2, 0, 2]
    assert analyze(render_plus("guide2", memory)).steps == ("open_app", "tap_entry")
    assert _heard(memory, 3, "Okay, the app is open. Okay, I tapped 'get more exposure'.") == {
        "bias", "middle", "steps_2", "last:guide2", "cue:guide", "estimate:doubtful", "estimate:upset", "pushback_2+",
        "said:cost", "said:empathy", "steps_given",
    }
    assert analyze(render_plus("guide2", memory)).steps == ("claim",)  # only the claim is left


def test_the_features_read_no_hidden_state():
    """Played against the real owner, every turn's features and action are the same whether or not the
    privileged channel (the true state, the profile) is put into the observation and the info."""
    policy = StrategyPlusPolicy(greedy=True, weights=np.random.default_rng(0).normal(size=(len(FEATURES_PLUS), len(MOVES_PLUS))))
    assert not is_privileged(policy)
    env = gym.make("SEAD-Outbound-v0", disable_env_checker=True)
    observation, info = env.reset(seed=3)
    memory = policy.start({}, seed=3)
    turns = 0
    while True:
        assert PRIVILEGED_INFO_KEY not in info and "state" not in observation
        privileged = env.unwrapped.game.privileged()
        leaky = {**observation, "state": privileged["user_state"], PRIVILEGED_INFO_KEY: privileged}
        assert features_plus(leaky, copy.deepcopy(memory)) == features_plus(observation, copy.deepcopy(memory))
        blind, told = copy.deepcopy(memory), copy.deepcopy(memory)
        action = policy.act_batch([observation], [info], [blind])[0]
        assert action == policy.act_batch([leaky], [{PRIVILEGED_INFO_KEY: privileged}], [told])[0]
        memory = blind
        observation, _, terminated, truncated, info = env.step(action)
        turns += 1
        if terminated or truncated:
            break
    assert turns >= 2


@pytest.mark.parametrize("move", MOVES_PLUS[len(MOVES):])
def test_every_added_move_is_understood_in_every_phrasing(move):
    memory = StrategyPlusPolicy().start({}, seed=0)
    memory["needs"] = ["cost", "evidence"]  # what answer2 answers: the owner asked about fees and proof
    expected = {"answer2": {"cost", "evidence"}, "guide2": {"guide"}}
    wanted = set().union(*(expected.get(act, {act}) for act in move.split("+")))
    for _ in range(3):
        recognition = analyze(render_plus(move, memory))
        assert not recognition.confusing and not recognition.monologue, (move, recognition)
        assert wanted <= recognition.acts, (move, recognition.acts)


def test_acts_in_sead_format_saves_loads_and_rejects_a_wrong_file(tmp_path):
    policy = StrategyPlusPolicy(learning_rate=1.0, entropy_coef=0.03)
    memory = policy.start({}, seed=0)
    opening = parse_agent_output(policy.act({"turn": 0, "messages": [{"role": "user", "content": "(call)"}]}, memory))
    assert opening.problem is None and opening.estimate == (2, 2, 2) and memory["steps"] == []  # the SOP's opening, not learned
    assert {"greeting", "identity_check"} <= analyze(opening.utterance).acts
    move = parse_agent_output(policy.act({"turn": 1, "messages": [{"role": "user", "content": "Ugh."}]}, memory))
    assert move.problem is None and move.estimate == (2, 1, 2)
    active, choice = memory["steps"][0]
    before = policy.probabilities(active)[choice]
    policy.update([policy.record(memory)], [1.0])
    assert policy.probabilities(active)[choice] > before
    policy.save(tmp_path)
    loaded = StrategyPlusPolicy.load(tmp_path)
    assert np.array_equal(loaded.weights, policy.weights) and loaded.entropy_coef == 0.03
    data = json.loads((tmp_path / "strategy.json").read_text())
    (tmp_path / "strategy.json").write_text(json.dumps({**data, "moves": list(MOVES)}))
    with pytest.raises(ConfigError, match="other features/moves than this version; retrain it"):
        StrategyPlusPolicy.load(tmp_path)
    with pytest.raises(ConfigError, match=r"weights must have shape \(\d+, 27\), got \(2, 27\)"):
        StrategyPlusPolicy(weights=np.zeros((2, len(MOVES_PLUS))))


def test_entropy_bonus_is_the_entropy_gradient_and_off_by_default():
    """With zero advantages the update is the entropy step alone: lr * coef * dH/dw, checked against
    finite differences of the entropy of the moves at the recorded features."""
    weights = np.random.default_rng(1).normal(size=(len(FEATURES_PLUS), len(MOVES_PLUS)))
    active = [0, 5, 9]
    record = {"steps": [[active, 2]]}
    plain = StrategyPlusPolicy(0.5, weights=weights)
    plain.update([record], [0.0])
    assert np.array_equal(plain.weights, weights)

    def entropy(w):
        probabilities = StrategyPlusPolicy(weights=w).probabilities(active)
        return -float((probabilities * np.log(probabilities)).sum())

    numeric = np.zeros_like(weights)
    for row in active:
        for column in range(len(MOVES_PLUS)):
            step = np.zeros_like(weights)
            step[row, column] = 1e-6
            numeric[row, column] = (entropy(weights + step) - entropy(weights - step)) / 2e-6
    bonus = StrategyPlusPolicy(0.5, weights=weights, entropy_coef=0.1)
    bonus.update([record], [0.0])
    assert np.allclose(bonus.weights - weights, 0.5 * 0.1 * numeric, atol=1e-8)
    assert entropy(bonus.weights) > entropy(weights)
    with pytest.raises(ConfigError, match="entropy_coef must be >= 0, got -1"):
        StrategyPlusPolicy(entropy_coef=-1)


def test_preset_smoke_trains_and_checkpoints_the_plus_policy(tmp_path):
    run = train(build_config("cpu-strategy-plus", iterations=2, batch_size=10, eval_episodes=12, plots=False, run_dir=str(tmp_path / "run")))
    assert [row["iteration"] for row in run.read_metrics()] == [0, 1]
    assert StrategyPlusPolicy.load(run.path / "checkpoints" / "iter_0001").weights.shape == (len(FEATURES_PLUS), len(MOVES_PLUS))
    assert 0.0 <= run.load_state("eval")["cr"] <= 1.0
    with pytest.raises(ConfigError, match="policy='plus'; use strategy, strategy-plus or lm"):
        build_config("cpu-strategy-plus", policy="plus")
    with pytest.raises(ConfigError, match="entropy_coef must be >= 0, got -0.1"):
        build_config("cpu-strategy-plus", entropy_coef=-0.1)


def test_conversation_audit_counts_by_hand():
    line = "There are no hidden fees; the credit is free of charge."
    turns = [
        Turn("agent", line, line), Turn("user", "", "Okay."),
        Turn("agent", line, line), Turn("user", "", "You already said that."),
        Turn("agent", "owner rating exposure", "owner rating exposure"), Turn("user", "", "What are you talking about?"),
        Turn("agent", "Hi!", "Hi!"),
    ]
    audit = seeds.conversation_audit([Trajectory("SEAD-Outbound-v0", 0, {}, turns)])
    assert audit["agent_turns"] == 4 and audit["turn:near_repeat"] == 1 / 4 and audit["turn:not_understood"] == 1 / 4
    assert audit["owner:repeated"] == audit["owner:not_understood"] == 1 / 3 and audit["owner:monologue"] == 0
    assert audit["turn:distinct_share"] == 3 / 4 and audit["turn:top_share"] == 2 / 4  # the fees line twice of 4 turns


def test_seeds_cli_prints_the_interval_and_the_baselines(tmp_path, capsys):
    assert seeds.main(["--seeds", "2", "--iterations", "1", "--eval-episodes", "12", "--workers", "1", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "95% t-interval" in printed and "adaptive" in printed and "oracle*" in printed and "conversation audit" in printed
    summary = json.loads((tmp_path / "seeds.json").read_text())
    assert len(summary["per_seed"]) == 2 and set(summary["references"]) == {"sop", "random", "adaptive", "oracle"}
    assert (tmp_path / "training_curve.png").exists()
    assert seeds.main(["--seeds", "1", "--out", str(tmp_path)]) == 2
    assert "--seeds must be >= 2, got 1" in capsys.readouterr().err
    # a seed folder saved before a config field existed resumes (the field at its default); other settings do not
    saved = tmp_path / "seed0" / "config.json"
    saved.write_text(json.dumps({k: v for k, v in json.loads(saved.read_text()).items() if k != "user_training"}))
    assert seeds.main(["--seeds", "2", "--iterations", "1", "--eval-episodes", "12", "--workers", "1", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "seeds.json").read_text())["per_seed"] == summary["per_seed"]
    capsys.readouterr()
    assert seeds.main(["--seeds", "2", "--iterations", "2", "--eval-episodes", "12", "--workers", "1", "--out", str(tmp_path)]) == 2
    assert "holds a run with other settings (iterations 1 there, 2 now); pass the --preset, --iterations" in capsys.readouterr().err


def test_long_preset_trains_the_plus_policy_with_half_the_step(tmp_path):
    """cpu-strategy-plus-long: the same policy and entropy bonus, learning rate 1.0 instead of 2.0 over
    twice the iterations; the step reaches the policy that is trained and saved."""
    long, plus = build_config("cpu-strategy-plus-long"), build_config("cpu-strategy-plus")
    assert (long.iterations, long.n_max, long.learning_rate) == (2 * plus.iterations, 2 * plus.n_max, plus.learning_rate / 2)
    run = train(build_config("cpu-strategy-plus-long", iterations=1, batch_size=6, eval_episodes=0, plots=False, run_dir=str(tmp_path / "run")))
    saved = StrategyPlusPolicy.load(run.path / "checkpoints" / "iter_0000")
    assert (saved.learning_rate, saved.entropy_coef) == (1.0, 0.03)
