"""The RL-ADA game through its envs: invalid actions, tool errors, rewards in info, endings, the customer."""

import json

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.errors import ConfigError, InvalidAction, ScenarioError
from dialogue_gym.scenarios.rlada.cues import names_intent
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer
from dialogue_gym.scenarios.rlada.data import LEVELS, load_domain
from dialogue_gym.scenarios.rlada.game import RladaConfig, RladaGame
from dialogue_gym.scenarios.rlada.parsing import parse_customer_output
from dialogue_gym.scenarios.rlada.parsing import render_agent_action as act

DOMAIN = load_domain()


def agent_env(**kwargs):
    return gym.make("RLADA-Banking-v0", **kwargs)


def test_observations_and_hidden_information():
    env = agent_env()
    observation, info = env.reset(seed=0, options={"scenario": "dispute_duplicate"})
    system, opening = observation["messages"]
    assert system["role"] == "system" and "lookup_account" in system["content"] and env.unwrapped.game.bank.customer_id in system["content"]
    assert opening["role"] == "user" and "transaction_charged_twice" not in json.dumps(observation)
    assert not {"intent", "target_tool", "scenario", "concealment"} & set(info)
    hidden = env.unwrapped.game.privileged()
    assert hidden["intent"] == "transaction_charged_twice" and hidden["target_tool"] == "dispute_charge" and hidden["scenario"] == "dispute_duplicate"
    assert env.unwrapped.game.role_profile("agent") == {} and env.unwrapped.game.info("customer")["intent"] == "transaction_charged_twice"
    customer_view = env.unwrapped.game.observe("customer")
    assert customer_view["intent"] == DOMAIN.intent("transaction_charged_twice").index and "Riverside Diner" in customer_view["messages"][0]["content"]


def test_malformed_output_is_flagged_penalised_and_the_agent_moves_again():
    env = agent_env()
    env.reset(seed=1)
    observation, reward, terminated, _, info = env.step("let me check that")
    assert info["invalid_action"].startswith("malformed JSON") and reward == pytest.approx(-0.3 - 0.05) and not terminated
    assert observation["messages"][-1]["role"] == "tool" and "invalid_action" in observation["messages"][-1]["content"]
    assert info["reward_terms"] == {"turn_cost": -0.05, "invalid_action": -0.3}
    observation, _, _, _, info = env.step(act("tool_call", "lookup_account", {"account_id": "nope"}))
    assert info["invalid_action"].startswith("invalid_arguments: tool_args.account_id must match")
    result = json.loads(observation["messages"][-1]["content"])
    assert result["ok"] is False and result["error"]["code"] == "invalid_arguments" and "schema" in result["error"]
    _, _, _, _, info = env.step(act("tool_call", "open_vault", {}))
    assert info["invalid_action"].startswith("unknown_tool") and env.unwrapped.game.bank.escalations == []


def test_domain_errors_are_not_invalid_actions():
    env = agent_env()
    env.reset(seed=1)
    _, reward, _, _, info = env.step(act("tool_call", "lookup_account", {"account_id": "ACC-000000"}))
    assert info["invalid_action"] is None and info["tool_error"] == "account_not_found" and reward == pytest.approx(-0.05)


def test_invalid_action_modes():
    env = agent_env(invalid_action="end")
    env.reset(seed=2)
    _, _, terminated, _, info = env.step("{oops")
    assert terminated and info["outcome"] == "invalid" and info["strict_pass"] is False
    raising = agent_env(invalid_action="raise")
    raising.reset(seed=2)
    with pytest.raises(InvalidAction, match="create the env with invalid_action='penalize' or 'end'"):
        raising.step("{oops")
    typed = agent_env()
    typed.reset(seed=0)
    with pytest.raises(InvalidAction, match="The 'agent' role's action must be a str"):
        typed.step({"action_type": "speak"})


def test_full_call_rewards_add_up_and_every_term_is_reported():
    env = agent_env()
    observation, info = env.reset(seed=4, options={"intent": "declined_card_payment", "concealment": "direct"})
    game = env.unwrapped.game
    card = game.bank.cards[0]
    total = 0.0
    for move in (
        act("tool_call", "lookup_account", {"account_id": game.bank.customer_id}),
        act("tool_call", "check_card_status", {"card_id": card.card_id}),
        act("speak", f"Your card ending {card.last4} is frozen, which is why it was declined."),
        act("end_call", "Thanks for calling, goodbye."),
    ):
        observation, reward, terminated, _, info = env.step(move)
        total += reward
    assert terminated and info["strict_pass"] and info["outcome"] == "success" and info["routed_tool"] == "check_card_status"
    trajectory = env.unwrapped.trajectory()
    assert total == pytest.approx(trajectory.rewards["agent"]) == pytest.approx(sum(info["reward_terms"].values()))
    assert set(info["reward_terms"]) == {"turn_cost", "tool_progress", "judge"}
    customer_terms = {k for k in trajectory.reward_terms if k.startswith("customer/")}
    assert customer_terms == {"customer/format", "customer/realism", "customer/concealment", "customer/inverse_agent"}
    assert trajectory.meta["verdict"]["score"] == 3.0 and trajectory.meta["strict_pass"]


def test_timeout_after_max_agent_turns():
    env = agent_env(max_agent_turns=2)
    env.reset(seed=5)
    env.step(act("tool_call", "get_transactions", {"account_id": "ACC-000000"}))
    _, _, terminated, _, info = env.step(act("tool_call", "get_transactions", {"account_id": "ACC-000000"}))
    assert terminated and info["outcome"] == "timeout" and info["reward_terms"]["domain_tool"] == -1.8


def test_config_and_option_errors_name_the_value_and_fix():
    with pytest.raises(ConfigError, match=r"Unknown keyword\(s\) \['max_turns'\] for RladaConfig"):
        agent_env(max_turns=3)
    with pytest.raises(ConfigError, match="scenario_set='random' is not supported"):
        RladaConfig(scenario_set="random")
    with pytest.raises(ConfigError, match="judge='llm' needs judge_backend"):
        agent_env(judge="llm")
    with pytest.raises(ConfigError, match="judge_backend is only used with judge='llm'"):
        agent_env(judge_backend={"name": "canned", "replies": ["2"]})
    with pytest.raises(ConfigError, match="customer='shy' is not a known customer policy"):
        agent_env(customer="shy")
    env = agent_env()
    with pytest.raises(ScenarioError, match="Unknown scenario 'nope'"):
        env.reset(seed=0, options={"scenario": "nope"})
    with pytest.raises(ConfigError, match="concealment='loud' is not a level"):
        env.reset(seed=0, options={"intent": "pin_blocked", "concealment": "loud"})
    with pytest.raises(ScenarioError, match="Unknown intent 'pin'"):
        env.reset(seed=0, options={"intent": "pin"})


def test_a_profile_replays_the_same_start():
    env = agent_env()
    first, _ = env.reset(seed=11)
    profile = env.unwrapped.game.episode_profile()
    again, _ = env.reset(seed=99, options={"profile": profile})
    assert first["messages"][0] == again["messages"][0] and env.unwrapped.game.episode_profile() == profile


@pytest.mark.parametrize("level", LEVELS)
def test_scripted_customer_never_names_its_intent_or_speaks_as_the_bank(level):
    customer = ScriptedCustomer(DOMAIN, level)
    for intent in DOMAIN.intents:
        game = RladaGame()
        game.reset(seed=intent.index, options={"intent": intent.name, "concealment": level})
        memory = customer.start(game.episode_profile(), 1)
        for agent_line in (None, "Could you tell me more?", "And what exactly happened?", "Which one was it?", "I see."):
            if agent_line is not None:
                game._customer_messages.append({"role": "user", "content": agent_line})
            text = customer.act(game.observe("customer"), {}, memory)
            game._customer_messages.append({"role": "assistant", "content": text})
            move = parse_customer_output(text, DOMAIN.hangup_markers, DOMAIN.role_reversal, DOMAIN.meta_talk)
            assert 1 <= move.sentences <= 2 and move.format_ok and not move.role_reversal, (intent.name, text)
            assert not names_intent(text, intent, DOMAIN.tool_names), (intent.name, text)
            assert "{" not in text


def test_camouflage_hides_more_than_direct():
    results = {}
    for level in ("direct", "camouflage"):
        env = agent_env(concealment=level)
        scores = []
        for seed in range(40):
            env.reset(seed=seed)
            scores.append(env.unwrapped.game.turns[0].parsed["concealment"])
        results[level] = sum(scores) / len(scores)
    assert results["camouflage"] > results["direct"] + 0.3


def test_llm_customer_role_reversal_is_flagged_and_scored():
    backend = CannedBackend(["Thank you for calling, how can I help you today?", "Fine, bye. [hang up]"])
    env = agent_env(customer="llm", customer_backend=backend)
    _, info = env.reset(seed=0)
    trajectory = env.unwrapped.trajectory()
    assert trajectory.turns[0].parsed["role_reversal"] and trajectory.reward_terms["customer/role_reversal"] == -1.0
    _, _, terminated, _, info = env.step(act("speak", "Sorry, could you say that again?"))
    assert terminated and info["outcome"] == "hangup"
    assert "never the bank" in env.unwrapped.game.observe("customer")["messages"][0]["content"]


def test_customer_learner_env_and_default_opponent():
    env = gym.make("RLADA-Customer-v0")
    observation, info = env.reset(seed=3, options={"scenario": "unknown_merchant"})
    assert "intent" in observation and observation["messages"][-1]["content"] == DOMAIN.bank["greeting"]
    done, total = False, 0.0
    while not done:
        observation, reward, done, _, info = env.step("I saw AMZN MKTP US*2K4 for $89.00 on my statement and I'm not sure what it is.")
        total += reward
    trajectory = env.unwrapped.trajectory()
    assert trajectory.learner == "customer" and total == pytest.approx(trajectory.rewards["customer"])
    assert trajectory.reward_terms["customer/inverse_agent"] == pytest.approx(-0.5 * trajectory.rewards["agent"])


def test_llm_judge_through_env_kwargs():
    env = agent_env(judge="llm", judge_backend={"name": "canned", "replies": ['{"score": 0.5}']}, agent="oracle")
    env.reset(seed=0)
    game = env.unwrapped.game
    assert game.judge.__class__.__name__ == "LLMJudge" and game.spawn().judge is game.judge
