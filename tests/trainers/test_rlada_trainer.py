"""The RL-ADA trainer: a small co-evolution end to end, its outputs, config errors, resume after
kill -9, the tiny-LM plumbing, and (slow) the full cpu-strategy preset."""

import json
import re
from pathlib import Path

import pytest

from dialogue_gym.errors import ConfigError
from dialogue_gym.scenarios.rlada.data import load_domain
from trainers.common import RunDir
from trainers.rlada import train as train_module
from trainers.rlada.config import build_config
from trainers.rlada.strategy import CUSTOMER_MOVES, StrategyAgent, StrategyCustomer
from trainers.rlada.train import train
from trainer_runs import kill_after, start_trainer, trajectory_lines

SMALL = {
    "episodes_per_scenario": 2, "gym_iterations": 2, "gym_starts": 4, "group_size": 2, "sft_episodes": 40,
    "warmup_agent_iterations": 2, "warmup_customer_iterations": 2, "warmup_batch": 8, "min_matches": 2,
    "max_matches": 3, "heldout_repeats": 1,
}


def _small_args():
    return [f"--{key.replace('_', '-')}={value}" for key, value in SMALL.items()] + ["--plots=false"]


def test_small_co_evolution_writes_every_output(tmp_path, capsys):
    run = train(build_config("cpu-strategy", run_dir=str(tmp_path / "run"), **SMALL))
    state = run.load_state("progress")
    phases = [row["phase"] for row in run.read_metrics()]
    assert phases[:6] == ["sft", "warmup_agent", "warmup_agent", "heldout_before", "warmup_customer", "warmup_customer"]
    assert phases[-1] == "heldout_after" and "gym" in phases and state["next"] == {"phase": "done"}
    assert 2 <= len(state["matches"]) <= 3 and state["stop_reason"]
    match = state["matches"][0]
    assert set(match["per_scenario"]) == {s.id for s in load_domain().arena} and 0.0 <= match["win_rate"] <= 1.0
    rows = [r for r in run.read_metrics() if r["phase"] == "match"]
    assert {"arena/win_rate", "arena/safety_pass_rate", "arena/style/camouflage_a", "arena/scenario/dispute_duplicate"} <= set(rows[0])
    gyms = [r for r in run.read_metrics() if r["phase"] == "gym"]
    assert gyms[0]["side"] in ("agent", "customer") and f"{gyms[0]['side']}/policy/entropy" in gyms[0]
    for name in ("heldout_before", "heldout_after"):
        result = run.load_state(name)
        assert result["episodes"] == 12 and 0.0 <= result["routing_accuracy"] <= 1.0
    assert {p.name for p in (run.path / "plots").iterdir()} == {"win_rate_per_match.png", "per_scenario.png", "heldout_before_after.png"}
    assert (run.path / "transcripts" / "match_01.txt").read_text().startswith("## dispute_duplicate")
    sides = sorted(p.name.split("_step_")[0] for p in (run.path / "checkpoints").iterdir())
    assert set(sides) == {"agent", "customer"} and sides.count("agent") <= 2
    assert StrategyAgent.load(load_domain(), run.path / state["checkpoints"]["agent"]).core.weights.any()
    with pytest.raises(ConfigError, match="already holds a run; pass --resume"):
        train(build_config("cpu-strategy", run_dir=str(run.path), **SMALL))


def test_main_prints_matches_and_heldout(tmp_path, capsys):
    assert train_module.main([*_small_args(), "--run-dir", str(tmp_path / "cli"), "--max-matches", "2"]) == 0
    printed = capsys.readouterr().out
    assert "match 1: agent win rate" in printed and "held-out routing" in printed and "stopped: " in printed
    assert re.search(r"strict PASS \d\.\d{3} -> \d\.\d{3}, account verified first \d\.\d{3} -> \d\.\d{3}; best scripted baseline (keyword|always_escalate|random): routing", printed)


def test_config_errors():
    with pytest.raises(ConfigError, match="preset='huge' is unknown"):
        build_config("huge")
    with pytest.raises(ConfigError, match=r"Unknown trainer option\(s\) \['matches'\]"):
        build_config(matches=3)
    with pytest.raises(ConfigError, match="agent_policy='lm' needs agent_model"):
        build_config(agent_policy="lm")
    with pytest.raises(ConfigError, match=r"sft_epochs=0 with sft_episodes=1000: .*set --sft-epochs N \(N >= 1\), or --sft-episodes 0"):
        build_config("cpu-lm-scratch", sft_epochs=0)
    assert build_config("cpu-lm-scratch", sft_epochs=0, sft_episodes=0).sft_epochs == 0
    with pytest.raises(ConfigError, match=r"copy_steps=5 with agent_policy='strategy': .*set --agent-policy lm, or --copy-steps 0"):
        build_config(copy_steps=5)
    with pytest.raises(ConfigError, match=r"copy_steps=5 with agent_policy='strategy'"):
        build_config(copy_steps=5, customer_policy="lm", customer_model="tiny")  # an LM customer has no copy phase
    with pytest.raises(ConfigError, match="copy_steps"):
        build_config("cpu-lm-scratch", copy_steps=-1)
    with pytest.raises(ConfigError, match="need 1 <= min_matches <= max_matches, got 5 and 4"):
        build_config(min_matches=5, max_matches=4)
    with pytest.raises(ConfigError, match="failure_fraction must be in"):
        build_config(failure_fraction=1.5)


def test_strategy_checkpoints_round_trip_and_reject_other_shapes(tmp_path):
    domain = load_domain()
    customer = StrategyCustomer(domain, learning_rate=0.5)
    customer.core.weights[0, 2] = 1.25
    customer.save(tmp_path)
    loaded = StrategyCustomer.load(domain, tmp_path)
    assert loaded.moves == CUSTOMER_MOVES and loaded.core.weights[0, 2] == 1.25 and loaded.core.learning_rate == 0.5
    data = json.loads((tmp_path / "customer_strategy.json").read_text())
    data["moves"] = ["direct"]
    (tmp_path / "customer_strategy.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="other features/moves than this domain; retrain it"):
        StrategyCustomer.load(domain, tmp_path)
    with pytest.raises(ConfigError, match=r"nowhere/agent_strategy.json is missing; .*restore that folder from a copy"):
        StrategyAgent.load(domain, tmp_path / "nowhere")


@pytest.mark.parametrize("kill_after_lines", [20, 150])
def test_resume_after_kill_loses_nothing_and_continues_exactly(tmp_path, kill_after_lines):
    reference = tmp_path / "reference"
    assert start_trainer("trainers.rlada", [*_small_args(), "--run-dir", str(reference)]).wait(timeout=300) == 0
    killed = tmp_path / "killed"
    process = start_trainer("trainers.rlada", [*_small_args(), "--run-dir", str(killed)])
    kill_after(process, killed, kill_after_lines)
    total = trajectory_lines(reference)
    assert trajectory_lines(killed) < total, "the run finished before it could be killed"
    assert start_trainer("trainers.rlada", ["--resume", str(killed)]).wait(timeout=300) == 0
    done, expected = RunDir(killed), RunDir(reference)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "time/seconds"} for r in rows]  # noqa: E731
    assert strip(done.read_metrics()) == strip(expected.read_metrics())
    assert done.load_state("progress") == expected.load_state("progress")
    assert done.load_state("heldout_after") == expected.load_state("heldout_after")

    def by_episode(folder):
        records = [json.loads(line) for line in (folder / "trajectories.jsonl").read_text().splitlines()]
        return {(r["iteration"], r["episode"]): r for r in records}, len(records)

    resumed, written = by_episode(killed)
    assert written == total and resumed == by_episode(reference)[0]  # none lost, none twice, all equal


def test_tiny_lm_agent_sft_and_grpo_steps(tmp_path, tiny_model_dir):
    """The LM path of the bootstrap (the shared SFT phase on keyword-router demonstrations, the clone
    held out, then a GRPO step) with a random tiny model; the whole preset runs in the slow test below."""
    torch = pytest.importorskip("torch")
    config = build_config(
        "cpu-tiny-lm", run_dir=str(tmp_path / "lm"), agent_model=str(tiny_model_dir), sft_episodes=2, warmup_batch=2,
        max_agent_turns=2, agent_max_new_tokens=8, sft_learning_rate=3e-3, sft_batch_size=2, sft_epochs=3,
    )
    run = RunDir.create(config.run_dir, config.to_dict())
    state = train_module.new_state()
    evolution = train_module.CoEvolution(config, run, state, resumed=False)
    state["next"] = evolution.first_phase()
    untrained = {name: tensor.clone() for name, tensor in evolution.agent.model.state_dict().items()}
    evolution.step()
    # The agent after SFT is the clone the SFT phase saved, not the model it started from.
    from safetensors.torch import load_file

    cloned_weights = load_file(str(run.path / "sft" / "agent" / "model.safetensors"))
    weights = evolution.agent.model.state_dict()
    assert all(torch.equal(weights[name], cloned_weights[name]) for name in cloned_weights)
    assert any(not torch.equal(weights[name], untrained[name]) for name in cloned_weights)
    for _ in range(2):
        evolution.step()
    assert [row["phase"] for row in run.read_metrics()] == ["sft", "heldout_sft", "warmup_agent"] and state["next"] == {"phase": "heldout_before"}
    sft, heldout, warmup = run.read_metrics()
    assert heldout["heldout_sft/episodes"] == 12 == len(run.load_state("heldout_sft")["passed"])
    assert sft["sft/rows"] > 0 and sft["sft/loss"] > 0 and warmup["agent/loss/learner_tokens"] > 0
    assert sft["sft/steps"] == config.sft_epochs and "sft/curve" not in sft and run.load_state("sft")["sft/curve"]
    # The shared SFT phase ran at the cloning rate and batch, and the agent that went on to the warm-up
    # started from the clone with a fresh optimizer at the RL rate.
    cloned = run.path / "sft" / "agent"
    inputs = json.loads((cloned / "sft_finished.json").read_text())["inputs"]
    assert (inputs["learning_rate"], inputs["batch_size"], inputs["max_steps"]) == (config.sft_learning_rate, config.sft_batch_size, config.sft_epochs)
    assert inputs["model"] == str(tiny_model_dir)
    assert evolution.agent.optimizer.param_groups[0]["lr"] == config.agent_learning_rate
    assert json.loads((cloned / "config.json").read_text())["architectures"]
    record = next(t for t in run.read_trajectories() if t.meta["records"].get("agent", {}).get("turns"))
    turn = record.meta["records"]["agent"]["turns"][0]
    assert len(turn["completion_ids"]) == len(turn["logprobs"]) and turn["prompt_ids"]
    assert (run.path / run.load_state("progress")["checkpoints"]["agent"] / "optimizer.pt").exists()
    run.close()


def test_the_copy_warm_up_is_the_model_sft_clones_into(tmp_path, tiny_model_dir):
    """The ``copy`` phase trains the initial model on copy lines and saves it in the run folder; the agent
    plays it from then on, and ``sft`` starts from it (a clone of the untrained model would undo it)."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    config = build_config(
        "cpu-tiny-lm", run_dir=str(tmp_path / "lm"), agent_model=str(tiny_model_dir), copy_steps=2, sft_episodes=2, sft_batch_size=2,
        sft_epochs=1, max_agent_turns=2,
    )
    run = RunDir.create(config.run_dir, config.to_dict())
    state = train_module.new_state()
    evolution = train_module.CoEvolution(config, run, state, resumed=False)
    state["next"] = evolution.first_phase()
    row = evolution.step()
    copied = run.path / "copy" / "agent"
    assert row["copy/steps"] == 2.0 and 0 <= row["copy/heldout_tokens"] <= 1 and "copy/curve" not in row and run.load_state("copy")["copy/curve"]
    assert json.loads((copied / "sft_finished.json").read_text())["inputs"]["model"] == str(tiny_model_dir)
    warmed, weights = load_file(str(copied / "model.safetensors")), evolution.agent.model.state_dict()
    assert all(torch.equal(weights[name], warmed[name]) for name in warmed)
    assert state["next"] == {"phase": "sft"} and "agent" not in state["checkpoints"]  # the copy folder is the agent's model
    evolution.step()
    assert json.loads((run.path / "sft" / "agent" / "sft_finished.json").read_text())["inputs"]["model"] == str(copied)
    run.close()


@pytest.mark.slow
def test_full_cpu_strategy_preset_co_evolves(tmp_path):
    run = train(build_config("cpu-strategy", run_dir=str(tmp_path / "full")))
    state = run.load_state("progress")
    rates = [m["win_rate"] for m in state["matches"]]
    assert 3 <= len(rates) <= 8 and state["stop_reason"]
    before, after = run.load_state("heldout_before"), run.load_state("heldout_after")
    assert after["routing_accuracy"] > before["routing_accuracy"] and after["strict_pass"] > before["strict_pass"]
    assert rates[-1] > rates[0]


@pytest.mark.slow
def test_cpu_tiny_lm_preset_as_documented(tmp_path):
    pytest.importorskip("torch")
    run = train(build_config("cpu-tiny-lm", run_dir=str(tmp_path / "tiny")))
    assert run.load_state("heldout_after")["episodes"] == 12 and len(run.load_state("progress")["matches"]) == 2
    sft, after, change = (run.load_state(name) for name in ("heldout_sft", "heldout_after", "heldout_change_sft"))
    assert (change["before"], change["after"], change["episodes"]) == (sft["strict_pass"], after["strict_pass"], 12)


@pytest.mark.slow
def test_gpu_lm_preset_shape_with_tiny_models_on_cpu(tmp_path):
    """Both sides as causal LMs with LoRA (the gpu-lm preset's structure), tiny models, a few steps."""
    pytest.importorskip("peft")
    config = build_config(
        "gpu-lm", run_dir=str(tmp_path / "gpu"), agent_model="tiny", customer_model="tiny", device="cpu", lora_rank=4,
        sft_episodes=2, sft_epochs=1, warmup_agent_iterations=1, warmup_customer_iterations=1, warmup_batch=2, group_size=2,
        max_agent_turns=2, agent_max_new_tokens=8, customer_max_new_tokens=8,
    )
    run = RunDir.create(config.run_dir, config.to_dict())
    state = train_module.new_state()
    evolution = train_module.CoEvolution(config, run, state, resumed=False)
    state["next"] = evolution.first_phase()
    for _ in range(5):
        evolution.step()
    rows = run.read_metrics()
    assert [r["phase"] for r in rows] == ["sft", "heldout_sft", "warmup_agent", "heldout_before", "warmup_customer"]
    assert "customer/loss/total" in rows[-1] and (run.path / state["checkpoints"]["customer"] / "adapter_config.json").exists()
    customer_turns = [t for t in run.read_trajectories() if t.meta["records"].get("customer", {}).get("turns")]
    assert customer_turns and customer_turns[0].meta["records"]["customer"]["turns"][0]["completion_ids"]


def test_the_scratch_agent_reads_every_digit_as_a_token_of_its_own(tmp_path):
    """It copies account ids and amounts from its prompt, so a number must be the same tokens there and in its reply,
    after the same token."""
    transformers = pytest.importorskip("transformers")
    config = build_config("cpu-lm-scratch", run_dir=str(tmp_path / "scratch"), sft_episodes=4, max_agent_turns=2)
    run = RunDir.create(config.run_dir, config.to_dict())
    tokenizer = transformers.AutoTokenizer.from_pretrained(train_module._initial_model(config, "agent", run))
    for text in ('caller ID matched account ACC-823320.', '"tool_args": {"account_id": "ACC-823320"}}'):
        pieces = [tokenizer.decode([i]) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]
        assert [p for p in pieces if p.isdigit()] == list("823320")
        assert pieces[pieces.index("8") - 1] == "ACC-"  # the same piece before the id in the prompt and the reply
    run.close()
