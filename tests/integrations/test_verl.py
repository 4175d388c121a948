"""verl agent loops on CPU without verl, the way verl tests its own CPU-safe parts: the dialogue loop
against a fake rollout server (verl's ``generate`` contract: token ids in, ``TokenOutput`` out) with a tiny
tokenizer; token and mask alignment over multi-turn dialogues for every id and role; reward propagation;
the agent loop configs and the recipe that load."""

import asyncio
import json
import pathlib
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")

from masks import runs  # noqa: E402

from dialogue_gym.errors import ConfigError, DependencyNotInstalled  # noqa: E402
from dialogue_gym.integrations.common import LearnerEpisodes, replay  # noqa: E402
from dialogue_gym.integrations.verl import (  # noqa: E402
    LOOP_TARGET,
    agent_loop_configs,
    agent_loop_name,
    dataset_rows,
    play_dialogue,
    render,
    write_agent_loop_config,
)
from envs_registry import REGISTRY  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHORT = {"SEAD-Outbound-v0": {"max_agent_turns": 3}, "TRACER-UserSim-v0": {"max_user_turns": 3}, "DMBench-Assistant-v0": {"max_user_turns": 3},
         "RLADA-Banking-v0": {"max_agent_turns": 3}, "RLADA-Customer-v0": {"max_agent_turns": 3},
         "RLADA-Banking-v1": {"max_agent_turns": 3}}
ROLES = [(entry.id, role) for entry in REGISTRY for role in entry.roles]


def line(env_id, learner, turn):
    text = f"Thank you, could you tell me a little more about that? ({turn})"
    return json.dumps({"action_type": "speak", "content": text}) if env_id.startswith("RLADA") and learner == "agent" else text


class FakeRolloutServer:
    """verl's ``LLMServerClient.generate`` contract on CPU: ``await generate(request_id, prompt_ids=...,
    sampling_params=...)`` -> an object with ``token_ids`` and ``log_probs`` (verl's ``TokenOutput``).
    It replies with a canned line per turn of each dialogue (request id) (a move that keeps any id's dialogue going), ends the turn
    with eos, except its second turn, which it cuts at ``max_tokens`` with no eos (a turn out of
    tokens); logprobs are distinct numbers so the test can follow each one. Calls are recorded."""

    def __init__(self, tokenizer, env_id, learner):
        self.tokenizer, self.env_id, self.learner = tokenizer, env_id, learner
        self.calls = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        await asyncio.sleep(0)  # let the other dialogues of the batch run in between
        count = sum(call[0] == request_id for call in self.calls)  # this dialogue's turn
        ids = self.tokenizer(line(self.env_id, self.learner, count), add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        cap = sampling_params["max_tokens"]
        ids = ids[: min(cap, 6)] if count == 1 else ids[:cap]
        output = SimpleNamespace(token_ids=ids, log_probs=[-(count + 1) - k / 100 for k in range(len(ids))], stop_reason="completed", extra_fields={})
        self.calls.append((request_id, list(prompt_ids), dict(sampling_params), output))
        return output


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


def play_rows(tokenizer, env_id, learner, rows, response_length=4096, **kwargs):
    server = FakeRolloutServer(tokenizer, env_id, learner)

    async def main():
        return await asyncio.gather(*(
            play_dialogue(server, tokenizer, env_id, episode=row["extra_info"]["env_episode"], seed=row["extra_info"]["env_seed"], learner=learner,
                          env_kwargs=SHORT[env_id], sampling_params={"temperature": 1.0}, response_length=response_length, request_id=f"r{k}",
                          raw_prompt=row["prompt"], **kwargs)
            for k, row in enumerate(rows)))

    return asyncio.run(main()), server


@pytest.mark.parametrize("env_id, learner", ROLES, ids=[f"{e}-{r}" for e, r in ROLES])
def test_tokens_and_mask_line_up_over_whole_dialogues_for_every_id_and_role(env_id, learner, tokenizer):
    rows = dataset_rows(env_id, 3, seed=5, learner=learner, env_kwargs=SHORT[env_id])
    rows = [rows[0], rows[0], rows[1], rows[2]]  # a GRPO group shares its start
    outputs, server = play_rows(tokenizer, env_id, learner, rows)
    assert outputs[0].trajectory.profile == outputs[1].trajectory.profile
    assert outputs[0].trajectory.to_dict() == outputs[1].trajectory.to_dict()  # same start, same (deterministic) server
    by_request = {}
    for request_id, prompt_ids, params, output in server.calls:
        by_request.setdefault(request_id, []).append((prompt_ids, output))
    heard_some = False
    for k, (row, out) in enumerate(zip(rows, outputs)):
        trajectory = out.trajectory
        assert trajectory.learner == learner and trajectory.outcome is not None and out.stopped is None
        # the prompt is the env's opening chat as the template renders it
        assert tokenizer.decode(out.prompt_ids) == render(tokenizer, row["prompt"])
        assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
        # every generation was asked for from the whole sequence so far, and its ids follow it, masked 1
        sequence = out.prompt_ids + out.response_ids
        ones = [(s, e) for value, s, e in runs(out.response_mask) if value == 1]
        calls = by_request[f"r{k}"]
        assert len(calls) == len(ones) == len(trajectory.turns_of(learner)) >= 1
        for (prompt_ids, output), (s, e) in zip(calls, ones):
            assert sequence[: len(prompt_ids)] == prompt_ids and len(prompt_ids) == len(out.prompt_ids) + s
            assert out.response_ids[s:e] == output.token_ids and out.response_logprobs[s:e] == output.log_probs
        assert [turn.token_ids for turn in trajectory.turns_of(learner)] == [out.response_ids[s:e] for s, e in ones]
        assert all(lp == 0.0 for lp, m in zip(out.response_logprobs, out.response_mask) if m == 0)
        # the j-th masked run holds every message the learner heard between its turns j and j + 1
        chat = replay(trajectory, SHORT[env_id]).observe(learner)["messages"]
        own = [i for i, m in enumerate(chat) if m["role"] == "assistant"][-len(trajectory.turns_of(learner)) :]
        zeros = [(s, e) for value, s, e in runs(out.response_mask) if value == 0]
        assert len(zeros) == len(ones) - 1 and out.response_mask[-1] == 1  # ends with the learner's last turn
        for j, (s, e) in enumerate(zeros):
            between = chat[own[j] + 1 : own[j + 1]]
            assert between and all(m["content"] in tokenizer.decode(out.response_ids[s:e]) for m in between)
            heard_some = True
        # the reward is the env's
        assert out.reward == trajectory.rewards[learner] and out.reward_terms == trajectory.reward_terms
        assert out.outcome == trajectory.outcome.value
    assert heard_some  # some dialogue went on after the learner's first turn


def test_the_response_length_is_kept_and_the_rest_is_silence_scored_by_the_rules(tokenizer):
    rows = dataset_rows("RLADA-Banking-v0", 1, seed=3, env_kwargs=SHORT["RLADA-Banking-v0"])
    (out,), server = play_rows(tokenizer, "RLADA-Banking-v0", "agent", rows, response_length=40, max_turn_tokens=30)
    assert len(out.response_ids) <= 40 and out.stopped == "response_length"
    assert all(params["max_tokens"] <= 30 for _, _, params, _ in server.calls)
    # finished by the rules with the agent silent: the judge still scored the call, and the reward is the env's
    assert "agent/judge" in out.reward_terms and out.reward == out.trajectory.rewards["agent"]
    silent = LearnerEpisodes("RLADA-Banking-v0", env_kwargs=SHORT["RLADA-Banking-v0"])
    silent.start(0, 0, 3)
    texts = [turn.raw for turn in out.trajectory.turns_of("agent")]
    assert texts[-1] == "" and texts[0] != ""


def test_a_row_from_another_start_or_too_long_a_prompt_is_a_config_error(tokenizer):
    rows = dataset_rows("RLADA-Banking-v0", 2, seed=0, env_kwargs=SHORT["RLADA-Banking-v0"])
    wrong = {**rows[1], "extra_info": rows[0]["extra_info"]}  # another episode's opening (another account)
    with pytest.raises(ConfigError, match="not the opening chat"):
        play_rows(tokenizer, "RLADA-Banking-v0", "agent", [wrong])
    with pytest.raises(ConfigError, match="raise data.max_prompt_length"):
        play_rows(tokenizer, "RLADA-Banking-v0", "agent", rows[:1], prompt_length=8)
    with pytest.raises(ConfigError, match="is not a role of"):
        agent_loop_name("SEAD-Outbound-v0", "judge")


def test_one_agent_loop_per_id_and_role_in_the_config_and_the_recipe(tmp_path):
    configs = agent_loop_configs()
    assert [(c["env_id"], c["learner"]) for c in configs] == ROLES
    assert all(c["_target_"] == LOOP_TARGET and c["name"] == agent_loop_name(c["env_id"], c["learner"]) for c in configs)
    omegaconf = pytest.importorskip("omegaconf")
    loaded = omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.load(write_agent_loop_config(str(tmp_path / "loops.yaml"), SHORT, 64)))
    assert loaded == agent_loop_configs(SHORT, 64) and loaded[0]["env_kwargs"] == SHORT[loaded[0]["env_id"]]
    (row,) = dataset_rows("TRACER-UserSim-v0", 1)
    assert row["agent_name"] == "dialogue_gym/TRACER-UserSim-v0/user" and row["extra_info"] == {"index": 0, "env_episode": 0, "env_seed": 0}


def load_recipe_module(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"verl_recipe_{name}", ROOT / "recipes/verl" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("recipe", ["sead_paper", "sead_single_gpu"])
def test_the_sead_recipes_load_and_prepare_their_data(recipe, tmp_path):
    omegaconf = pytest.importorskip("omegaconf")
    pytest.importorskip("datasets")
    config = omegaconf.OmegaConf.load(ROOT / f"recipes/verl/{recipe}.yaml")
    rollout, ours = config.actor_rollout_ref.rollout, config.dialogue_gym
    assert config.algorithm.adv_estimator == "grpo" and config.algorithm.norm_adv_by_std_in_grpo is False  # batch-mean baseline
    assert config.actor_rollout_ref.actor.optim.lr == 1e-6 and config.actor_rollout_ref.actor.kl_loss_coef == 0.001
    assert ours.profile_controller.batch_size == rollout.n and ours.profile_controller.n_max == 200
    assert rollout.agent.default_agent_loop == agent_loop_name("SEAD-Outbound-v0")
    if recipe == "sead_paper":
        assert config.actor_rollout_ref.model.path == "Qwen/Qwen2.5-14B-Instruct" and rollout.n == 60 and config.trainer.n_gpus_per_node == 8
        assert config.actor_rollout_ref.actor.fsdp_config.param_offload and rollout.free_cache_engine  # the decoupled schedule
    else:
        assert config.trainer.n_gpus_per_node == 1
    written = load_recipe_module("prepare").prepare(recipe, str(tmp_path))
    loops = omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.load(written["agent_loops"]))
    (sead,) = [loop for loop in loops if loop["name"] == rollout.agent.default_agent_loop]
    assert sead["env_kwargs"] == omegaconf.OmegaConf.to_container(ours.env_kwargs) and sead["curriculum"]["batch_size"] == rollout.n
    import datasets

    train = datasets.load_dataset("parquet", data_files=written["train"])["train"]
    assert len(train) == ours.train_rows and set(train["agent_name"]) == {sead["name"]}


@pytest.mark.slow
def test_the_cpu_smoke_recipe_runs_every_loop():
    report = load_recipe_module("cpu_smoke").smoke(dialogues=1, max_turn_tokens=8, response_length=256)
    assert [row["loop"] for row in report] == [name for name, *_ in __import__("dialogue_gym.integrations.verl", fromlist=["x"]).agent_loops()]
    assert all(row["learner_tokens"] > 0 and row["response"] <= 256 and row["outcome"] for row in report)


def test_the_pure_part_needs_no_verl_and_the_loop_names_the_extra():
    code = "import sys, dialogue_gym.integrations.verl; print('verl' in sys.modules, 'torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == ["False", "False"]
    try:
        import verl  # noqa: F401
    except ImportError:
        with pytest.raises(DependencyNotInstalled, match=r"dialogue_gym\[verl\]"):
            import dialogue_gym.integrations.verl_loop  # noqa: F401
    else:  # pragma: no cover - verl's own environment (benchmarks/gpu_verl_check.sh)
        from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

        from dialogue_gym.integrations import verl_loop

        assert all(name in _agent_loop_registry for name, *_ in verl_loop.agent_loops())


def test_the_profile_controller_chooses_each_iterations_starts(tokenizer):
    """SEAD's setup: one GRPO group (one uid) of B dialogues per iteration, from B profiles the controller
    drew; a new group updates the controller with the finished ones first."""
    from dialogue_gym.integrations.verl import CurriculumStarts

    starts = CurriculumStarts(batch_size=4, n_max=200, seed=0)
    first = [starts.profile("uid-1") for _ in range(4)]
    assert len({json.dumps(p, sort_keys=True) for p in first}) == 4 and starts.iterations == 1
    with pytest.raises(ConfigError, match="set the rollout's n"):
        starts.profile("uid-1")
    server = FakeRolloutServer(tokenizer, "SEAD-Outbound-v0", "agent")

    async def main():
        return await asyncio.gather(*(
            play_dialogue(server, tokenizer, "SEAD-Outbound-v0", episode=0, seed=11, env_kwargs=SHORT["SEAD-Outbound-v0"], response_length=2048,
                          request_id=f"c{k}", profile=profile)
            for k, profile in enumerate(first)))

    outputs = asyncio.run(main())
    assert [out.trajectory.profile for out in outputs] == first
    for out in outputs:
        starts.finished(out.trajectory.to_dict())
    assert starts.controller.counts.sum() == 0  # updated only when the next iteration starts
    starts.profile("uid-2")
    assert starts.controller.counts.sum() == 4 and starts.iterations == 2 and starts.state()["waiting"] == 0
    # two groups of one step (train_batch_size 2) draw side by side, each its own batch
    other = starts.profile("uid-3")
    assert [starts.profile("uid-2") for _ in range(3)] and starts.profile("uid-3") != other and starts.iterations == 3


def test_an_llm_played_user_answers_the_dialogues_waiting_together_in_one_batch(tokenizer):
    """The counterparts of dialogues that wait at the same time are one backend batch (as in the vector
    view), played on the pool's worker thread: eight concurrent SEAD calls against an LLM-played owner
    (the ``latency`` backend, a stand-in for a vLLM server) cost one backend call per turn, not eight."""
    from dialogue_gym.integrations.verl import episode_pool

    owner = "<reply>Sure, tell me more.</reply><cooperation>2</cooperation><emotion>1</emotion><trust>2</trust><status>0</status>"
    kwargs = {"max_agent_turns": 3, "user": "llm", "user_backend": {"name": "latency", "replies": [owner], "latency": 0.01}}
    backend = episode_pool("SEAD-Outbound-v0", None, kwargs).episodes.driver.policies["user"].backend
    server = FakeRolloutServer(tokenizer, "SEAD-Outbound-v0", "agent")

    async def main():
        return await asyncio.gather(*(
            play_dialogue(server, tokenizer, "SEAD-Outbound-v0", episode=k, seed=0, env_kwargs=kwargs, response_length=2048, request_id=f"u{k}")
            for k in range(8)))

    outputs = asyncio.run(main())
    turns = max(len(out.trajectory.turns_of("user")) for out in outputs)
    assert all(out.trajectory.turns_of("user") and out.trajectory.turns_of("user")[0].raw == owner for out in outputs)
    # One call per turn when every dialogue's move arrives before the batch is flushed; the env thread's
    # answer can race the event loop and split a wave (6 calls for 3 turns was seen on a loaded machine),
    # so the check is that dialogues share calls at all: unbatched, each of the 24 requests is a call.
    assert backend.requests == sum(len(out.trajectory.turns_of("user")) for out in outputs) == 8 * turns
    assert backend.calls <= backend.requests // 3
