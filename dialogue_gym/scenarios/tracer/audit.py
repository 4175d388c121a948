"""DMBench-Assistant-v0's exploit audit (see :mod:`dialogue_gym.audit`): the assistant role, scored by
conversion rate (CR)."""

from __future__ import annotations

from dialogue_gym.audit import ScenarioAudit, Vocabulary, generic_policies

VOCABULARY = Vocabulary(
    opener="Hello! How can I help you today?",
    cue_words=("we offer", "phone", "sorry", "understand", "free", "discount", "contact", "wechat", "specialist", "today"),
    facts=(
        "We offer free consultations.", "We have experienced specialists.", "We are open on weekends.",
        "Prices are transparent.", "Leave your phone or WeChat and we will follow up.",
    ),
    fixed_sentence="Could you leave your phone number so our specialist can help you?",
    end="Thank you, goodbye.",
)


def audits() -> list[ScenarioAudit]:
    return [
        ScenarioAudit(
            env_id="DMBench-Assistant-v0",
            learner="assistant",
            score="cr",
            score_kind="rate",
            baseline="sop",
            fair_order=("random", "sop"),
            policies=tuple(generic_policies(VOCABULARY)),
        )
    ]
