"""SEAD's exploit audit passes at the issue's 600 episodes, and the attackers the review wrote stay down."""

import random

import pytest

from dialogue_gym.audit import MIN_EPISODES, TextPolicy, last_heard, run_audit
from dialogue_gym.evaluation import evaluate
from dialogue_gym.metrics import sead as metrics
from dialogue_gym.scenarios.sead.audit import (
    RESOLVING_CUES,
    STEP_CUES,
    VOCABULARY,
    ResolvingCueSalad,
    audits,
)


@pytest.fixture(scope="module")
def audited():
    (audit,) = audits()
    return audit, *run_audit(audit, episodes=MIN_EPISODES)


def test_every_bound_holds_at_600_episodes(audited):
    """Measured: sop 0.245, adaptive 0.595, oracle 0.660; every degenerate policy 0.000 (bound
    0.122); the strongest blind script, walkthrough_twice, 0.258 (bound 0.295)."""
    audit, scores, rows = audited
    failed = [(row.name, row.score, row.bound) for row in rows if not row.passed]
    assert failed == []
    assert scores["adaptive"] - scores["sop"] >= 0.3


def test_the_reviews_attackers_are_in_the_audit(audited):
    audit, scores, _ = audited
    kinds = {policy.name: policy.kind for policy in audit.policies}
    assert kinds["resolving_cue_salad"] == "degenerate" and kinds["cue_template"] == "blind"
    assert kinds["every_act_monologue"] == "degenerate" and kinds["walkthrough_twice"] == "blind"
    # Under the keyword analyzer the resolving-cue salad reached CR 0.744 and the salad 0.646.
    assert scores["resolving_cue_salad"] == 0.0 and scores["word_salad"] == 0.0


def test_the_resolving_cue_salad_answers_with_the_resolving_cue():
    say = ResolvingCueSalad()
    observation = {"messages": [{"role": "user", "content": "Are there any hidden fees I should know about?"}]}
    rng = random.Random(0)
    assert say(observation, 1, rng) == VOCABULARY.opener
    assert say(observation, 2, rng).startswith(RESOLVING_CUES["cost"])
    observation["messages"].append({"role": "user", "content": "Okay, the app is open. Okay, what's next?"})
    assert say(observation, 3, rng).startswith(STEP_CUES[1])


PHRASE = {
    "ai_disclosure": "an AI assistant", "self_intro": "calling from FoodMap", "evidence": "our 500,000 users",
    "cost": "no fees", "rules": "pay-per-click billing", "value": "free credit for more customers",
    "confirm": "the 700 units", "simplify": "simply", "empathy": "being sorry", "respect_time": "being quick",
    "guide": "the app",
}
STEPS = ("Open the app.", "Please tap get more exposure now.", "Now claim it, you will see an SMS.")


class ReactiveCues:
    """The owner's last line -> the resolving topic, in a carrier sentence ("I can tell you about no
    fees today.") or as bare cue words; steps when the owner asks what to do."""

    def __init__(self, sentences: bool):
        self.sentences = sentences
        self.salad = ResolvingCueSalad()

    def __call__(self, observation, turn, rng):
        if turn == 1:
            return VOCABULARY.opener
        heard = last_heard(observation).lower()
        if "what do i need to do" in heard or "what's next" in heard:
            owner = " ".join(m["content"].lower() for m in observation["messages"] if m["role"] == "user")
            step = min(sum(done in owner for done in ("app is open", "tapped")), 2)
            return STEPS[step] if self.sentences else STEP_CUES[step]
        acts = [act for line, act in self.salad.line_to_act.items() if line.lower() in heard] or [rng.choice(("value", "evidence", "cost"))]
        if self.sentences:
            return f"I can tell you about {PHRASE[acts[0]]} today."
        return " ".join([RESOLVING_CUES[act] for act in acts[:2]] + rng.sample(VOCABULARY.cue_words, 1))


def test_reactive_cue_words_without_made_up_words_score_nothing(audited):
    _, scores, _ = audited
    cr = metrics.cr(evaluate("SEAD-Outbound-v0", TextPolicy(ReactiveCues(sentences=False), str), MIN_EPISODES, seed=0))
    assert cr <= 0.5 * scores["sop"]


def test_a_crude_but_responsive_template_stays_at_the_blind_scripts_level(audited):
    """Topic sentences chosen from the owner's line are understood (the recogniser reads patterns,
    not meaning), so this is a weak fair agent: about the SOP script, far below adaptive
    (measured 0.235)."""
    _, scores, _ = audited
    cr = metrics.cr(evaluate("SEAD-Outbound-v0", TextPolicy(ReactiveCues(sentences=True), str), MIN_EPISODES, seed=0))
    assert cr <= scores["sop"] + 0.05 and cr <= scores["adaptive"] - 0.25
