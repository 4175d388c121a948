"""RLADA-Banking-v0's fair ceiling (issue 42, item 7): ``phrase_match`` matches the customer's words
against the public phrasings and asks until one tool fits. It reads only its observation and reaches
strict PASS 1.000 (the oracle's) against the scripted customer, keyword about 0.70: the audit reports
it beside the baselines and says the score is saturated. Written as attacks on the ceiling's claims:
a ceiling that peeks is refused, a hostile customer line cannot make the matcher backtrack, and a
caller no phrasing explains gets the keyword router, not a guess."""

from __future__ import annotations

import time

import pytest

from dialogue_gym.audit import CEILING, ScenarioAudit, format_audit, run_audit
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.rlada.agents import (
    KeywordRouterAgent,
    PhraseMatchAgent,
    fills,
    phrasebook,
    template_parts,
)
from dialogue_gym.scenarios.rlada.audit import audits
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.prompts import render
from envs_registry import get, resolve

EPISODES = 234
"""Every intent at every concealment level once."""


class NoPeeking(dict):
    def __getitem__(self, key):
        raise AssertionError(f"the fair ceiling read info[{key!r}]")

    get = __getitem__


def strict_pass(agent, episodes=EPISODES, **env_kwargs) -> float:
    summary = resolve(get("RLADA-Banking-v0").summary)
    return float(summary(evaluate("RLADA-Banking-v0", agent, episodes, 0, env_kwargs=env_kwargs))["strict_pass"])


def test_the_ceiling_saturates_strict_pass_without_reading_anything_hidden():
    trajectories = evaluate("RLADA-Banking-v0", "phrase_match", EPISODES, 0)
    assert not any(trajectory.meta.get("privileged") for trajectory in trajectories)
    assert strict_pass("phrase_match") == 1.0 and strict_pass("keyword") < 0.75
    # the strongest scripted customer and the arena / held-out scenarios do not bring it below 1.0 either
    assert strict_pass("phrase_match", 120, customer="contextual") == 1.0
    assert strict_pass("phrase_match", 120, scenario_set="heldout") == 1.0


def test_the_ceiling_reads_only_its_observation():
    agent = PhraseMatchAgent(load_domain())
    memory = agent.start({}, 0)
    observation = {"messages": [{"role": "system", "content": "... ACC-123456 ..."}, {"role": "user", "content": "Hi, I have a problem."}], "turn": 0}
    assert '"speak"' in agent.act(observation, NoPeeking(), memory)


def test_the_audit_reports_the_ceiling_beside_the_baselines_and_says_it_is_saturated():
    (audit,) = audits()
    assert list(audit.ceiling) == ["phrase_match"]
    scores, rows = run_audit(audit, EPISODES)
    (row,) = [row for row in rows if row.kind == CEILING]
    assert row.name == "phrase_match" and row.score == 1.0 and row.bound is None and row.passed and "saturated" in row.description
    assert scores["phrase_match"] > scores["keyword"] + 0.25
    text = format_audit(audit, rows, EPISODES)
    assert "fair ceiling" in text and "saturated" in text


def test_an_oracle_passed_off_as_the_fair_ceiling_is_refused():
    (audit,) = audits()
    disguised = ScenarioAudit(
        audit.env_id, audit.learner, audit.score, audit.score_kind, "keyword", ("random", "keyword"), (), ceiling={"oracle": "fair, honest"}
    )
    with pytest.raises(ConfigError, match="fair ceiling 'oracle' reads the privileged channel"):
        run_audit(disguised, 12)


def test_a_hostile_customer_line_cannot_make_the_matcher_backtrack():
    parts = template_parts("{a} x {b} x {c} x {d} x {e} end")
    hostile = "x " * 20_000 + "no"
    began = time.process_time()
    assert not fills(hostile, parts)
    assert not PhraseMatchAgent(load_domain()).candidates({"messages": [{"role": "user", "content": hostile[:400]}]})
    assert time.process_time() - began < 1.0
    assert fills("ann x b x c x d x e end", parts) and not fills(" x b x c x d x e end", parts), "every slot is non-empty"


def test_every_packaged_line_is_explained_by_its_own_intent():
    domain = load_domain()
    agent = PhraseMatchAgent(domain)
    facts = {"merchant": "Corner Shop", "amount": 42.8, "day": "Tuesday", "last4": "1234", "person": "my sister"}
    for intent in domain.intents[:: 7]:
        line = render(intent.direct[0], {**facts, **{k: "x" for k in ("country", "atm", "company", "descriptor", "source", "target")}})
        names = agent.candidates({"messages": [{"role": "user", "content": line}]})
        assert intent.name in names, (intent.name, line)
    assert len(phrasebook(domain).own) == len(domain.intents)


def test_a_caller_no_phrasing_explains_gets_the_keyword_router():
    domain = load_domain()
    observation = {
        "messages": [{"role": "system", "content": "ACC-123456"}, {"role": "user", "content": "My card got swallowed by the machine and now it is blocked, I think."}],
        "turn": 0,
    }
    assert PhraseMatchAgent(domain).candidates(observation) == []
    assert PhraseMatchAgent(domain).route(observation, {}) == KeywordRouterAgent(domain, 3).route(observation, {})
