"""RLADA-Banking-v1 (issue 42, item 7): v0's game against a customer that can withhold its problem.

Against v0's scripted customer the fair ``phrase_match`` agent reaches strict PASS 1.000, so the score
was saturated. v1's ``withholding`` customer, at the vague and camouflage levels, tells a story that is
true of its problem and of another tool's (the paper's ambiguous-intent calls) and never states the
problem: the fair ceiling falls below 1.0, the oracle (it reads the intent) stays at 1.0, and the
baselines keep their order. v0's episodes are unchanged. Written as attacks: asking on and on never
draws the problem out, and a story that fits one tool only is refused as data."""

from __future__ import annotations

import gymnasium as gym
import pytest

import dialogue_gym  # noqa: F401  (registers the ids)
from dialogue_gym.audit import CEILING, run_audit
from dialogue_gym.envs import rlada_banking_v1 as v1
from dialogue_gym.errors import ConfigError
from dialogue_gym.evaluation import evaluate
from dialogue_gym.scenarios.rlada.agents import PhraseMatchAgent
from dialogue_gym.scenarios.rlada.audit import audits_v1
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer, WithholdingCustomer, withheld_story
from dialogue_gym.scenarios.rlada.data import ScenarioError, load_domain
from dialogue_gym.scenarios.rlada.reading import split_sentences, vocabulary
from dialogue_gym.scenarios.rlada.prompts import render
from dialogue_gym.scenarios.understanding import read_sentence
from envs_registry import get, resolve

EPISODES = 600
MEASURED = {"phrase_match": 0.905, "keyword": 0.6133333333333333, "always_escalate": 0.48666666666666664, "random": 0.0016666666666666668, "oracle": 1.0}
"""Strict PASS over 600 episodes of the open run with seed 0 (rule-based: the same on every CPU)."""
FACTS = {
    "merchant": "Corner Shop", "amount": 42.8, "day": "Tuesday", "last4": "1234", "person": "my sister", "country": "Spain",
    "atm": "Main St ATM", "company": "Acme", "descriptor": "ACME*123", "source": "checking", "target": "savings",
}


def strict_pass(agent: str, episodes: int = EPISODES, env_id: str = v1.ENV_ID, **env_kwargs) -> float:
    summary = resolve(get(env_id).summary)
    return float(summary(evaluate(env_id, agent, episodes, 0, env_kwargs=env_kwargs))["strict_pass"])


def test_the_constants_are_the_data_and_the_share_is_counted_by_hand():
    domain = load_domain()
    withholding = domain.customer["withholding"]
    assert tuple(withholding["levels"]) == v1.WITHHOLDING_LEVELS == ("vague", "camouflage")
    assert len(withholding["stories"]) == v1.WITHHOLDING_STORIES == 6
    storied = [intent for intent in domain.intents if withheld_story(domain, intent)]
    assert (len(storied), len(domain.intents)) == (29, 78)
    assert v1.WITHHELD_SHARE == pytest.approx(29 / 78 * 2 / 3) == pytest.approx(0.2479, abs=1e-4)
    assert gym.make(v1.ENV_ID).unwrapped.default_players == {"agent": "keyword", "customer": v1.DEFAULT_CUSTOMER} == {"agent": "keyword", "customer": "withholding"}
    assert gym.make("RLADA-Banking-v0").unwrapped.default_players["customer"] == "scripted"


def test_every_story_fits_two_tools_and_every_line_is_understood():
    """A story that names one tool withholds nothing; a line the router does not understand would be
    a degenerate customer, not a concealing one."""
    domain = load_domain()
    tools = {intent.family: intent.tool for intent in domain.intents}
    for story in domain.customer["withholding"]["stories"]:
        assert len({tools[family] for family in story["families"]}) == 2, story["families"]
        for line in story["lines"]:
            assert all(read_sentence(part, vocabulary(domain)).understood for part in split_sentences(render(line, FACTS))), line


def test_the_fair_ceiling_is_below_one_and_the_baselines_keep_their_order():
    scores = {agent: strict_pass(agent) for agent in MEASURED}
    assert scores == pytest.approx(MEASURED, abs=1e-12)
    assert scores["random"] < scores["always_escalate"] < scores["keyword"] < scores["phrase_match"] < scores["oracle"] == 1.0
    assert scores["phrase_match"] > scores["keyword"] + 0.25


def test_the_ceiling_misses_only_withheld_calls():
    trajectories = evaluate(v1.ENV_ID, "phrase_match", 240, 0)
    domain = load_domain()
    missed = [t for t in trajectories if not t.meta["strict_pass"]]
    assert missed and not any(t.meta.get("privileged") for t in trajectories)
    for trajectory in missed:
        profile = trajectory.profile
        assert profile["concealment"] in v1.WITHHOLDING_LEVELS and withheld_story(domain, domain.intent(profile["intent"])), profile


def test_v0_is_unchanged_and_v1_with_the_scripted_customer_plays_v0s_episodes():
    assert strict_pass("phrase_match", 234, "RLADA-Banking-v0") == 1.0
    for seed in range(4):
        episodes = [evaluate(env_id, "keyword", 1, seed, env_kwargs=kwargs)[0] for env_id, kwargs in (("RLADA-Banking-v0", {}), (v1.ENV_ID, {"customer": "scripted"}))]
        assert [turn.raw for turn in episodes[0].turns] == [turn.raw for turn in episodes[1].turns]


def _withheld_profile(level: str = "camouflage") -> dict:
    environment = gym.make(v1.ENV_ID).unwrapped
    environment.reset(seed=0, options={"intent": "transaction_charged_twice", "concealment": level})
    return environment.game.episode_profile()


def _call(customer, profile: dict, agent_lines: list[str]) -> list[str]:
    memory = customer.start(profile, 7)
    messages = [{"role": "system", "content": "You are a customer."}]
    said = []
    for line in [None, *agent_lines]:
        if line is not None:
            messages.append({"role": "user", "content": line})
        reply = customer.act({"messages": list(messages), "turn": len(said)}, {}, memory)
        said.append(reply)
        messages.append({"role": "assistant", "content": reply})
    return said


QUESTIONS = [
    "Could you tell me a bit more about what happened with the payment?",
    "Which payment is this about, and what exactly went wrong with it?",
    "Was the payment charged twice, or is it still pending in your account?",
    "What would you like me to do with your account today?",
    "Is there anything else about the charge you can tell me?",
]


def test_asking_on_and_on_never_draws_the_problem_out():
    domain = load_domain()
    profile = _withheld_profile()
    said = _call(WithholdingCustomer(domain), profile, QUESTIONS)
    story = {render(line, profile["facts"]) for line in withheld_story(domain, domain.intent("transaction_charged_twice"))[0]}
    assert all(line in story for line in said[:4]), said  # the opening and the answers to the patience (3) questions
    assert said[4] in {render(line, profile["facts"]) for line in domain.customer["hangups"]}
    assert not any(render(direct, profile["facts"]) in " ".join(said) for direct in domain.intent("transaction_charged_twice").direct)
    # the ceiling, after all of it, still sees two tools
    names = PhraseMatchAgent(domain).candidates({"messages": [{"role": "user", "content": line} for line in said[:4]]})
    assert {domain.intent(name).tool for name in names} == {"dispute_charge", "get_transactions"}
    # the scripted customer at the same start states its problem at the third question
    scripted = _call(ScriptedCustomer(domain), profile, QUESTIONS[:3])
    assert any(render(direct, profile["facts"]).lower()[:-1] in line.lower() for line in scripted for direct in domain.intent("transaction_charged_twice").direct)


def test_a_direct_caller_is_the_scripted_customer():
    domain = load_domain()
    profile = _withheld_profile("direct")
    assert _call(WithholdingCustomer(domain), profile, QUESTIONS[:2]) == _call(ScriptedCustomer(domain), profile, QUESTIONS[:2])


def test_the_audit_reports_the_ceiling_unsaturated():
    (audit,) = audits_v1()
    assert audit.env_id == v1.ENV_ID and list(audit.ceiling) == ["phrase_match"] and audit.fair_order == ("random", "keyword", "oracle")
    scores, rows = run_audit(audit, 120)
    (row,) = [row for row in rows if row.kind == CEILING]
    assert row.score < 1.0 and "saturated" not in row.description and scores["keyword"] < row.score


def test_the_withholding_customer_without_stories_names_the_fix(data_dir):
    import json

    path = data_dir / "customer.json"
    data = json.loads(path.read_text())
    data.pop("withholding")
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="needs a 'withholding' object .* use customer='scripted'"):
        WithholdingCustomer(load_domain(str(data_dir)))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: w["stories"][0].update(families=["unrecognised", "duplicate"]), r"stories\[0\]: families \['unrecognised', 'duplicate'\] are all served by \['dispute_charge'\]"),
        (lambda w: w["stories"][1].update(families=["pending", "no_such_family"]), r"stories\[1\]: unknown or intent-less families \['no_such_family'\]"),
        (lambda w: w.update(levels=["direct"]), r"field 'levels' must be a non-empty list of \['camouflage', 'vague'\], got \['direct'\]"),
        (lambda w: w["stories"][2].update(lines=["The {colour} one."]), r"stories\[2\]: field 'lines'\[0\] uses unknown placeholder\(s\) \['colour'\]"),
        (lambda w: w.update(stories=[["pending"]]), r"stories\[0\] must be an object with a non-empty 'families' list"),
    ],
)
def test_a_bad_withholding_story_is_refused_naming_the_field(data_dir, change, message):
    import json

    path = data_dir / "customer.json"
    data = json.loads(path.read_text())
    change(data["withholding"])
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=message):
        load_domain(str(data_dir))
