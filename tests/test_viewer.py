"""`dialogue-gym view`: the page's data, its escaping, its filters' data, every registered id, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dialogue_gym.cli import main
from dialogue_gym.errors import ConfigError
from dialogue_gym.viewer import health_flags, load_run, page_data, render_html, state_series, write_view
from envs_registry import REGISTRY
from viewer_runs import HOSTILE_TEXT, hostile_record, play, training_folder, write_jsonl

DATA_BLOB = re.compile(r'<script type="application/json" id="dg-data">(.*?)</script>', re.S)


def blob(page: str) -> dict:
    """The page's embedded data, as the page's script reads it."""
    found = DATA_BLOB.findall(page)
    assert len(found) == 1
    return json.loads(found[0])


def test_the_page_is_self_contained(tmp_path):
    run = tmp_path / "run.jsonl"
    play("SEAD-Outbound-v0", run, ["sop", "random"])
    path, count = write_view(run)
    page = path.read_text(encoding="utf-8")
    assert path == tmp_path / "run.html" and count == 4
    assert page.startswith("<!DOCTYPE html>") and page.count("<script") == 2 and page.count("</script>") == 2
    for external in ("<link", "@import", "url(", " src=", " href=", "@font-face"):
        assert external not in page
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"]  # a namespace name, never fetched
    assert "default-src 'none'" in page  # the page's own policy forbids any fetch


def test_hostile_text_is_escaped_and_round_trips(tmp_path):
    run = tmp_path / "hostile.jsonl"
    write_jsonl(run, [hostile_record()])
    page = write_view(run, tmp_path / "out.html")[0].read_text(encoding="utf-8")
    assert page.count("</script>") == 2 and "<img" not in page and "<!--" not in page and "<b>" not in page
    assert "\u2028" not in page and not re.search("[\ud800-\udfff]", page)
    data = blob(page)
    row, detail = data["rows"][0], json.loads(data["details"][0])
    clean = HOSTILE_TEXT.replace("\ud800", "\ufffd")
    assert row["agent"] == "<img src=x onerror=alert(3)>" and data["facets"]["agent"] == [row["agent"]]
    first = detail["turns"][0]
    assert first["text"] == clean and first["invalid"] == "missing <trust_score> </script>"
    assert first["raw"] == ["<response>", "</response>"]  # the raw output around the text, not the text twice
    assert detail["meta"] == {"judge": "</script>"} and detail["profile"]["behaviors"] == ["<b>TS4</b>"]
    title = render_html([hostile_record()], source="</title><script>alert(4)</script>%DATA%.jsonl")
    assert "<title>dialogue-gym view: &lt;/title&gt;&lt;script&gt;alert(4)&lt;/script&gt;%DATA%.jsonl</title>" in title
    assert blob(title)["source"] == "</title><script>alert(4)</script>%DATA%.jsonl"


def test_turn_flags_series_and_rewards():
    detail = json.loads(page_data([hostile_record()])["details"][0])
    row = page_data([hostile_record()])["rows"][0]
    assert row["invalid"] == 1 and row["unhealthy_turns"] == 1 and row["reward"] == -0.5 and row["turns"] == 2
    assert detail["turns"][1]["health"] == ["out of format", "repaired: reply", "role reversal: how can I help you", "rule: state jump"]
    assert detail["turns"][1]["failed"] is True and "failed" not in detail["turns"][0]
    assert [s["name"] for s in detail["series"]] == ["cooperation", "emotion", "trust"]
    assert [s["max"] for s in detail["series"]] == [4, 3, 5] and detail["series"][0]["values"] == [1, 2]
    assert [s["estimate"] for s in detail["series"]] == [[1, None]] * 3  # the agent's parsed estimate beside the state
    assert "state" not in detail["turns"][0]  # numeric states are read from the series
    assert detail["rewards"] == {"agent": -0.5, "user": 1.0} and detail["terms"] == {"agent/invalid": -0.5}
    assert health_flags({"health": {"format_ok": True, "repaired": [], "role_reversal": [], "rule_violations": []}}) == []
    assert health_flags({}) == []


def test_state_series_by_scenario():
    assert [s["name"] for s in state_series("TRACER-UserSim-v0", [[2], None, [5]])] == ["intent level"]
    assert state_series("TRACER-UserSim-v0", [[2], None, [5]])[0] == {"name": "intent level", "min": 0, "max": 5, "values": [2, None, 5]}
    assert state_series("RLADA-Banking-v0", [None, None]) == []
    assert state_series("Other-v0", [[1, 9], [2, "x"]]) == [
        {"name": "state[0]", "min": 0, "max": 1, "values": [1, None]}, {"name": "state[1]", "min": 0, "max": 9, "values": [9, None]},
    ]


def test_filter_data_rows_and_facets():
    records = [
        hostile_record(outcome="success", meta={"agent": "sop", "start": 2, "env_id": "SEAD-Outbound-v0"}),
        hostile_record(outcome="hangup", meta={"agent": "random", "start": 10}),
        hostile_record(outcome=None, meta={}),
    ]
    data = page_data(records)
    assert [(r["agent"], r["outcome"], r["start"], r["env"]) for r in data["rows"]] == [
        ("sop", "success", 2, "SEAD-Outbound-v0"), ("random", "hangup", 10, "SEAD-Outbound-v0"), ("(none)", "(none)", None, "SEAD-Outbound-v0"),
    ]
    assert data["facets"] == {
        "env": ["SEAD-Outbound-v0"], "agent": ["(none)", "random", "sop"], "outcome": ["(none)", "hangup", "success"], "iteration": [],
    }


def test_absent_fields_degrade(tmp_path):
    data = page_data([{}, {"turns": [{"text": "hi"}, "not a turn"], "rewards": {"a": "x"}, "profile": "text", "meta": []}])
    assert [row["turns"] for row in data["rows"]] == [0, 2] and data["rows"][1]["reward"] is None
    details = [json.loads(text) for text in data["details"]]
    assert details[0]["turns"] == [] and details[0]["series"] == [] and details[1]["turns"][0] == {"role": "", "text": "hi"}
    # NaN / Infinity (not strict JSON) and integers JavaScript would round
    run = tmp_path / "run.jsonl"
    run.write_text('{"outcome": "success", "rewards": {"a": NaN, "b": 1e999}, "seed": 4793989368471541069}\n')
    page = render_html(load_run(run))
    row, detail = blob(page)["rows"][0], json.loads(blob(page)["details"][0])
    assert row["seed"] == "4793989368471541069" and row["reward"] is None and detail["rewards"] == {}


@pytest.mark.parametrize("env_id", [entry.id for entry in REGISTRY])
def test_every_registered_id(env_id, tmp_path):
    run = tmp_path / "run.jsonl"
    entry = next(e for e in REGISTRY if e.id == env_id)
    play(env_id, run, list(entry.agents[:2]), episodes=2)
    records = [json.loads(line) for line in run.read_text().splitlines()]
    data = blob(write_view(run)[0].read_text(encoding="utf-8"))
    assert len(data["rows"]) == len(records) == 4
    assert [row["agent"] for row in data["rows"]] == [r["meta"]["agent"] for r in records]
    assert [row["outcome"] for row in data["rows"]] == [r["outcome"] for r in records]
    assert data["facets"]["env"] == [env_id] and data["facets"]["agent"] == sorted(entry.agents[:2])
    for record, row, text in zip(records, data["rows"], data["details"]):
        detail = json.loads(text)
        assert len(detail["turns"]) == len(record["turns"]) and row["learner"] == record["learner"]
        assert [t["text"] or t.get("raw") for t in detail["turns"]] == [t["text"] or t["raw"] for t in record["turns"]]
        names = [s["name"] for s in detail["series"]]
        if env_id.startswith("SEAD"):
            assert names == ["cooperation", "emotion", "trust"]
        elif env_id.startswith(("TRACER", "DMBench")):
            assert names == ["intent level"]
        else:
            assert names == []  # RL-ADA records no hidden state per turn
        assert row["reward"] == record["rewards"][record["learner"]]


def test_cli_writes_the_page(tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    write_jsonl(run, [hostile_record(), hostile_record()])
    assert main(["view", str(run), "-o", str(tmp_path / "report.html")]) == 0
    assert "2 dialogues written to" in capsys.readouterr().out and (tmp_path / "report.html").exists()
    assert main(["view", str(run)]) == 0 and (tmp_path / "run.html").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist; give a run file written by `dialogue-gym eval ENV_ID --out RUN.jsonl`"),
        ('{"turns": []}\n{oops\n', "line 2 is not JSON (Expecting property name enclosed in double quotes, column 2); give a run file"),
        ("[1, 2]\n", "line 1 is a JSON list, not a trajectory object; give a run file"),
        ("\n\n", "holds no trajectories; give a run file"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, capsys, content, message):
    run = tmp_path / "run.jsonl"
    if isinstance(content, bytes):
        run.write_bytes(content)
    elif content is not None:
        run.write_text(content)
    assert main(["view", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(run) in err and message in err


def test_cli_bad_output_paths(tmp_path, capsys):
    run = tmp_path / "run.jsonl"
    write_jsonl(run, [hostile_record()])
    assert main(["view", str(run), "-o", str(tmp_path / "missing" / "x.html")]) == 2
    assert "does not exist; create it first" in capsys.readouterr().err
    assert main(["view", str(run), "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["view", str(run), "-o", str(run)]) == 2
    assert "is the run file itself" in capsys.readouterr().err
    assert main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err  # a folder that is no training run either: both ways named
    assert "is a folder without trajectories.jsonl; give a run file" in err and "or give a trainer's run folder (it holds config.json" in err
    with pytest.raises(ConfigError, match="a results .json from `eval --save` is read by `compare`"):
        (tmp_path / "results.json").write_text('{\n  "provenance": {}\n}\n')
        load_run(tmp_path / "results.json")


NODE = __import__("shutil").which("node")
PROTOTYPE_NAMES = ("__proto__", "constructor", "toString", "hasOwnProperty", "valueOf")


def run_page(tmp_path, records) -> dict:
    """The page of ``records`` run under Node with a minimal DOM (tests/viewer_dom.js): every filter
    value picked, every listed dialogue opened and paged through."""
    import subprocess
    from pathlib import Path

    run = tmp_path / "run.jsonl"
    write_jsonl(run, records)
    page, _ = write_view(run)
    done = subprocess.run([NODE, str(Path(__file__).with_name("viewer_dom.js")), str(page)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the page's script without a browser")
def test_agent_env_and_outcome_names_that_are_prototype_keys_do_not_break_the_page(tmp_path):
    records = [
        hostile_record(outcome=name, meta={"agent": name, "env_id": other, "start": k})
        for k, (name, other) in enumerate(zip(PROTOTYPE_NAMES, PROTOTYPE_NAMES[1:] + PROTOTYPE_NAMES[:1]))
    ]
    page = run_page(tmp_path, records)
    assert page["error"] is None, page["error"]
    assert len(page["opened"]) == len(records) and page["counts"].startswith("5 of 5 dialogues shown")
    assert all(name in page["summary"] for name in PROTOTYPE_NAMES)  # each a row of the agents table
    assert all(f"agent {name}" in opened["text"] for name, opened in zip(PROTOTYPE_NAMES, page["opened"]))


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the page's script without a browser")
def test_a_100000_turn_dialogue_is_drawn_a_page_of_turns_at_a_time(tmp_path):
    from dialogue_gym.viewer import TURNS_PER_PAGE

    turn = {"role": "agent", "text": "Hello?", "state": [1, 2, 3]}
    long = hostile_record(turns=[turn, {**turn, "role": "user", "text": "Yes."}] * 50_000)
    started = __import__("time").perf_counter()
    page = run_page(tmp_path, [long, hostile_record()])
    assert page["error"] is None, page["error"]
    assert __import__("time").perf_counter() - started < 120
    opened = page["opened"][0]
    assert opened["turns_drawn_at_most"] == TURNS_PER_PAGE and opened["turn_pages"] == 100_000 // TURNS_PER_PAGE
    assert f"turns 99801\u2013100000 of 100000" in opened["text"] and "100000 \u00b7 user" in opened["text"]
    assert page["opened"][1]["turn_pages"] == 1 and page["opened"][1]["turns_drawn_at_most"] == 2


BIDI_CONTROLS = "\u202e\u202d\u202a\u202b\u202c\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the page's script without a browser")
def test_bidi_controls_in_names_and_text_are_shown_as_marks(tmp_path):
    record = hostile_record(meta={"agent": "evil\u202eexe.txt", "env_id": "SEAD\u2067x", "start": 1})
    record["turns"][0]["text"] = "pay " + BIDI_CONTROLS + " now"
    page = run_page(tmp_path, [record])
    assert page["error"] is None, page["error"]
    shown = page["summary"] + page["counts"] + page["opened"][0]["text"]
    assert not any(char in shown for char in BIDI_CONTROLS)
    assert "evil\u27e6U+202E\u27e7exe.txt" in shown and "pay \u27e6U+202E\u27e7\u27e6U+202D\u27e7" in shown


def test_bidi_controls_in_the_source_name_do_not_reach_the_title(tmp_path):
    run = tmp_path / "run\u202elmth.jsonl"
    write_jsonl(run, [hostile_record()])
    page = write_view(run)[0].read_text()
    assert "\u202e" not in page.split('<script type="application/json"')[0]
    assert "<title>dialogue-gym view: run\u27e6U+202E\u27e7lmth.jsonl</title>" in page


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the page's script without a browser")
def test_the_page_explains_codes_truth_turns_and_scales(tmp_path):
    """Issue 44: behaviour codes have a legend with their meaning (from SEAD's library), the chips under a
    learner turn say they are the counterpart's true state, turn counts say whose turns, the state lanes
    carry value ticks and the reward histogram counts and an axis."""
    run = tmp_path / "played.jsonl"
    play("SEAD-Outbound-v0", run, agents=["adaptive"], episodes=3)
    records = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    data = page_data(records)
    behaviours = {code for record in records for code in record["profile"]["behaviors"]}
    library = json.loads((Path(__file__).parent.parent / "dialogue_gym/scenarios/sead/data/behaviors.json").read_text(encoding="utf-8"))
    meaning = {item["id"]: item for item in library["behaviors"]}
    assert set(data["codes"]) == behaviours and behaviours
    for code, text in data["codes"].items():
        assert text == f"{meaning[code]['category'].replace('_', ' ')}: {meaning[code]['description']}"
    learner_turns = [sum(turn["role"] == "agent" for turn in record["turns"]) for record in records]
    assert [row["learner_turns"] for row in data["rows"]] == learner_turns
    assert page_data([hostile_record(meta={"env_id": "TRACER-UserSim-v0"})])["codes"] == {}
    result = run_page(tmp_path, records)
    assert result["error"] is None, result["error"]
    opened = result["opened"][0]["text"]
    assert f"{len(records[0]['turns'])} turns ({learner_turns[0]} by the agent)" in opened
    assert "Counterpart's behaviours" in opened and all(code in opened for code in records[0]["profile"]["behaviors"])
    assert "counterpart's true state (not the learner's estimate):" in opened and "true state:" in opened
    assert "Numbers at a lane's left: its lowest and highest value" in opened
    assert "Behaviour codes (" in result["summary"] and "learner reward (bar height: dialogues)" in result["summary"]
    html = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert 'laneTicks(s)' in html and '"class": "tick"' in html


# -- training runs: a trainer's run folder, filtered by iteration, its agent the trainer's policy, sampled per iteration ---------
def _lowest(seed: int, iteration: int, episodes: range, keep: int) -> list[int]:
    import hashlib

    def priority(e):  # blake2b-64 of the JSON [seed, iteration, "episode"]
        return hashlib.blake2b(json.dumps([seed, iteration, str(e)]).encode(), digest_size=8).digest()

    return sorted(sorted(episodes, key=priority)[:keep])


def test_a_training_run_keeps_the_seeded_lowest_hashes_of_each_iteration_whatever_the_file_order(tmp_path):
    from dialogue_gym.viewer import sample_training_run

    folder = training_folder(tmp_path / "run", iterations=3, per_iteration=10)
    records, sampled = sample_training_run(folder, per_iteration=4, sample_seed=7)
    assert [(r["iteration"], r["episode"]) for r in records] == [(i, e) for i in range(3) for e in _lowest(7, i, range(10), 4)]
    assert sampled == {"folder": "run", "per_iteration": 4, "sample_seed": 7, "iterations": 3, "dialogues": 30, "shown": 12, "preset": "cpu-lm-scratch"}
    shuffled = training_folder(tmp_path / "shuffled", iterations=3, per_iteration=10, order=lambda rs: rs[::-1][5:] + rs[::-1][:5])
    assert [(r["iteration"], r["episode"]) for r in sample_training_run(shuffled, 4, 7)[0]] == [(r["iteration"], r["episode"]) for r in records]
    assert [r["episode"] for r in sample_training_run(folder, 4, 8)[0]] != [r["episode"] for r in records]  # the seed picks
    assert len(sample_training_run(folder, 50, 7)[0]) == 30  # fewer than asked: every one


def test_a_training_run_names_the_trainers_policy_drops_its_token_records_and_replaces_replayed_episodes(tmp_path):
    from dialogue_gym.viewer import sample_training_run, trainer_policy

    folder = training_folder(tmp_path / "run", iterations=1, per_iteration=3)
    with open(folder / "trajectories.jsonl", "a", encoding="utf-8") as handle:  # episode 1 played again after a resume
        handle.write(json.dumps(hostile_record(iteration=0, episode=1, learner="agent", outcome="timeout")) + "\n")
    records, sampled = sample_training_run(folder, per_iteration=3)
    assert [(r["episode"], r["outcome"]) for r in records] == [(0, "hangup"), (1, "timeout"), (2, "hangup")] and sampled["dialogues"] == 3
    assert all(r["meta"]["agent"] == "trained agent: lm (scratch)" and "learner_record" not in r["meta"] for r in records)
    assert records[0]["meta"]["decision_point"] == {"turn": 1}
    assert trainer_policy({"agent_policy": "strategy", "customer_policy": "lm", "customer_model": "tiny"}, "customer") == "trained customer: lm (tiny)"
    assert trainer_policy({"agent_policy": "strategy", "customer_policy": "lm", "customer_model": "tiny"}, "agent") == "trained agent: strategy"
    assert trainer_policy({"policy": "strategy", "model": "x"}, "user") == "trained user: strategy"  # a model only names an lm
    assert trainer_policy({}, None) == "trained learner: policy"


def test_a_training_page_filters_by_iteration_and_states_its_sample(tmp_path, capsys):
    folder = training_folder(tmp_path / "sead-run", iterations=5, per_iteration=30)
    assert main(["view", str(folder), "--per-iteration", "3", "--sample-seed", "11"]) == 0
    page = tmp_path / "sead-run.html"
    assert capsys.readouterr().out.startswith(f"15 dialogues written to {page} ")
    data = blob(page.read_text())
    assert data["training"] == {"folder": "sead-run", "per_iteration": 3, "sample_seed": 11, "iterations": 5, "dialogues": 150, "shown": 15, "preset": "cpu-lm-scratch"}
    assert data["facets"]["iteration"] == [0, 1, 2, 3, 4] and data["facets"]["agent"] == ["trained agent: lm (scratch)"]
    assert [row["iteration"] for row in data["rows"]] == [0] * 3 + [1] * 3 + [2] * 3 + [3] * 3 + [4] * 3
    assert [row["reward"] for row in data["rows"][3:6]] == [1 + e / 100 for e in _lowest(11, 1, range(30), 3)]
    assert "learner_record" not in page.read_text() and "prompt_ids" not in page.read_text()


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda f: (f / "trajectories.jsonl").unlink(), "is a folder without trajectories.jsonl; give a run file"),
        (lambda f: (f / "config.json").write_text('{"policy": '), "config.json' is not JSON (Expecting value, line 1 column 12)"),
        (lambda f: (f / "config.json").write_text("[1]"), "config.json' holds a JSON list, not a trainer config object"),
        (lambda f: (f / "config.json").write_bytes(b'{"policy": "\xff"}'), "config.json: line 1: not UTF-8 text"),
        (lambda f: (f / "config.json").write_text("[" * 5000 + "]" * 5000), "nests arrays/objects deeper than 100 levels"),
    ],
)
def test_a_bad_training_run_folder_is_one_line(tmp_path, capsys, setup, message):
    folder = training_folder(tmp_path / "run", iterations=1, per_iteration=2)
    setup(folder)
    assert main(["view", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_per_iteration_below_one_is_refused(tmp_path, capsys):
    folder = training_folder(tmp_path / "run", iterations=1, per_iteration=2)
    assert main(["view", str(folder), "--per-iteration", "0"]) == 2
    assert "--per-iteration must be an integer >= 1, got 0" in capsys.readouterr().err


def test_a_training_page_is_bounded_by_iterations_not_by_dialogues(tmp_path):
    """Tens of thousands of dialogues: the page holds per_iteration x iterations of them, so 40,000
    dialogues give the same page size as 4,000 (each record ~1.5 kB, the page ~3 MB at 20 per iteration)."""
    small = training_folder(tmp_path / "small", iterations=100, per_iteration=40)
    large = training_folder(tmp_path / "large", iterations=100, per_iteration=400)
    pages = {}
    for folder in (small, large):
        path, count = write_view(folder, per_iteration=20)
        assert count == 2000
        pages[folder.name] = path.stat().st_size
    assert (large / "trajectories.jsonl").stat().st_size > 10 * pages["large"]
    assert pages["large"] <= 1.05 * pages["small"] and pages["large"] < 8_000_000
