"""TRL's GRPOTrainer on every id: ``rollout_func`` (whole dialogues, learner-only mask) and
``environment_factory`` (the model talks to the env through tool calls)."""

import json
import os
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
trl = pytest.importorskip("trl")
os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"

from integration_models import build_tool_calling_model  # noqa: E402

from dialogue_gym.errors import ConfigError, DependencyNotInstalled  # noqa: E402
from dialogue_gym.integrations.trl import (  # noqa: E402
    ENDED,
    env_reward,
    environment_dataset,
    environment_factory,
    make_rollout_func,
    reward_term,
    rollout_prompt,
    rollout_prompts,
    supports_environment_factory,
)
from dialogue_gym.integrations.common import LearnerEpisodes, replay  # noqa: E402
from envs_registry import REGISTRY  # noqa: E402
from masks import runs  # noqa: E402

SHORT = {"SEAD-Outbound-v0": {"max_agent_turns": 3}, "TRACER-UserSim-v0": {"max_user_turns": 3}, "DMBench-Assistant-v0": {"max_user_turns": 3},
         "RLADA-Banking-v0": {"max_agent_turns": 3}, "RLADA-Customer-v0": {"max_agent_turns": 3},
         "RLADA-Banking-v1": {"max_agent_turns": 3}}
"""Short dialogues keep the tests fast; the rules end every one of them."""


def fake_trainer(model_dir, max_completion_length=160):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return SimpleNamespace(
        processing_class=AutoTokenizer.from_pretrained(str(model_dir)), model=AutoModelForCausalLM.from_pretrained(str(model_dir)),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m, device="cpu"), state=SimpleNamespace(global_step=0),
        max_completion_length=max_completion_length, temperature=1.0, top_p=1.0,
    )


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda e: e.id)
def test_rollout_is_whole_dialogues_with_only_the_learners_tokens_unmasked(entry, scenario_model_dir):
    trajectories = []
    rollout = make_rollout_func(entry.id, env_kwargs=SHORT[entry.id], max_turn_tokens=10, on_trajectory=trajectories.append)
    trainer = fake_trainer(scenario_model_dir)
    tokenizer, learner = trainer.processing_class, entry.default_learner
    output = rollout([rollout_prompt(entry.id, 0, seed=5)] * 2 + [rollout_prompt(entry.id, 1, seed=5)] * 2, trainer)
    assert len(trajectories) == len(output["completion_ids"]) == 4
    assert trajectories[0].profile == trajectories[1].profile != trajectories[2].profile  # a group shares its start
    openings = [LearnerEpisodes(entry.id, env_kwargs=SHORT[entry.id]).start(0, episode, 5) for episode in (0, 1)]
    heard_some = False
    for k, trajectory in enumerate(trajectories):
        ids, mask, logprobs = output["completion_ids"][k], output["env_mask"][k], output["logprobs"][k]
        assert len(ids) == len(mask) == len(logprobs) <= 160 and trajectory.outcome is not None
        # the prompt is the env's opening chat, rendered by the model's template
        assert tokenizer.decode(output["prompt_ids"][k]) == tokenizer.apply_chat_template(openings[k // 2], add_generation_prompt=True, tokenize=False)
        # each generated turn is one run of 1s holding exactly its ids and generation logprobs, in order
        generated = [turn for turn in trajectory.turns_of(learner) if turn.token_ids is not None]
        ones = [(s, e) for value, s, e in runs(mask) if value == 1]
        zeros = [(s, e) for value, s, e in runs(mask) if value == 0]
        assert [ids[s:e] for s, e in ones] == [turn.token_ids for turn in generated]
        assert [logprobs[s:e] for s, e in ones] == [turn.logprobs for turn in generated]
        assert all(lp == 0.0 for lp, m in zip(logprobs, mask) if m == 0)
        # the j-th masked run holds every message the learner heard between its turns j and j + 1
        chat = replay(trajectory, SHORT[entry.id]).observe(learner)["messages"]
        own = [i for i, m in enumerate(chat) if m["role"] == "assistant"][-len(trajectory.turns_of(learner)) :]
        for j, (s, e) in enumerate(zeros):
            between = chat[own[j] + 1 : own[j + 1]]
            assert between and all(m["content"] in tokenizer.decode(ids[s:e]) for m in between)
            heard_some = True
        assert output["reward"][k] == trajectory.rewards[learner]
        assert output["reward_terms"][k] == trajectory.reward_terms and output["outcome"][k] == trajectory.outcome.value
    assert heard_some


def test_the_rollout_reproduces_and_stays_within_the_token_budget(scenario_model_dir):
    first = make_rollout_func("RLADA-Banking-v0", max_turn_tokens=16)([rollout_prompt("RLADA-Banking-v0", 3)] * 2, fake_trainer(scenario_model_dir, 40))
    again = make_rollout_func("RLADA-Banking-v0", max_turn_tokens=16)([rollout_prompt("RLADA-Banking-v0", 3)] * 2, fake_trainer(scenario_model_dir, 40))
    assert first == again
    assert all(len(ids) <= 40 for ids in first["completion_ids"])
    # out of budget, the dialogue was finished by the rules with the agent silent: the judge still scored it
    assert all("agent/judge" in terms for terms in first["reward_terms"])


def test_reward_functions_read_the_env_columns():
    assert env_reward(["a", "b"], reward=[1.5, -2.0]) == [1.5, -2.0]
    judge = reward_term("agent/judge")
    assert judge.__name__ == "agent_judge"
    assert judge(["a", "b"], reward_terms=[{"agent/judge": 2.5, "agent/turn_cost": -0.1}, {"customer/format": 1.0}]) == [2.5, 0.0]
    environments = [SimpleNamespace(reward_terms={"agent/judge": 1.25})]
    assert judge(["a"], environments=environments) == [1.25]
    with pytest.raises(ConfigError, match="'<role>/<term>' name"):
        reward_term("judge")
    with pytest.raises(ConfigError, match="needs the 'reward' column"):
        env_reward(["a"])


def test_bad_prompts_and_rows_are_typed_errors(scenario_model_dir):
    rollout = make_rollout_func("SEAD-Outbound-v0")
    with pytest.raises(ConfigError, match=r"names no SEAD-Outbound-v0 episode; build the dataset with rollout_prompts"):
        rollout([[{"role": "user", "content": "hello"}]], fake_trainer(scenario_model_dir))
    with pytest.raises(ConfigError, match="names no SEAD-Outbound-v0 episode"):
        rollout([rollout_prompt("RLADA-Banking-v0", 0)], fake_trainer(scenario_model_dir))
    environment = environment_factory("SEAD-Outbound-v0")()
    with pytest.raises(ConfigError, match="without 'env_episode' and 'env_seed'.*environment_dataset"):
        environment.reset(prompt=[{"role": "user", "content": ""}])
    with pytest.raises(ConfigError, match="opened differently from the dataset row's prompt"):
        environment.reset(env_episode=0, env_seed=0, prompt=[{"role": "user", "content": "another dialogue"}])
    with pytest.raises(ConfigError, match="episodes must be a positive int"):
        rollout_prompts("SEAD-Outbound-v0", 0)
    with pytest.raises(ConfigError, match="Unknown environment id"):
        rollout_prompts("SEAD-Inbound-v9", 2)


def test_missing_trl_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "trl", None)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'dialogue_gym\[train\]'"):
        supports_environment_factory()


def test_banking_tools_are_moves_of_the_env():
    """The agent's tool calls go to the env (validated, executed against the episode's bank, judged),
    not to stateless functions: the trajectory records them and the judge sees the routing."""
    environment = environment_factory("RLADA-Banking-v0")()
    row = environment_dataset("RLADA-Banking-v0", 1, seed=2)[0]
    environment.reset(**row)
    account = json.dumps(row["prompt"]).split("matched account ")[1][:10]
    looked_up = json.loads(environment.lookup_account(account_id=account))
    assert looked_up["tool"] == "lookup_account" and looked_up["ok"] is True
    assert json.loads(environment.lookup_account(account_id="ACC-000000"))["error"]["code"] == "account_not_found"
    reply = environment.speak(message="I have opened your account. What can I help you with today?")
    assert reply and ENDED not in reply
    closing = environment.end_call(message="Thank you for calling, goodbye.")
    assert closing.endswith(ENDED) and environment.speak(message="hello?") == ENDED
    trajectory = environment.trajectory
    moves = [json.loads(turn.raw) for turn in trajectory.turns_of("agent")]
    assert [m["action_type"] for m in moves] == ["tool_call", "tool_call", "speak", "end_call"]
    assert moves[0] == {"thinking": "", "action_type": "tool_call", "content": "lookup_account", "tool_args": {"account_id": account}}
    assert trajectory.meta["verdict"]["routed_tools"][0] == "lookup_account" and trajectory.meta["verdict"]["lookup_first"]
    assert environment.get_reward() == trajectory.rewards["agent"]


def test_a_model_that_never_calls_a_tool_is_silent_and_scored_by_the_rules():
    environment = environment_factory("RLADA-Banking-v0")()
    environment.reset(**environment_dataset("RLADA-Banking-v0", 1, seed=2)[0])
    reward = environment.get_reward()
    assert environment.trajectory.outcome is not None and reward == environment.trajectory.rewards["agent"] < -3.0
    assert environment.reward_terms["agent/identity_check"] == -1.2 and environment.reward_terms["agent/domain_tool"] == -1.8


def grpo_args(tmp_path, **extra):
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=2, max_completion_length=128,
        report_to=[], use_cpu=True, learning_rate=1e-4, save_strategy="no", logging_steps=1, disable_tqdm=True,
        activation_checkpointing=False, **extra,
    )


def train_with_rollout(env_id, model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    played = []
    rollout = make_rollout_func(env_id, env_kwargs=SHORT[env_id], max_turn_tokens=8, on_trajectory=played.append)
    seen = []
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(model_dir)), args=grpo_args(tmp_path),
        reward_funcs=[env_reward, reward_term(f"{REGISTRY_BY_ID[env_id].default_learner}/invalid_action")],
        train_dataset=rollout_prompts(env_id, 4, seed=11), processing_class=AutoTokenizer.from_pretrained(str(model_dir)),
        rollout_func=lambda prompts, t: seen.append(rollout(prompts, t)) or seen[-1],
    )
    trainer.train()
    assert trainer.state.global_step == 2 and len(seen) == 2 and len(played) == 4
    logged = trainer.state.log_history[0]
    assert logged["rewards/env_reward/mean"] == pytest.approx(sum(seen[0]["reward"]) / 2, abs=1e-5)
    masks = [mask for output in seen for mask in output["env_mask"]]
    learner = REGISTRY_BY_ID[env_id].default_learner
    for mask, trajectory in zip(masks, played):
        generated = [turn for turn in trajectory.turns_of(learner) if turn.token_ids is not None]
        assert mask[0] == 1 and [value for value, _, _ in runs(mask)][::2] == [1] * len(generated)


REGISTRY_BY_ID = {entry.id: entry for entry in REGISTRY}


def test_grpo_trainer_two_steps_with_the_banking_rollout(scenario_model_dir, tmp_path):
    train_with_rollout("RLADA-Banking-v0", scenario_model_dir, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [entry.id for entry in REGISTRY if entry.id != "RLADA-Banking-v0"])
def test_grpo_trainer_two_steps_with_every_rollout(env_id, scenario_model_dir, tmp_path):
    train_with_rollout(env_id, scenario_model_dir, tmp_path)


def train_with_environments(env_id, tool_call, model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    scripted = build_tool_calling_model(model_dir, tmp_path / "scripted", tool_call)
    factory = environment_factory(env_id, env_kwargs=SHORT[env_id])
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(scripted)), args=grpo_args(tmp_path, max_tool_calling_iterations=2),
        train_dataset=environment_dataset(env_id, 4, seed=11, env_kwargs=SHORT[env_id]),
        processing_class=AutoTokenizer.from_pretrained(str(scripted)), environment_factory=factory,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] > 0 and logged["tools/failure_frequency"] == 0
    return trainer


BANK_TOOL_IDS = [entry.id for entry in REGISTRY if entry.default_learner == "agent" and "customer" in entry.roles]
"""The ids whose learner is the bank's support agent: its environment offers the bank's tools, not ``respond``."""


@pytest.mark.parametrize("env_id", [env_id if env_id == "RLADA-Banking-v0" else pytest.param(env_id, marks=pytest.mark.slow) for env_id in BANK_TOOL_IDS])
def test_grpo_trainer_routes_the_banking_agents_tool_calls_through_the_env(env_id, scenario_model_dir, tmp_path):
    assert supports_environment_factory()
    call = '<tool_call>\n{"name": "lookup_account", "arguments": {"account_id": "ACC-000001"}}\n</tool_call>'
    trainer = train_with_environments(env_id, call, scenario_model_dir, tmp_path)
    for environment in trainer.environments:
        trajectory = environment.trajectory
        first = json.loads(trajectory.turns_of("agent")[0].raw)
        assert first["content"] == "lookup_account" and first["tool_args"] == {"account_id": "ACC-000001"}
        # the env ran it against the episode's bank (no such account) and the judge saw no identity check
        assert trajectory.turns_of("agent")[0].text == '[lookup_account({"account_id": "ACC-000001"}) -> error]'
        assert trajectory.meta["verdict"]["lookup_first"] is False and trajectory.reward_terms["agent/identity_check"] == -1.2
    assert trainer.state.log_history[0]["rewards/BankingAgentEnvironment/mean"] < 0


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [entry.id for entry in REGISTRY if entry.id not in BANK_TOOL_IDS])
def test_grpo_trainer_with_every_environment(env_id, scenario_model_dir, tmp_path):
    call = '<tool_call>\n{"name": "respond", "arguments": {"message": "Hello, could you tell me more?"}}\n</tool_call>'
    trainer = train_with_environments(env_id, call, scenario_model_dir, tmp_path)
    for environment in trainer.environments:
        said = [turn.raw for turn in environment.trajectory.turns_of(REGISTRY_BY_ID[env_id].default_learner)]
        assert said[0] == "Hello, could you tell me more?"
