"""A DAgger round's mix (issue 41 item 1): ``dagger_share`` repeats the labelled sessions to that share of the
rows; 0, the default, takes each once, as before the option existed."""

import json

import pytest

from dialogue_gym.errors import ConfigError
from trainers.common import RunDir
from trainers.common.dagger import weighted_mix
from trainers.sead.config import build_config, parser


def session(name: str, turns: int) -> list[dict]:
    return [
        {"prompt": [{"role": "user", "content": f"{name} {turn}"}], "completion": [{"role": "assistant", "content": f"a{turn}"}]}
        for turn in range(turns)
    ]


EXPERT = [session(f"e{index}", 6) for index in range(10)]  # 60 rows
LABELLED = [session(f"l{index}", 4) for index in range(3)]  # 12 rows


def test_half_the_rows_repeats_each_labelled_session_until_they_match_the_experts_rows():
    mix, repeats = weighted_mix(EXPERT, LABELLED, 0.5)
    assert repeats == 5  # 12 * 5 = 60 labelled rows beside the expert's 60
    assert mix[:10] == EXPERT and mix[10:] == LABELLED * 5
    assert sum(map(len, mix[10:])) / sum(map(len, mix)) == 0.5


def test_a_share_that_no_whole_repeat_hits_exactly_takes_the_nearest():
    _, repeats = weighted_mix(EXPERT, LABELLED, 0.25)
    assert repeats == 2  # 1/3 of 60 rows is 20 labelled rows: 12 * 2 = 24 (share 0.286) is nearer than 12 (0.167) or 36 (0.375)


def test_share_zero_or_no_labelled_rows_is_the_plain_aggregate():
    assert weighted_mix(EXPERT, LABELLED, 0.0) == ([*EXPERT, *LABELLED], 1)
    assert weighted_mix(EXPERT, [], 0.5) == (EXPERT, 1)


def round_mix(tmp_path, **overrides) -> tuple[list, dict]:
    """The sessions dagger_round hands sft_lm (the played states already saved, so nothing is played)."""
    import trainers.common.sft as common_sft
    from trainers.sead.train import dagger_round

    config = build_config("cpu-lm-scratch", run_dir=str(tmp_path), threads=1, **overrides)
    (tmp_path / "sft").mkdir(parents=True, exist_ok=True)
    played = [[{**row, "said": "other"} for row in labelled] for labelled in LABELLED]
    (tmp_path / "sft" / "dagger_0.jsonl").write_text("".join(json.dumps(rows) + "\n" for rows in played))
    handed = []
    original = common_sft.sft_lm
    common_sft.sft_lm = lambda model, sessions, *args, **kwargs: handed.append(sessions) or {}
    try:
        _, info = dagger_round(config, RunDir(tmp_path), 0, tmp_path / "clone", EXPERT)
    finally:
        common_sft.sft_lm = original
    assert len(handed) == 1
    return handed[0], info


def test_a_round_trains_on_the_weighted_mix_and_records_it(tmp_path):
    sessions, info = round_mix(tmp_path / "half", dagger_share=0.5)
    assert sessions == [*EXPERT, *LABELLED * 5]
    assert info["labelled_states"] == 12 and info["labelled_repeats"] == 5 and info["labelled_share"] == 0.5
    sessions, info = round_mix(tmp_path / "default")
    assert sessions == [*EXPERT, *LABELLED] and info["labelled_repeats"] == 1 and info["labelled_share"] == 12 / 72


def test_dagger_share_is_a_flag_and_a_share_outside_0_to_1_is_refused():
    assert parser().parse_args(["--preset", "cpu-lm-scratch", "--dagger-share", "0.5"]).dagger_share == 0.5
    for share in (1.0, -0.1):
        with pytest.raises(ConfigError, match=rf"dagger_share={share!r} .* pass a value in \[0, 1\)"):
            build_config("cpu-lm-scratch", dagger_share=share)
