"""Audit details the audit tests leave open: made-up words have two or three syllables, a saturated
fair ceiling says so, an isolated audit's player is the policy it names (or an error listing them),
and the table states the fair-ceiling rule only when there is a ceiling row."""

import random

import pytest

from dialogue_gym.audit import (
    CEILING,
    AuditPolicy,
    AuditRow,
    ScenarioAudit,
    audit_player,
    audit_rows,
    format_audit,
    made_up_word,
    registered_audit,
)
from dialogue_gym.errors import ConfigError

SYLLABLES = {"ka", "lo", "vex", "dri", "mun", "zor", "pel", "quo", "tas", "rin", "bre", "nuv"}


def _syllables(word):
    # each syllable starts with its own letter, so a word splits one way
    by_letter = {syllable[0]: syllable for syllable in SYLLABLES}
    parts = []
    while word:
        syllable = by_letter[word[0]]
        assert word.startswith(syllable)
        parts.append(syllable)
        word = word[len(syllable):]
    return parts


def test_a_made_up_word_has_two_or_three_syllables():
    rng = random.Random(0)
    assert {len(_syllables(made_up_word(rng))) for _ in range(200)} == {2, 3}


def _rate_audit(ceiling):
    return ScenarioAudit(
        env_id="X", learner="agent", score="CR", score_kind="rate", baseline="sop", fair_order=("random", "sop"),
        policies=(AuditPolicy("salad", "degenerate", "word salad", lambda: None),), ceiling=ceiling,
    )


@pytest.mark.parametrize("score, saturated", [(1.0, True), (0.9, False)])
def test_a_fair_ceiling_at_a_rate_of_one_is_noted_as_saturated(score, saturated):
    rows = audit_rows(_rate_audit({"oracle": "reads the owner's words"}), {"random": 0.1, "sop": 0.3, "salad": 0.0, "oracle": score})
    [ceiling] = [row for row in rows if row.kind == CEILING]
    assert ceiling.description == "reads the owner's words" + ("; saturated: CR at its maximum, a fairly won 1.0" if saturated else "")


def test_the_table_states_the_fair_ceiling_rule_only_with_a_ceiling_row():
    rule = "fair ceiling: the strongest fair policies written for the role"
    audit = _rate_audit({"oracle": "reads the owner's words"})
    rows = audit_rows(audit, {"random": 0.1, "sop": 0.3, "salad": 0.0, "oracle": 0.8})
    assert rule in format_audit(audit, rows, 100)
    without = [row for row in rows if row.kind != CEILING]
    assert all(isinstance(row, AuditRow) for row in without) and rule not in format_audit(audit, without, 100)


def test_an_isolated_audit_builds_the_policy_it_names():
    audit = registered_audit("SEAD-Outbound-v0", "agent")
    observation = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "Hello there, who is this?"}], "turn": 1}
    for policy in audit.policies[:4]:
        built, reference = audit_player("SEAD-Outbound-v0", "agent", policy.name), policy.make()
        said = [player.act_batch([observation], [{}], [player.start({}, 3)])[0] for player in (built, reference)]
        assert said[0] == said[1], policy.name


def test_an_unknown_audit_player_is_an_error_listing_the_policies_and_probes():
    names = [policy.name for policy in registered_audit("SEAD-Outbound-v0", "agent").policies]
    with pytest.raises(ConfigError, match=r"SEAD-Outbound-v0's audit of 'agent' has no policy or probe 'nope'; it has \['empty', 'echo'") as raised:
        audit_player("SEAD-Outbound-v0", "agent", "nope")
    assert all(repr(name) in str(raised.value) for name in names)
