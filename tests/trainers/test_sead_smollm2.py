"""SEAD's ``model="smollm2"`` is converted into the run folder once (issue 41 item 5, ``cpu-smollm2``):
every later load of the base model reads the plain folder, with the same weights and token ids."""

import json

import pytest

from trainers.common import RunDir
from trainers.sead import train as sead_train
from trainers.sead.config import build_config


def test_save_plain_model_keeps_the_weights_and_the_token_ids(tiny_model_dir, tmp_path):
    torch = pytest.importorskip("torch")
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    out = tmp_path / "plain"
    out.mkdir()
    sead_train.save_plain_model(str(tiny_model_dir), out)
    original, saved = TransformersBackend(str(tiny_model_dir)), TransformersBackend(str(out))
    text = "<response>Hello, is this the owner?</response><trust_score>3</trust_score>"
    assert saved.tokenizer(text)["input_ids"] == original.tokenizer(text)["input_ids"]
    weights, saved_weights = original.model.state_dict(), saved.model.state_dict()
    assert weights.keys() == saved_weights.keys()
    assert all(torch.equal(weights[name], saved_weights[name]) for name in weights)


def test_smollm2_is_converted_once_into_the_run_folder(tmp_path, monkeypatch):
    saves = []

    def save(model, folder):
        saves.append(model)
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(b"")

    monkeypatch.setattr(sead_train, "save_plain_model", save)
    monkeypatch.setattr(sead_train, "folder_problem", lambda folder: None)  # the stand-in's weights are empty
    config = build_config("cpu-tiny-lm", run_dir=str(tmp_path), model="smollm2")
    run = RunDir(tmp_path)
    first, second = sead_train.base_model(config, run), sead_train.base_model(config, run)
    assert first == second == str(tmp_path / "smollm2_model")
    assert saves == ["smollm2"]
    assert (tmp_path / "smollm2_model" / "config.json").exists() and not (tmp_path / "smollm2_model.partial").exists()


def test_a_local_model_folder_is_used_where_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(sead_train, "save_plain_model", lambda model, folder: pytest.fail("a local folder is not converted"))
    config = build_config("cpu-tiny-lm", run_dir=str(tmp_path / "run"), model=str(tmp_path / "mine"))
    assert sead_train.base_model(config, RunDir(tmp_path / "run")) == str(tmp_path / "mine")


def test_the_smollm2_preset_runs_end_to_end_with_lora_in_both_phases(tiny_model_dir, tmp_path):
    """The preset's pipeline with the tiny model standing in for SmolLM2 (same code path, seconds instead of
    an hour): LoRA SFT merged into a plain folder, RL training fresh adapters on it, every evaluation saved."""
    pytest.importorskip("peft")
    pytest.importorskip("trl")
    from dialogue_gym.results import Results

    small = {
        "sft_steps": 2, "sft_episodes": 8, "iterations": 1, "batch_size": 2, "group_size": 2, "eval_episodes": 4,
        "max_agent_turns": 3, "max_new_tokens": 8, "plots": False, "threads": 1, "lora_layers": 1,  # the tiny model has 2
    }
    config = build_config("cpu-smollm2", model=str(tiny_model_dir), run_dir=str(tmp_path / "run"), **small)
    assert config.lora_rank > 0 and config.rl_mode == "decision_point"
    run = sead_train.train(config)
    sft = run.path / "checkpoints" / "sft"
    assert (sft / "config.json").exists() and not (sft / "adapter_config.json").exists()  # merged: a plain model
    adapter = json.loads((run.path / "checkpoints" / "iter_0000" / "adapter_config.json").read_text())  # the RL phase trains adapters
    assert adapter["layers_to_transform"] == [1]  # on the top layer only, as lora_layers says
    for name in ("untrained", "before", "after", "before_sampled", "after_sampled"):
        assert Results.load(run.path / "results" / f"{name}.json").provenance["episodes"] == 4
    assert [line.split(":")[0] for line in sead_train.paired_changes(run)][:3] == ["SFT", "SFT model vs its teacher", "RL"]
