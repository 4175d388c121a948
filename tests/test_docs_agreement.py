"""The docs' ``agreement`` block: a trainer's saved teacher-forced agreement rendered as a table, the
late-turn column weighted by each turn's count."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import docs_tables  # noqa: E402  (tools/ is not a package)

STAGE = {
    "stage": "sft", "steps": 800.0, "agreement": 0.5, "utterance_agreement": 0.75, "turns": 40,
    # turns 0-9; turns 8 and 9 agree 0.5 of 6 and 1.0 of 2 turns: (3 + 2) / 8 = 0.625 (the plain mean would be 0.75)
    "agreement_per_turn": [1.0, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0], "turns_per_turn": [4, 4, 4, 4, 4, 4, 4, 4, 6, 2],
}


def test_an_agreement_block_is_one_row_per_stage_with_the_late_turns_weighted_by_count(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "agreement.json").write_text(json.dumps({"expert": "adaptive", "stages": [STAGE, {**STAGE, "stage": "dagger_0", "steps": 200}]}))
    rows = docs_tables.render("<!-- generated: agreement run/agreement.json -->\n<!-- end generated -->").splitlines()[3:5]
    assert rows == [
        "| run | sft | 800 | 0.500 | 0.750 | 0.250 | 0.625 | 40 |",
        "| run | dagger_0 | 200 | 0.500 | 0.750 | 0.250 | 0.625 | 40 |",
    ]


def test_a_missing_agreement_file_names_what_to_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    with pytest.raises(SystemExit, match="no saved agreement file docs/results/gone/agreement.json; copy the run's results/agreement.json there"):
        docs_tables.render("<!-- generated: agreement gone/agreement.json -->\n<!-- end generated -->")


def test_a_stage_scored_on_training_chats_too_gets_a_second_row(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_tables, "RESULTS", tmp_path)
    (tmp_path / "run").mkdir()
    # on training chats: turn 1 at 0.75; turns 8 and 9 agree 1.0 of 6 and 0.5 of 2 turns: (6 + 1) / 8 = 0.875
    train = {"train_agreement": 0.9, "train_utterance_agreement": 0.95, "train_turns": 30,
             "train_agreement_per_turn": [1.0, 0.75, 1, 1, 1, 1, 1, 1, 1.0, 0.5], "train_turns_per_turn": [2, 2, 2, 2, 2, 2, 2, 2, 6, 2]}
    (tmp_path / "run" / "agreement.json").write_text(json.dumps({"expert": "adaptive", "stages": [{**STAGE, **train}]}))
    rows = docs_tables.render("<!-- generated: agreement run/agreement.json -->\n<!-- end generated -->").splitlines()[3:5]
    assert rows == [
        "| run | sft | 800 | 0.500 | 0.750 | 0.250 | 0.625 | 40 |",
        "| run | sft (training chats) | 800 | 0.900 | 0.950 | 0.750 | 0.875 | 30 |",
    ]
