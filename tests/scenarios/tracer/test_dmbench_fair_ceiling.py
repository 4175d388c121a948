"""DMBench-Assistant-v0's fair ceiling (issue 42, item 7): ``planner`` plans each turn with the user's
public intent-dynamics model, reading the user's last level off its reply (the reply templates are
public). Written as attacks on the claim that it is fair: it never touches ``info``, the user's persona
in its start profile changes nothing it says, and it plays the same episodes in a process of its own."""

from __future__ import annotations

import pytest

from dialogue_gym.audit import CEILING, run_audit
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics.dmbench import summary
from dialogue_gym.scenarios.tracer.assistants import LEVEL_VALUE, PLAN_ACTS, PlannerAssistant, reply_level
from dialogue_gym.scenarios.tracer.audit import audits

MERCHANT = {
    "id": "health-clearview", "name": "Clearview Eye Hospital", "industry": "healthcare",
    "greeting": "Welcome to Clearview Eye Hospital, what can I do for you?",
    "facts": ["laser surgery needs a pre-operation exam first", "the pre-operation exam takes about two hours"],
}


class NoPeeking(dict):
    def __getitem__(self, key):
        raise AssertionError(f"the fair ceiling read info[{key!r}]")

    get = __getitem__


def test_the_constants():
    assert LEVEL_VALUE == (-3.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    assert len(PLAN_ACTS) == 11 and all(1 <= len(acts) <= 2 for acts in PLAN_ACTS)


@pytest.mark.parametrize(
    "reply, level",
    [
        ("My phone number is 138xxxx1234.", 5),  # not the bare {phone} template's 5 by accident: the literal one
        ("Does it hurt?", 3),
        ("Does it hurt", 3),  # the impatient persona drops the final mark
        ("", 0),
        ("Can I come in on Saturday morning?", 4),
    ],
)
def test_the_users_level_is_read_off_its_reply(reply, level):
    assert reply_level(reply, "healthcare") == level


def test_a_reply_no_template_renders_reads_as_no_level_not_as_contact_given():
    # The bare '{phone}' template holds a number: before its slot had a shape, any unmatched text read as 5.
    assert reply_level("Purple elephants dance at noon", "healthcare") is None
    assert reply_level("Does it hurt?", "automotive") is None  # a healthcare line heard in another industry
    assert reply_level("138xxxx1234", "automotive") == 5
    assert reply_level("+86 138 0000 1234.", "healthcare") == 5
    assert reply_level("Add my WeChat: user123a.", "healthcare") == 5
    assert reply_level("Add my WeChat: two words.", "healthcare") is None


def test_every_reply_a_scripted_user_renders_reads_as_its_own_level():
    import random

    from dialogue_gym.scenarios.tracer.data import load_replies
    from dialogue_gym.scenarios.tracer.users import render_reply

    industries = sorted({name for by_industry in load_replies()["replies"].values() for name in by_industry} - {"any"}) + [None]
    rng = random.Random(0)
    for k in range(1200):
        level, industry = k % 6, industries[k % len(industries)]
        personality = ("impatient and direct", "calm")[k % 2]
        profile = {"merchant": {"industry": industry, "name": "Acme Dental"}, "user": {"personality": personality, "initial_intent": "fix my teeth"}}
        reply, _ = render_reply(level, profile, rng)
        assert reply_level(reply, industry) == level, (reply, industry)


def test_the_planner_converts_more_than_the_sop():
    scores = {agent: float(summary(evaluate("DMBench-Assistant-v0", agent, 200, 0, learner="assistant"))["cr"]) for agent in ("sop", "planner")}
    assert scores["planner"] > scores["sop"] + 0.04, scores


def test_the_users_persona_changes_nothing_it_says_and_info_is_never_read():
    observation = {"messages": [{"role": "system", "content": "You are the assistant."}, {"role": "user", "content": "Does it hurt?"}], "turn": 1}
    replies = set()
    for profile in ({"merchant": MERCHANT}, {"merchant": MERCHANT, "user": {"personality": "impatient and direct", "need": "price"}}):
        agent = PlannerAssistant()
        replies.add(agent.act(observation, NoPeeking(), agent.start(profile, 0)))
    assert len(replies) == 1


def test_the_planner_plays_the_same_episodes_in_a_process_of_its_own():
    inside = evaluate("DMBench-Assistant-v0", "planner", 8, 0, learner="assistant")
    isolated = evaluate("DMBench-Assistant-v0", "planner", 8, 0, learner="assistant", isolate="process")
    assert [[turn.raw for turn in t.turns] for t in inside] == [[turn.raw for turn in t.turns] for t in isolated]
    assert not any(t.meta.get("privileged") for t in inside)


def test_the_audit_reports_the_planner_as_its_ceiling():
    (audit,) = audits()
    assert list(audit.ceiling) == ["planner"]
    scores, rows = run_audit(audit, 24)
    (row,) = [row for row in rows if row.kind == CEILING]
    assert row.name == "planner" and row.bound is None and row.score == scores["planner"]


def test_tracers_ceiling_is_its_scripted_user_and_the_most_likely_level_user_scores_below_it():
    """TRACER's audit names ``scripted`` (it samples the references' generating model) as its fair ceiling;
    the variant the docs quote, the model's most likely level every turn, is below it."""
    import numpy as np

    from dialogue_gym.metrics.tracer import summary as tracer_summary
    from dialogue_gym.scenarios.tracer.audit import tracer_audits
    from dialogue_gym.scenarios.tracer.users import IntentDynamicsUser

    class MostLikely(IntentDynamicsUser):
        def level(self, observation, info, memory):
            # Levels whose logits are equal but for rounding (11 of 2,314 turns: gaps of 0 to 4e-16, the next
            # is above 1e-6) go to the lowest: a plain argmax let the CPU's rounding pick, and the score
            # differed by 3e-4 between two CPUs.
            logits = self.logits(self.context(observation, info, memory), memory)
            return int(np.flatnonzero(logits >= logits.max() - 1e-9)[0])

    (audit,) = tracer_audits()
    assert list(audit.ceiling) == ["scripted"] and audit.fair_order[-1] == "scripted"
    scores = {
        name: float(tracer_summary(evaluate("TRACER-UserSim-v0", agent, 200, 0, learner="user"))["reward"])
        for name, agent in (("scripted", "scripted"), ("most_likely", MostLikely()))
    }
    assert scores == pytest.approx({"scripted": 0.5891, "most_likely": 0.50675}, abs=5e-5)


def test_each_slot_of_a_template_gets_its_own_shape():
    from dialogue_gym.scenarios.tracer.assistants import _template_pattern

    pattern = _template_pattern("I am at {merchant}, call {phone}.")
    assert pattern.fullmatch("I am at Acme Dental, call 138xxxx1234.")
    assert pattern.fullmatch("I am at Acme Dental, call 138xxxx1234")
    assert not pattern.fullmatch("I am at Acme Dental, call me maybe.")  # the second slot is a number
