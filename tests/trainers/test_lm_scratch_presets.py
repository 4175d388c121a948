"""TRACER's user LM and RL-ADA's agent trained from scratch (issue 41, item 5): the scratch model built
on the teacher's text, the paired before/after changes the ``cpu-lm-scratch`` presets report."""

import pytest

torch = pytest.importorskip("torch")

from dialogue_gym.errors import ConfigError  # noqa: E402
from trainers.common.rundir import RunDir  # noqa: E402
from trainers.rlada import train as rlada_train  # noqa: E402
from trainers.rlada.config import build_config as rlada_config  # noqa: E402
from trainers.tracer import train as tracer_train  # noqa: E402
from trainers.tracer.config import build_config as tracer_config  # noqa: E402


def test_paired_strict_pass_by_hand():
    # Scenario a: 1 of 2 passes before, 2 of 2 after; b: 0 of 2, then 1 of 2. Any resample of scenarios
    # moves both sides by +0.5 (a: 0.5 -> 1, b: 0 -> 0.5), so the interval is the point.
    before = {"passed": [1, 0, 0, 0], "scenarios": ["a", "a", "b", "b"]}
    after = {"passed": [1, 1, 0, 1], "scenarios": ["a", "a", "b", "b"]}
    change = rlada_train.paired_strict_pass(before, after)
    assert change == pytest.approx({"before": 0.25, "after": 0.75, "change": 0.5, "change_low": 0.5, "change_high": 0.5, "episodes": 4})
    # The two scenarios move differently (+1 and -0.5): a resample of two a's gives +1, of two b's -0.5.
    change = rlada_train.paired_strict_pass({**before, "passed": [0, 0, 1, 1]}, {**after, "passed": [1, 1, 0, 1]})
    assert change["change"] == pytest.approx(0.75 - 0.5) and change["change_low"] == pytest.approx(-0.5) and change["change_high"] == pytest.approx(1.0)


@pytest.mark.parametrize("other", [
    {"passed": [1, 1, 0, 1], "scenarios": ["a", "b", "a", "b"]},  # the same outcomes on other episodes
    {"passed": [1, 1, 0], "scenarios": ["a", "a", "b"]},
    {"scenarios": ["a", "a", "b", "b"]},  # a result saved before per-episode outcomes were kept
])
def test_paired_strict_pass_refuses_results_of_other_episodes(other):
    before = {"passed": [1, 0, 0, 0], "scenarios": ["a", "a", "b", "b"]}
    with pytest.raises(ConfigError, match="paired_strict_pass needs two held-out results of the same episodes"):
        rlada_train.paired_strict_pass(before, other)


def test_rlada_scratch_corpus_is_what_the_side_sees_and_says_in_router_calls():
    config = rlada_config("cpu-lm-scratch", sft_episodes=3, max_agent_turns=3)
    agent = rlada_train.router_text(config, "agent")
    assert agent == rlada_train.router_text(config, "agent")  # its own seed stream: the same text every time
    assert any(text.lstrip().startswith("{") for text in agent)  # the router's JSON actions
    assert rlada_train.router_text(config, "customer") != agent


def test_rlada_router_calls_of_other_streams_are_other_calls():
    config = rlada_config("cpu-lm-scratch", sft_episodes=3, max_agent_turns=3)
    calls = rlada_train.router_calls(config, "agent", 3, rlada_train.CORPUS_STREAM)
    assert [text for pairs in calls for messages, said in pairs for text in (*(m["content"] for m in messages), said)] == rlada_train.router_text(config, "agent")
    other = rlada_train.router_calls(config, "agent", 3, rlada_train.CORPUS_STREAM + 1)
    assert [pairs[0][0][0]["content"] for pairs in other] != [pairs[0][0][0]["content"] for pairs in calls]  # other callers, other banks


def test_rlada_router_calls_seed_each_episode_from_its_own_stream(monkeypatch):
    from dialogue_gym.seeding import mix_seed

    config, played = rlada_config("cpu-lm-scratch", seed=7), []
    monkeypatch.setattr(rlada_train, "play", lambda game_config, players, plan, learners, on_done: played.extend(plan))
    rlada_train.router_calls(config, "agent", 3, 11)
    assert [seed for _, seed in played] == [mix_seed(7, 11, episode) for episode in range(3)]


def test_tracer_scratch_corpus_holds_training_sessions_only():
    config = tracer_config("cpu-lm-scratch")
    game = tracer_train.TracerGame()
    train_ids, held_out = tracer_train.split_sessions(game.references, config.heldout_per_group)
    assert len(held_out) == 40
    rows = [row for session in tracer_train.lm_sessions(game, [game.references[i] for i in train_ids]) for row in session]
    expected = [message["content"] for row in rows for message in (*row["prompt"], *row["completion"])]
    assert tracer_train.training_text(config) == expected
    everything = tracer_train.training_text(tracer_config("cpu-lm-scratch", heldout_per_group=0))
    assert len(expected) < len(everything)


def test_tracer_cpu_lm_scratch_reports_each_stage_paired(tmp_path):
    pytest.importorskip("trl")
    config = tracer_config(
        "cpu-lm-scratch", run_dir=str(tmp_path / "run"), sft_steps=2, sft_batch_size=2, iterations=1, sessions_per_iteration=1, group_size=2,
        max_user_turns=2, max_new_tokens=4, eval_sessions=2, eval_batch=2, eval_rollouts=1, threads=1, plots=False,
    )
    run = tracer_train.train(config)
    tokenizer_file = run.path / "scratch_model" / "tokenizer.json"
    assert tokenizer_file.exists() and not (run.path / "tiny_model").exists()
    sft, rl, whole = (run.load_state(name) for name in ("eval_change_sft", "eval_change_rl", "eval_change"))
    for metric in ("group_dpcr", "intent_dtw", "w1_turns"):
        # untuned -> SFT -> RL, each end the same evaluation: the SFT side of both changes is one set of episodes
        assert sft[metric]["after"] == rl[metric]["before"] and sft[metric]["before"] == whole[metric]["before"]
        assert rl[metric]["after"] == whole[metric]["after"]
    assert run.load_state("eval_sft")["group_dpcr"] == sft["group_dpcr"]["after"]


@pytest.mark.slow
def test_rlada_cpu_lm_scratch_reports_strict_pass_paired(tmp_path):
    config = rlada_config(
        "cpu-lm-scratch", run_dir=str(tmp_path / "run"), copy_steps=2, sft_episodes=2, sft_epochs=1, warmup_agent_iterations=1, warmup_customer_iterations=1,
        warmup_batch=2, group_size=2, episodes_per_scenario=1, gym_iterations=1, gym_starts=2, max_agent_turns=2, agent_max_new_tokens=4,
        heldout_repeats=1, threads=1, plots=False,
    )
    run = rlada_train.train(config)
    assert (run.path / "agent_scratch_model" / "tokenizer.json").exists()
    before, after = run.load_state("heldout_before"), run.load_state("heldout_after")
    assert len(before["passed"]) == 12 and before["scenarios"] == after["scenarios"]
    assert run.load_state("heldout_change") == pytest.approx(rlada_train.paired_strict_pass(before, after, seed=config.seed), nan_ok=True)
    RunDir.resume(run.path).close()
