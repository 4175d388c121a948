"""SEAD's ``lora_rank`` reaches the SFT phase and every DAgger round (issue 41 item 5: LoRA SFT on the
expert for ``cpu-smollm2``), and a full fine-tune (rank 0) stays one."""

import json

import pytest

import trainers.common.sft as common_sft
from trainers.common import RunDir
from trainers.sead.config import build_config

pytest.importorskip("datasets")

CHAT = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"}]


def ranks_handed_to_sft(tmp_path, monkeypatch, **overrides) -> list[int]:
    """The ``lora_rank`` each sft_lm call of the SFT phase and one DAgger round got (training replaced
    by a recorder; the round's played states already saved, so nothing is played)."""
    from trainers.sead.train import dagger_round, sft_phase

    # A model folder nothing opens: the recorder stands in for training (building a tiny model takes ~40 s).
    config = build_config("cpu-tiny-lm", run_dir=str(tmp_path), model=str(tmp_path / "model"), threads=1, eval_episodes=0, dagger_rounds=0, **overrides)
    run = RunDir(tmp_path)
    (tmp_path / "sft").mkdir(parents=True, exist_ok=True)
    ranks = []

    def recorder(model, sessions, output_dir, **kwargs):
        ranks.append(kwargs["lora_rank"])
        return {"sft/loss": 1.0, "sft/steps": 1.0}

    monkeypatch.setattr(common_sft, "expert_dataset", lambda *args, **kwargs: {"messages": [CHAT]})
    monkeypatch.setattr(common_sft, "sft_lm", recorder)
    monkeypatch.setattr(RunDir, "save_state", lambda self, name, state: None)
    sft_phase(config, run)
    row = {"prompt": CHAT[:2], "completion": CHAT[2:], "said": "a"}
    (tmp_path / "sft" / "dagger_0.jsonl").write_text(json.dumps([row]) + "\n")
    dagger_round(config, run, 0, tmp_path / "clone", [])
    return ranks


def test_lora_rank_reaches_the_sft_phase_and_the_dagger_rounds(tmp_path, monkeypatch):
    assert ranks_handed_to_sft(tmp_path / "lora", monkeypatch, lora_rank=8) == [8, 8]
    assert ranks_handed_to_sft(tmp_path / "full", monkeypatch) == [0, 0]
