"""SEAD health checks: the owner's format, voice and rules, the caller's format and voice, the prompts' few-shot turns."""

import json

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401
from dialogue_gym.backends import CannedBackend
from dialogue_gym.errors import ScenarioError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.health import counterpart_health, health_summary, health_warnings
from dialogue_gym.scenarios.sead.data import load_behaviors, load_campaign
from dialogue_gym.scenarios.sead.health import load_health_rules
from dialogue_gym.scenarios.sead.parsing import parse_agent_output, parse_user_output, render_user_output
from dialogue_gym.scenarios.sead.prompts import USER_EXAMPLE, agent_example
from dialogue_gym.scenarios.sead.state import UserState

HELLO = "Hello, this is Alex from FoodMap. Am I speaking with the owner?"


def owner_turns(replies, profile, turns=None, agent_lines=None):
    """Play the LLM-played owner on ``replies`` for ``turns`` caller turns; its turns' health records."""
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=CannedBackend(replies), max_agent_turns=15)
    env.reset(seed=0, options={"profile": profile})
    for line in (agent_lines or [HELLO] * (turns or len(replies))):
        _, _, terminated, _, _ = env.step(line)
        if terminated:
            break
    return [turn.parsed["health"] for turn in env.unwrapped.trajectory().turns_of("user")]


def test_the_few_shot_turns_in_the_prompts_are_the_exact_format_and_healthy():
    env = gym.make("SEAD-Outbound-v0", user="llm", user_backend=CannedBackend([USER_EXAMPLE]))
    observation, _ = env.reset(seed=0, options={"profile": {"state": [2, 2, 2], "behaviors": ["PE1"]}})
    campaign = load_campaign()
    assert agent_example(campaign) in observation["messages"][0]["content"]
    assert parse_agent_output(agent_example(campaign)).problem is None
    env.step(HELLO)
    user_prompt = env.unwrapped.game.observe("user")["messages"][0]["content"]
    assert USER_EXAMPLE in user_prompt and "never call yourself Alex" in user_prompt
    move = parse_user_output(USER_EXAMPLE, UserState(2, 2, 2))
    assert move.problem is None and move.missing == () and move.repairs == ()
    (health,) = [turn.parsed["health"] for turn in env.unwrapped.trajectory().turns_of("user")]
    assert health == {"format_ok": True, "repaired": [], "role_reversal": [], "rule_violations": []}


def test_an_owner_speaking_as_the_caller_without_tags_is_out_of_format_and_reversed():
    # What SmolLM2-135M answered in the issue.
    (health,) = owner_turns(["Hello, I'm glad to assist you. I'm Alex, the owner of FoodMap."], {"state": [2, 2, 2], "behaviors": ["IV1"]})
    assert not health["format_ok"]
    assert health["role_reversal"] == ["glad to assist", "I'm Alex"]
    assert health["repaired"][0] == "no <reply> tag; whole output used as the reply"
    assert health["repaired"][-1] == "no <status> tag; read as 0 (continue)"


def test_state_jumps_and_success_without_cooperation_break_the_rules():
    jump = render_user_output("Fine, tell me more.", (4, 2, 2), 0)
    (health,) = owner_turns([jump], {"state": [0, 2, 2], "behaviors": ["IV1"]})
    assert health["format_ok"] and health["rule_violations"] == ["cooperation moved 0 -> 4 in one turn (at most 2)"]
    early = render_user_output("Done, I claimed it.", (2, 2, 2), 1)
    (health,) = owner_turns([early], {"state": [2, 2, 2], "behaviors": ["IV1"]})
    assert health["rule_violations"] == ["status 1 (completed) with cooperation 2 < 3"]


@pytest.mark.parametrize("behaviors, violations", [(["IV1"], ["raises a Cost_Concerns concern, which none of its behaviors has"]), (["CC1"], [])])
def test_an_owner_raises_only_the_concerns_of_its_behaviors(behaviors, violations):
    reply = render_user_output("Are there any hidden fees I should know about?", (2, 2, 2), 0)
    (health,) = owner_turns([reply], {"state": [2, 2, 2], "behaviors": behaviors})
    assert health["rule_violations"] == violations


def test_echoing_the_caller_breaks_the_rules():
    line = "Please open the merchant back-office app and tap get more exposure to claim the credit."
    echo = render_user_output(line, (3, 2, 3), 0)
    (health,) = owner_turns([echo], {"state": [3, 2, 3], "behaviors": ["IV1"]}, agent_lines=[line])
    assert health["rule_violations"] == ["copies the caller's last line"]


def test_a_reply_is_read_afresh_against_each_caller_line():
    """What a reply says alone is kept per reply, but whether it copies the caller depends on the caller's
    line: the same reply read after another line first must still be an echo of its own line."""
    rules = load_health_rules(load_campaign(), load_behaviors())
    line = "Please open the merchant back-office app and tap get more exposure to claim the credit once more."
    after_hello, after_itself = rules.read_reply(line, HELLO), rules.read_reply(line, line)
    assert not after_hello.echoes and after_itself.echoes
    assert after_hello.reversals == after_itself.reversals and after_hello.categories == after_itself.categories
    four, three = "Okay then, open the merchant app.", "Okay, open the app."  # content words: 4 and 3
    assert rules.read_reply(four, four).echoes and not rules.read_reply(three, three).echoes  # ECHO_MIN_WORDS = 4
    # 4 shared content words of 5 in all: exactly the 0.8 echo_overlap, which is a copy
    shorter, longer = "Please open the merchant app and tap it.", "Open the merchant app and tap it, okay?"
    assert rules.echo_overlap == 0.8 and rules.read_reply(shorter, longer).echoes and rules.read_reply(longer, shorter).echoes
    assert not rules.read_reply(shorter, "Okay, open the merchant app and tap exposure now.").echoes  # 4 of 6


def test_with_echo_overlap_zero_a_line_without_content_words_is_copied_by_no_reply(tmp_path):
    """echo_overlap 0.0 is a valid setting: every reply then copies a line it shares a content word
    with, or none, but no reply copies a line that has no content words ("", "...", "Hi")."""
    data = json.loads((load_health_rules.__globals__["DEFAULT_HEALTH_FILE"]).read_text())
    path = tmp_path / "health.json"
    path.write_text(json.dumps({**data, "echo_overlap": 0.0}))
    rules = load_health_rules(load_campaign(), load_behaviors(), path)
    reply = "Restaurant delivery prices customers weekend menu kitchen."
    assert [rules.read_reply(reply, line).echoes for line in ("", "...", "Hi")] == [False, False, False]
    assert rules.read_reply(reply, "Our drivers cover the whole town.").echoes


def test_replaced_rules_read_afresh():
    """dataclasses.replace gives rules of their own memos: a reading under the old cues does not answer
    for the new ones."""
    import dataclasses

    rules = load_health_rules(load_campaign(), load_behaviors())
    reply = "Are you a robot? Any hidden fees? Make it quick, how can I help you today?"
    assert "Cost_Concerns" in rules.read_reply(reply, HELLO).categories
    uncued = dataclasses.replace(rules, behavior_cues=())
    assert uncued.read_reply(reply, HELLO).categories == frozenset()
    assert uncued.read_reply(reply, "A second caller line.").categories == frozenset()
    assert "Cost_Concerns" in rules.read_reply(reply, "A second caller line.").categories


def test_a_long_reply_is_read_but_not_kept():
    """Hostile owner output: a reply past the memo bound is read afresh and pins nothing in either memo."""
    from dialogue_gym.scenarios.common import MAX_CACHED_TEXT_CHARS

    rules = load_health_rules(load_campaign(), load_behaviors())
    long = "Are there any hidden fees I should know about? " * (MAX_CACHED_TEXT_CHARS // 40)
    kept = len(rules._readings), len(rules._reply_readings)
    assert "Cost_Concerns" in rules.read_reply(long, HELLO).categories
    assert (len(rules._readings), len(rules._reply_readings)) == kept
    rules.read_reply("A short reply about fees, kept.", HELLO)
    assert (len(rules._readings), len(rules._reply_readings)) == (kept[0] + 1, kept[1] + 1)


def test_a_frozen_llm_owner_is_in_format_but_flagged_and_warned_about():
    # Attacker on the health rates: the same well-formed record every turn tops format compliance.
    frozen = render_user_output("Okay, go on.", (2, 2, 2), 0)
    records = owner_turns([frozen], {"state": [2, 2, 2], "behaviors": ["IV1"]}, turns=5)
    assert all(record["format_ok"] for record in records)
    assert [bool(record["rule_violations"]) for record in records] == [False, False, True, True, True]
    assert records[2]["rule_violations"] == ["the same reply 3 times in a row"]


def test_the_scripted_owner_is_the_checks_control():
    trajectories = evaluate("SEAD-Outbound-v0", "adaptive", 240, 0)
    user = counterpart_health(trajectories)["user"]
    assert user["format_rate"] == 1.0 and user["repair_rate"] == 0.0 and user["role_reversal_rate"] == 0.0
    assert user["failure_rate"] < 0.01 and health_warnings(counterpart_health(trajectories)) == []
    assert health_summary(trajectories)["agent"]["failure_rate"] == 0.0, "the caller may say it is an AI"


def test_the_llm_owner_of_the_issue_is_warned_about():
    trajectories = evaluate(
        "SEAD-Outbound-v0", "adaptive", 8, 0,
        env_kwargs={"user": "llm", "user_backend": CannedBackend(["I'm glad to assist you, I'm a food delivery service provider."]), "max_agent_turns": 3},
    )
    user = counterpart_health(trajectories)["user"]
    # 8 calls x 3 owner turns; the third identical reply of each call also breaks the frozen-record rule.
    assert user == {"turns": 24, "episodes": 8, "format_rate": 0.0, "repair_rate": 1.0, "role_reversal_rate": 1.0,
                    "rule_violation_rate": 8 / 24, "failure_rate": 1.0}
    (warning,) = health_warnings(counterpart_health(trajectories))
    assert warning.startswith("the user role failed its health checks on 100% of its 24 turns")


def test_a_bad_health_file_names_the_field(tmp_path):
    data = json.loads((load_health_rules.__globals__["DEFAULT_HEALTH_FILE"]).read_text())
    data["behavior_cues"]["Made_Up"] = ["x"]
    path = tmp_path / "health.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=r"behavior_cues names 'Made_Up', which is no category of the behavior library"):
        load_health_rules(load_campaign(), load_behaviors(), path)
    data = {**data, "max_state_step": 0}
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=r"field 'max_state_step' must be an int in \[1, 5\], got 0"):
        load_health_rules(load_campaign(), load_behaviors(), path)
