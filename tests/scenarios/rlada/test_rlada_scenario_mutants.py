"""Behaviours of RLADA's agents, planner, cues, reading, policies and audit policies that the older
tests left open (found by mutation testing, issue 43 item 6). Expected values are worked out by hand
from the data files and rules, not copied from the code's output."""

from dialogue_gym.scenarios.rlada.agents import AlwaysEscalateAgent, KeywordRouterAgent, OracleAgent, PhraseMatchAgent, RandomAgent
from dialogue_gym.scenarios.rlada.customers import ScriptedCustomer, WithholdingCustomer
from dialogue_gym.scenarios.rlada.data import load_domain
from dialogue_gym.scenarios.rlada.planner import PlannerCustomer
from dialogue_gym.scenarios.rlada.policies import make_policy

CANNED = {"name": "canned", "replies": ["Hi."]}


# -- make_policy: every name builds its own policy --------------------------------------------------------
def test_each_agent_name_builds_its_own_agent():
    domain = load_domain()
    built = {name: type(make_policy("agent", name, domain)) for name in ("keyword", "always_escalate", "random", "oracle", "phrase_match")}
    assert built == {
        "keyword": KeywordRouterAgent, "always_escalate": AlwaysEscalateAgent, "random": RandomAgent,
        "oracle": OracleAgent, "phrase_match": PhraseMatchAgent,
    }


def test_each_customer_name_builds_its_own_style():
    domain = load_domain()
    styles = {}
    for name in ("scripted", "direct", "vague", "camouflage", "contextual"):
        policy = make_policy("customer", name, domain)
        assert type(policy) is ScriptedCustomer
        styles[name] = (policy.level, policy.side_worry_first)
    # scripted plays the profile's level (None); contextual is camouflage that opens with a side worry.
    assert styles == {
        "scripted": (None, False), "direct": ("direct", False), "vague": ("vague", False),
        "camouflage": ("camouflage", False), "contextual": ("camouflage", True),
    }
    assert type(make_policy("customer", "withholding", domain)) is WithholdingCustomer
    assert type(make_policy("customer", "planner", domain)) is PlannerCustomer


def test_an_llm_customer_stops_at_a_blank_line_and_an_llm_agent_has_no_stop():
    domain = load_domain()
    assert make_policy("customer", "llm", domain, backend=CANNED).sampling.stop == ("\n\n",)
    assert make_policy("agent", "llm", domain, backend=CANNED).sampling.stop == ()
    assert make_policy("customer", "llm", domain, backend=CANNED, sampling={"stop": ["."]}).sampling.stop == (".",)
