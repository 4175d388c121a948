"""benchmarks/sead_dagger_labels.py relabels a DAgger round's states and checks its replay."""

import importlib.util
import json
from pathlib import Path

import pytest

from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.sead.agents import PHRASES
from dialogue_gym.scenarios.sead.parsing import render_agent_output
from dialogue_gym.scenarios.sead.policies import make_policy
from trainers.common.dagger import ExpertLabels

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sead_dagger_labels.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_sead_dagger_labels", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class OwnMemory:
    """Adaptive without note_said: the expert of the last round, whose labels the rows keep."""

    def __init__(self):
        self.inner = make_policy("agent", "adaptive", None)

    def start(self, profile, seed):
        return self.inner.start(profile, seed)

    def act_batch(self, observations, infos, memories):
        return self.inner.act_batch(observations, infos, memories)


def test_a_rounds_rows_are_given_back_by_the_own_memory_replay_and_relabelled_by_the_followed_one(tmp_path):
    bench = load()
    seat = ExpertLabels(make_policy("agent", "sop", None), OwnMemory())  # sop departs from adaptive's labels
    evaluate("SEAD-Outbound-v0", seat, 8, seed=3, env_kwargs={"max_agent_turns": 8})
    rows = tmp_path / "dagger_0.jsonl"
    rows.write_text("".join(json.dumps(session) + "\n" for session in seat.sessions))
    out = tmp_path / "labels.json"
    assert bench.main([str(rows), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["states"] == sum(map(len, seat.sessions)) and result["sessions"] == 8
    assert 0 < result["label_changed"] < 1 and result["after_first_deviation"]["label_changed"] >= result["label_changed"]
    assert result["continuation_first_line_changed"]["lm_prefix_points"] == result["states"] - 8
    # a label that is not adaptive's (the rows are not this expert's) stops the run
    seat.sessions[0][1]["completion"][0]["content"] = render_agent_output(PHRASES["closing"][0], (2, 2, 2))
    rows.write_text("".join(json.dumps(session) + "\n" for session in seat.sessions))
    with pytest.raises(SystemExit, match="does not give the saved labels back"):
        bench.main([str(rows)])


def test_a_sentence_said_before_is_a_repeat_and_a_new_one_is_not():
    bench = load()
    prompt = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": render_agent_output("One. Two?")}]
    assert bench.repeats(render_agent_output("Three. Two?"), prompt)
    assert not bench.repeats(render_agent_output("Two, no?"), prompt) and not bench.repeats("Two?", prompt[:1])
