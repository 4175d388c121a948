"""Behaviours of TRACER / DM-Bench's assistants, policies, parsing, health checks, recogniser, audit
policies and synthetic generator that the older tests left open (found by mutation testing, issue 43
item 6). Expected values are worked out by hand from the data files and rules, not copied from the
code's output."""

from dialogue_gym.scenarios.tracer.policies import make_policy

CANNED = {"name": "canned", "replies": ["Hi."]}


# -- make_policy ----------------------------------------------------------------------------------------
def test_an_llm_user_stops_at_its_closing_reply_tag_and_an_llm_assistant_at_a_blank_line():
    assert make_policy("user", "llm", backend=CANNED).sampling.stop == ("</reply>",)
    assert make_policy("assistant", "llm", backend=CANNED).sampling.stop == ("\n\n",)


def test_a_stop_the_caller_sets_replaces_the_roles_default():
    policy = make_policy("user", "llm", backend=CANNED, sampling={"stop": ["</think>"]})
    assert policy.sampling.stop == ("</think>",)


def test_eager_and_reluctant_users_follow_their_own_schedules():
    # users.py: eager climbs 3, 4, 5 (to contact); reluctant falls 2, 1, 0 (to dropout).
    assert make_policy("user", "eager").schedule == (3, 4, 5)
    assert make_policy("user", "reluctant").schedule == (2, 1, 0)
