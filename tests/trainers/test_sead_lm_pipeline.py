"""The SEAD LM pipeline (DESIGN "Training pipeline"): phase sft from adaptive's exported dialogues, phase
rl by decision-point GRPO, and every phase's held-out result saved for a paired comparison."""

import json

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.results import Results, compare
from trainers.sead.config import build_config
from trainers.sead.train import paired_changes, train

pytest.importorskip("torch")
pytest.importorskip("trl")

SMALL = {
    "sft_steps": 2, "sft_episodes": 12, "sft_batch_size": 4, "iterations": 1, "batch_size": 2, "group_size": 2,
    "eval_episodes": 6, "max_agent_turns": 3, "max_new_tokens": 8, "plots": False,
}


def test_the_scratch_pipeline_writes_every_phase_and_paired_results(tmp_path, monkeypatch):
    import trainers.sead.train as sead_train

    scored, agreement_of = [], sead_train.agreement_of
    monkeypatch.setattr(sead_train, "agreement_of", lambda *args: scored.append(args[3:]) or agreement_of(*args))
    # Two dialogues padded together, two passes accumulated per step: cloning and the DAgger round both train so.
    small = {**SMALL, "sft_batch_size": 2, "sft_accumulation": 2}
    run = train(build_config("cpu-lm-scratch", run_dir=str(tmp_path / "run"), dagger_rounds=1, dagger_episodes=3, dagger_steps=2, threads=1, **small))
    from trainers.common.sft import SFT_FINISHED

    for stage in ("sft", "sft_dagger_0"):
        inputs = json.loads((run.path / "checkpoints" / stage / SFT_FINISHED).read_text())["inputs"]
        assert (inputs["batch_size"], inputs["accumulation"]) == (2, 2), stage
    expert = [json.loads(line) for line in (run.path / "sft" / "expert.jsonl").read_text().splitlines()]
    assert len(expert) == 12 and {record["meta"]["agent"] for record in expert} == {"adaptive"}
    from datasets import load_from_disk

    rows = load_from_disk(str(run.path / "sft" / "sft"))
    assert len(rows) == 12 and rows[0]["messages"][0]["role"] == "system"  # the export writer's sft rows
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(run.path / "scratch_model"))
    opening = next(m["content"] for m in rows[0]["messages"] if m["role"] == "assistant")
    pieces = tokenizer.convert_ids_to_tokens(tokenizer(opening, add_special_tokens=False)["input_ids"])
    assert pieces[0] == "<response>" and len(pieces) <= 16  # adaptive's sentences are whole tokens
    sft = run.load_state("sft")
    assert sft["checkpoint"] == "checkpoints/sft_dagger_0" and sft["sft/steps"] == 2 and (run.path / "checkpoints" / "sft_dagger_0" / "config.json").exists()
    labelled = [json.loads(line) for line in (run.path / "sft" / "dagger_0.jsonl").read_text().splitlines()]
    assert len(labelled) == 3 and all(row["completion"][0]["role"] == "assistant" and "said" in row for session in labelled for row in session)
    agreement = json.loads((run.path / "results" / "agreement.json").read_text())
    assert [stage["stage"] for stage in agreement["stages"]] == ["sft", "dagger_0"] and agreement["expert"] == "adaptive"
    assert agreement["stages"][1]["labelled_states"] == sum(map(len, labelled)) and sft["sft/agreement"] == agreement["stages"][1]["agreement"]
    assert sum(agreement["stages"][0]["turns_per_turn"]) == agreement["stages"][0]["turns"] > 0
    from trainers.common.sft import teacher_forced_agreement
    from transformers import AutoModelForCausalLM

    final = run.path / "checkpoints" / "sft_dagger_0"
    on_training = teacher_forced_agreement(AutoModelForCausalLM.from_pretrained(str(final)), AutoTokenizer.from_pretrained(str(final)), rows[:6]["messages"], 8, "</response>")
    assert agreement["stages"][1]["train_agreement_per_turn"] == on_training["agreement_per_turn"]  # the first 6 (eval_episodes) training chats
    assert [fitted for _, fitted in scored] == [list(rows[:6]["messages"])] * 2 and all(held != fitted for held, fitted in scored)
    assert run.load_state("threads")["chosen"] == "torch threads: 1 (--threads)"
    records = run.read_trajectories()
    assert len(records) == 4 and [r.meta["decision_point"]["copy"] for r in records] == [0, 1, 0, 1]
    saved = {
        name: Results.load(run.path / "results" / f"{name}.json")
        for name in ("untrained", "before", "after", "baselines", "teacher", "before_sampled", "after_sampled")
    }
    assert [a.name for a in saved["teacher"].agents] == ["adaptive"] and saved["teacher"].agents[0].summary["cr"] == saved["baselines"].agent("adaptive").summary["cr"]
    assert [a.name for a in saved["baselines"].agents] == ["sop", "random", "adaptive"]
    for name in ("untrained", "before", "after", "before_sampled", "after_sampled"):
        assert saved[name].provenance["episodes"] == 6 and saved[name].provenance["seed"] == 10_000
    # The sampled evaluation plays the same model on the same starts sampling (T = 1): other turns, other
    # token counts, where a greedy one in disguise would repeat the greedy run exactly.
    for greedy, sampled in (("before", "before_sampled"), ("after", "after_sampled")):
        assert saved[sampled].agents[0].summary["tokens_per_dialogue"] != saved[greedy].agents[0].summary["tokens_per_dialogue"]
    assert run.load_state("eval_sampled")["cr"] == saved["after_sampled"].agents[0].summary["cr"]
    row = next(r for r in compare(saved["before"], saved["after"]) if r["key"] == "cr")
    assert row["a"] == pytest.approx(run.load_state("eval_before")["cr"]) and row["b"] == pytest.approx(run.load_state("eval")["cr"])
    lines = paired_changes(run)
    assert [line.split(":")[0] for line in lines] == ["SFT", "SFT model vs its teacher", "RL", "RL model vs the teacher", "RL, sampled at the rollout temperature"]
    assert "dialogue-gym compare" in lines[2]


def test_a_run_killed_in_phase_sft_resumes_without_replaying_what_it_kept(tmp_path, monkeypatch):
    config = build_config("cpu-lm-scratch", run_dir=str(tmp_path / "run"), **SMALL)
    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    import trainers.common.sft as common_sft

    monkeypatch.setattr(common_sft, "sft_lm", killed)  # the phase imports it when it runs
    with pytest.raises(KeyboardInterrupt):
        train(config)
    run_path = tmp_path / "run"
    kept = {path: path.stat().st_mtime_ns for path in (run_path / "sft" / "expert.jsonl", run_path / "scratch_model" / "tokenizer.json", run_path / "state" / "eval_untrained.json")}
    assert not (run_path / "state" / "sft.json").exists()
    monkeypatch.undo()
    run = train(config, resume=True)
    assert {path: path.stat().st_mtime_ns for path in kept} == kept
    assert run.load_state("sft")["sft/steps"] == 2 and run.load_state("eval")["episodes"] == 6


def test_lm_pipeline_config_errors_name_the_fix():
    with pytest.raises(ConfigError, match="sft_steps=5 and rl_mode='dialogue' train a language model; pass policy=lm"):
        build_config("cpu-strategy", sft_steps=5)
    with pytest.raises(ConfigError, match="model='scratch' is a random model; pass sft_steps > 0"):
        build_config("cpu-lm-scratch", sft_steps=0)
    with pytest.raises(ConfigError, match="rl_mode='grpo'; use one of 'dialogue', 'decision_point'"):
        build_config("cpu-lm-scratch", rl_mode="grpo")
    with pytest.raises(ConfigError, match="continuation='oracle'"):
        build_config("cpu-lm-scratch", continuation="oracle")
    with pytest.raises(ConfigError, match="group_size"):
        build_config("cpu-lm-scratch", group_size=0)


def test_agreement_is_measured_on_held_out_and_on_as_many_training_chats(tmp_path, monkeypatch):
    """Each stage's agreement is scored twice: on the held-out chats (``agreement``) and on training chats
    (``train_*``), which tells under-fitting (both low) from over-fitting (only the held-out one low)."""
    from types import SimpleNamespace

    import trainers.common.sft as common_sft
    import trainers.sead.train as sead_train
    from trainers.common import RunDir

    scored = []

    def fake(model, tokenizer, chats, max_new_tokens, utterance_end=None):
        scored.append(chats)
        return {"agreement": len(chats) / 10, "utterance_agreement": len(chats) / 20, "agreement_per_turn": [len(chats) / 10], "turns_per_turn": [len(chats)], "turns": len(chats)}

    monkeypatch.setattr(common_sft, "teacher_forced_agreement", fake)
    monkeypatch.setattr(sead_train, "make_policy_for", lambda *args, **kwargs: SimpleNamespace(model=None, tokenizer=None))
    config, run, held, fitted = build_config("cpu-lm-scratch"), RunDir(tmp_path), [[{"role": "user", "content": "held"}]] * 2, [[{"role": "user", "content": "fit"}]] * 3
    result = sead_train.agreement_of(config, run, tmp_path, held, fitted)
    assert scored == [held, fitted]
    assert (result["agreement"], result["train_agreement"], result["train_utterance_agreement"], result["train_agreement_per_turn"]) == (0.2, 0.3, 0.15, [0.3])
    assert (result["turns"], result["train_turns"], result["train_turns_per_turn"]) == (2, 3, [3])
    assert "train_agreement" not in sead_train.agreement_of(config, run, tmp_path, held) and sead_train.agreement_of(config, run, tmp_path, None, fitted) == {}
