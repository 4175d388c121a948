"""The DM-Bench and TRACER exploit audits: their attackers, kept as tests (the bounds hold on a
stratified sample; ``dialogue-gym audit <ID>`` checks them at 600 episodes)."""

from __future__ import annotations

import random

import pytest

from dialogue_gym.audit import TextPolicy, run_audit
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.tracer.audit import (
    TRACER_MARGIN,
    _tracer_says,
    audits,
    merchant_facts,
    tracer_audits,
)
from dialogue_gym.scenarios.tracer.game import TracerGame
from dialogue_gym.scenarios.tracer.parsing import parse_user_output
from dialogue_gym.scenarios.tracer.prompts import assistant_system_prompt

EPISODES = 160
"""Four sessions of each of the first 40 groups' worth of episodes: enough for the attackers to
separate from the bounds, small enough for the test suite."""


def test_merchant_facts_are_read_from_the_assistants_system_prompt():
    merchant = {"name": "Shop", "industry": "legal", "facts": ["the first consultation is free", "cases are handled online"]}
    observation = {"messages": [{"role": "system", "content": assistant_system_prompt({"merchant": merchant})}]}
    assert merchant_facts(observation) == merchant["facts"]
    assert merchant_facts({"messages": [{"role": "user", "content": "- not a fact"}]}) == []


@pytest.mark.parametrize("audit", [*audits(), *tracer_audits()], ids=lambda audit: audit.env_id)
def test_the_audit_holds_on_a_sample(audit):
    scores, rows = run_audit(audit, episodes=EPISODES)
    broken = [(row.name, round(row.score, 3), row.bound) for row in rows if not row.passed]
    assert not broken, broken


def test_the_reviews_four_words_no_longer_convert():
    """The review's exploit: "we offer phone sorry" every turn (CR 0.652 against sop 0.527 before)."""
    four_words = TextPolicy(lambda observation, turn, rng: "we offer phone sorry", str)
    cr = lambda agent: sum(t.outcome.value == "success" for t in evaluate("DMBench-Assistant-v0", agent, EPISODES, 0, learner="assistant")) / EPISODES
    assert cr(four_words) <= 0.5 * cr("sop")


def test_the_tracer_margin_is_pinned():
    assert TRACER_MARGIN == 0.05
    audit = tracer_audits()[0]
    assert audit.reward_margin == TRACER_MARGIN and audit.margin_rationale
    assert audit.fair_order == ("flat", "random", "scripted") and audit.learner == "user"


@pytest.mark.parametrize("name", ["echo", "made_up_words", "word_salad", "keyword_stuffing"])
def test_degenerate_user_replies_fail_the_format(name):
    """A reply no person writes scores 0 on R_fmt even when its tags are perfect."""
    say = dict((n, s) for n, _, _, s in _tracer_says())[name]
    game = TracerGame()
    game.reset(seed=0, options={"session_id": "syn-g00-s00"})
    game.step(say(game.observe("user"), 1, random.Random(0)))
    turn = game.turns[-1]
    assert parse_user_output(turn.raw, 2).format_ok, "the tags are canonical"
    assert turn.parsed["format_ok"] is False and turn.invalid


def test_a_terse_fair_reply_keeps_its_format():
    game = TracerGame()
    game.reset(seed=0, options={"session_id": "syn-g00-s00"})
    game.step("<think>meh</think><intent_level>2</intent_level><reply>Upper left tooth.</reply>")
    assert game.turns[-1].parsed["format_ok"] is True and game.turns[-1].invalid is None
