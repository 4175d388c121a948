"""RL-ADA's exploit audits hold on every intent at every concealment level (234 stratified episodes:
78 intents x 3 levels; ``dialogue-gym audit`` runs the stated 600)."""

import pytest

from dialogue_gym.audit import run_audit
from dialogue_gym.scenarios.rlada.audit import CUSTOMER_MARGIN, audits, customer_audits

EPISODES = 234


def test_the_customer_margin_is_half_a_component():
    assert CUSTOMER_MARGIN == 0.25
    (audit,) = customer_audits()
    assert audit.reward_margin == CUSTOMER_MARGIN and audit.score_kind == "reward" and audit.learner == "customer"
    names = {policy.name for policy in audit.policies}
    assert {"hang_up", "empty", "echo", "word_salad", "made_up_words", "keyword_stuffing", "near_repetition",
            "content_free_questions", "fixed_sentence"} <= names
    assert {"fresh_misleading", "one_wrong_tool", "dodge_questions", "reveal_last", "side_worry_only", "false_claim_then_accept",
            "worry_spray", "worry_and_sign_recital", "truth_after_acting", "worry_beside_hint"} <= names
    # The bounds are relative to the strongest fair style: camouflage that always opens with a side worry.
    assert audit.baseline == "contextual" and audit.fair_order == ("direct", "vague", "camouflage", "contextual")


def test_misleading_customers_score_below_the_camouflage_customer():
    (customer,) = customer_audits()
    scores, _ = run_audit(customer, EPISODES)
    # A blind script of fresh, grounded, misleading lines scored about 1.7 (1.49 over 120 episodes for this version)
    # against camouflage's 1.0-1.2: nothing checked that the customer told the truth about its problem.
    # Asserted problems it does not have, and a new worry each turn, now cost realism, concealment
    # and the adversarial credit. One hedged side worry and never the real problem scored 1.473 (camouflage
    # 1.017 at 600 episodes) and a fluent false claim then acknowledgements 0.937: a side worry now needs
    # the customer's own story beside it, and an untruthful call earns no concealment.
    for name in ("fresh_misleading", "one_wrong_tool", "dodge_questions", "reveal_last", "misleading_grounded", "side_worry_only",
                 "false_claim_then_accept", "worry_spray", "worry_and_sign_recital", "truth_after_acting"):
        assert scores[name] < scores["camouflage"] - 0.2, (name, scores[name], scores["camouflage"])


@pytest.mark.parametrize("audit", [*audits(), *customer_audits()], ids=lambda audit: audit.env_id)
def test_every_bound_holds(audit):
    scores, rows = run_audit(audit, EPISODES)
    broken = [(row.name, round(row.score, 3), row.bound) for row in rows if not row.passed]
    assert not broken


def test_the_reviewers_question_marks_and_the_hang_up_earn_nothing():
    (agent,) = audits()
    scores, _ = run_audit(agent, EPISODES)
    # "?" three times then routing on the last line had strict PASS 0.912 against the keyword router's 0.699.
    assert scores["questions_then_route"] == 0.0 and scores["question_then_escalate"] == 0.0
    assert scores["nonsense_then_route"] == 0.0
    assert scores["fabricated_claims"] == 0.0 and scores["route_then_fabricate"] < 0.05
    assert scores["keyword"] > 0.65
    (customer,) = customer_audits()
    scores, _ = run_audit(customer, EPISODES)
    # Hanging up at once earned 1.375 and a 100% win; it now concedes the call.
    assert scores["hang_up"] == pytest.approx(-1.5)
    assert scores["contextual"] > scores["camouflage"] > scores["vague"] > scores["direct"]
