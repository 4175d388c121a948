"""A DAgger round's learning rate (issue 41 item 1): its own ``dagger_learning_rate``, or SFT's when 0."""

import json

import pytest

from dialogue_gym.errors import ConfigError
from trainers.common import RunDir
from trainers.sead.config import build_config, parser


def round_rate(tmp_path, **overrides) -> tuple[float, dict]:
    """The rate dagger_round hands sft_lm (the played states already saved, so nothing is played)."""
    import trainers.common.sft as common_sft
    from trainers.sead.train import dagger_round

    config = build_config("cpu-lm-scratch", run_dir=str(tmp_path), threads=1, **overrides)
    run = RunDir(tmp_path)
    (tmp_path / "sft").mkdir(parents=True, exist_ok=True)
    row = {"prompt": [{"role": "user", "content": "hi"}], "completion": [{"role": "assistant", "content": "a"}], "said": "a"}
    (tmp_path / "sft" / "dagger_0.jsonl").write_text(json.dumps([row]) + "\n")
    rates = []
    original = common_sft.sft_lm
    common_sft.sft_lm = lambda *args, learning_rate, **kwargs: rates.append(learning_rate) or {}
    try:
        _, info = dagger_round(config, run, 0, tmp_path / "clone", [])
    finally:
        common_sft.sft_lm = original
    assert len(rates) == 1
    return rates[0], info


def test_a_dagger_round_trains_at_its_own_rate_or_at_sfts_when_unset(tmp_path):
    rate, info = round_rate(tmp_path / "own", dagger_learning_rate=7e-4, sft_learning_rate=5e-3)
    assert rate == 7e-4 and info["learning_rate"] == 7e-4 and info["labelled_states"] == 1
    rate, info = round_rate(tmp_path / "unset", sft_learning_rate=2e-3)
    assert rate == 2e-3 and info["learning_rate"] == 2e-3


def test_dagger_learning_rate_is_a_flag_and_a_negative_one_is_refused():
    args = parser().parse_args(["--preset", "cpu-lm-scratch", "--dagger-learning-rate", "5e-4"])
    assert args.dagger_learning_rate == 5e-4
    with pytest.raises(ConfigError, match=r"dagger_learning_rate must be >= 0, got -0\.001"):
        build_config("cpu-lm-scratch", dagger_learning_rate=-1e-3)
