"""The heuristic RQ judge checks substance: keyword stuffing, fact stuffing and length cannot raise
RQ, and helpfulness needs the fact that answers the question (scores computed by hand)."""

from __future__ import annotations

import json

import pytest

from dialogue_gym.backends import CannedBackend, GenerationOutput
from dialogue_gym.scenarios.tracer.acts import read_turn
from dialogue_gym.scenarios.tracer.judges import HeuristicJudge, LLMJudge, answers

MERCHANT = {
    "name": "Shop",
    "industry": "automotive",
    "facts": [
        "down payments start from 15% on most models",
        "test drives can be booked any day of the week",
        "the showroom is next to the city ring road",
        "we have sedans, SUVs and new-energy models in stock",
    ],
}
JUDGE = HeuristicJudge()


def rq(transcript):
    return JUDGE.score(transcript, MERCHANT)


def test_keyword_stuffing_meets_no_dimension():
    stuffed = "we offer phone sorry understand free discount contact wechat specialist today"
    scores = rq([("user", "Where is the showroom?"), ("assistant", stuffed), ("user", "Hmm."), ("assistant", stuffed)])
    assert scores == {"accuracy": 1.0, "helpfulness": 1.0, "informativeness": 1.0, "empathy": 1.0, "rq": 1.0}
    review = rq([("user", "Where is the showroom?"), ("assistant", "we offer phone sorry")])
    assert review["helpfulness"] == 1.0 and review["informativeness"] == 1.0


def test_fact_stuffing_is_a_monologue_then_a_repeat():
    pasted = " ".join(f"{fact[0].upper()}{fact[1:]}." for fact in MERCHANT["facts"])
    scores = rq([("user", "What is the down payment?"), ("assistant", pasted), ("user", "Ok."), ("assistant", pasted)])
    # Turn 1: a monologue (4 sentences) -- accurate and calm, neither helpful nor informative.
    # Turn 2: a repeat of turn 1 -- no reply, meets nothing. Shares: accuracy 1/2, help 0, info 0, empathy 1/2.
    assert scores == {"accuracy": 3.0, "helpfulness": 1.0, "informativeness": 1.0, "empathy": 3.0, "rq": 2.0}


def test_length_does_not_pay():
    padded = "Down payments start from 15% on most models, " + " ".join(["and we are always here to help you with that"] * 5) + "."
    scores = rq([("user", "What is the down payment?"), ("assistant", padded)])
    assert scores["helpfulness"] == 1.0 and scores["informativeness"] == 1.0 and scores["accuracy"] == 1.0, "'always' overclaims"


def test_helpfulness_needs_the_fact_that_answers_the_question():
    question = "Where is the showroom?"
    right = "The showroom is next to the city ring road."
    wrong = "Test drives can be booked any day of the week."
    assert rq([("user", question), ("assistant", right)])["helpfulness"] == 5.0
    assert rq([("user", question), ("assistant", wrong)])["helpfulness"] == 1.0
    assert rq([("user", question), ("assistant", wrong)])["informativeness"] == 5.0, "still a new fact"
    facts = tuple(MERCHANT["facts"])
    # No fact shares a word with the question: any fact, or a real question back, helps.
    assert answers("Is it nice?", read_turn("Which model do you like best?", facts), facts)
    assert not answers("Is it nice?", read_turn("Okay.", facts), facts)


def test_echo_and_content_free_turns_score_nothing_the_fair_turn_everything():
    echo = rq([("user", "Where is the showroom exactly?"), ("assistant", "Where is the showroom exactly? Leave your phone number.")])
    assert echo["rq"] == 1.0
    vague = rq([("user", "Ok."), ("assistant", "Could you tell me more?")])
    assert vague["helpfulness"] == 1.0 and vague["informativeness"] == 1.0 and vague["accuracy"] == 5.0
    fair = rq([
        ("user", "Where is the showroom?"),
        ("assistant", "The showroom is next to the city ring road. Could you share your phone so we can follow up?"),
        ("user", "Too expensive."),
        ("assistant", "I understand, no pressure. Down payments start from 15% on most models."),
    ])
    assert fair == {"accuracy": 5.0, "helpfulness": 5.0, "informativeness": 5.0, "empathy": 5.0, "rq": 5.0}


@pytest.mark.parametrize("text", ["", "(silence)", "kalovex drimun zorpel quobre", "Okay."])
def test_a_turn_with_nothing_understood_is_no_reply(text):
    assert rq([("user", "Hi"), ("assistant", text)])["rq"] == 1.0


# -- each dimension's rule, one turn at a time (hand-computed: a dimension is 1 + 4 x the share of turns meeting it)


def test_accuracy_needs_every_number_in_the_facts():
    """Turn 1 states no number; turn 2 states 20%, which no fact holds (15% does): 1 + 4 x 1/2 = 3."""
    scores = rq([
        ("user", "Where is the showroom?"), ("assistant", "The showroom is next to the city ring road."),
        ("user", "And the down payment?"), ("assistant", "Down payments start from 20% on most models."),
    ])
    assert scores["accuracy"] == 3.0


def test_an_opening_turn_has_heard_nothing_so_it_needs_empathy():
    """Nothing came before the opening turn (not the transcript's last user line): an empty reply is
    sensitive, and a turn stating a fact without an empathic sentence misses empathy."""
    scores = rq([("assistant", "The showroom is next to the city ring road."), ("user", "Great, thanks!")])
    assert (scores["helpfulness"], scores["empathy"]) == (5.0, 1.0)


def test_a_question_back_does_not_answer_a_question_a_fact_answers():
    """After "Where is the showroom?" (the showroom fact answers it) a question back is not helpful,
    though after a statement it would be (a probe)."""
    assert rq([("user", "Where is the showroom?"), ("assistant", "Which model do you like best?")])["helpfulness"] == 1.0
    assert rq([("user", "Ok."), ("assistant", "Which model do you like best?")])["helpfulness"] == 5.0


def test_after_a_negative_reply_a_fact_without_empathy_misses_empathy():
    assert rq([("user", "Too expensive."), ("assistant", "Down payments start from 15% on most models.")])["empathy"] == 1.0


def test_pressure_misses_empathy_even_after_a_neutral_question():
    pushy = "The showroom is next to the city ring road. Act now, this offer ends today."
    assert rq([("user", "Where is the showroom?"), ("assistant", pushy)])["empathy"] == 1.0


# -- the LLM judge's answer


SCORES = '{"accuracy": 4, "helpfulness": 3, "informativeness": 2, "empathy": 5}'


def test_the_llm_judge_is_greedy_with_96_new_tokens_unless_told():
    judge = LLMJudge(CannedBackend([SCORES]))
    assert (judge.sampling.temperature, judge.sampling.max_new_tokens) == (0.0, 96)
    assert LLMJudge(CannedBackend([SCORES]), {"temperature": 0.7}).sampling.temperature == 0.7


def test_the_rubric_json_alone_is_in_format_and_read_from_other_text_is_a_repair():
    alone = LLMJudge.parse(SCORES)
    assert {name: alone[name] for name in ("accuracy", "helpfulness", "informativeness", "empathy", "rq")} == {
        "accuracy": 4.0, "helpfulness": 3.0, "informativeness": 2.0, "empathy": 5.0, "rq": 3.5
    }
    assert alone["health"]["judge"]["format_ok"] is True and alone["health"]["judge"]["repaired"] == []
    for wrapped in (SCORES + ".", "Scores: " + SCORES, SCORES + "x"):
        answer = LLMJudge.parse(wrapped)
        assert answer["rq"] == 3.5, wrapped
        assert answer["health"]["judge"]["format_ok"] is False and answer["health"]["judge"]["repaired"] == ["JSON read from inside other text"]


@pytest.mark.parametrize(
    "value, accepted, violations",
    [
        (1, True, []),
        (5, True, []),
        (6, False, ["accuracy 6 outside the rubric's 1-5"]),
        (0.5, False, ["accuracy 0.5 outside the rubric's 1-5"]),
        ("4", False, []),  # not a number: unscored, but no number broke the rubric
    ],
)
def test_scores_must_be_numbers_from_1_to_5_and_only_numbers_outside_break_the_rubric(value, accepted, violations):
    answer = LLMJudge.parse(SCORES.replace('"accuracy": 4', f'"accuracy": {json.dumps(value)}'))
    assert answer["accuracy"] == (float(value) if accepted else None) and (answer["rq"] is None) is not accepted
    assert answer["health"]["judge"]["rule_violations"] == violations


def test_an_answer_with_no_json_or_no_text_is_unscored_and_out_of_format():
    missing = LLMJudge.parse("no json here")
    assert missing["error"] == "judge output is not the rubric's JSON (no JSON object): 'no json here'"
    assert missing["health"]["judge"]["format_ok"] is False
    not_text = LLMJudge.parse(None)
    assert not_text["error"] == "judge output is a NoneType, not text" and not_text["health"]["judge"]["format_ok"] is False


class GivesUpOnTheSecond:
    """A backend that answers the first request of a batch and gives up on the second."""

    def generate(self, requests):
        return [GenerationOutput(SCORES), GenerationOutput("", error="backend gave up after 3 tries")][: len(requests)]


def test_a_request_the_backend_gave_up_on_is_unscored_with_its_cause():
    scored, failed = LLMJudge(GivesUpOnTheSecond()).score_batch([([("assistant", "Hi.")], MERCHANT)] * 2)
    assert scored["rq"] == 3.5 and scored["health"]["judge"]["format_ok"] is True
    assert failed["rq"] is None and failed["error"] == "backend gave up after 3 tries" and failed["health"]["judge"]["format_ok"] is False


@pytest.mark.parametrize("agent", ["sop", "random", "pushy"])
def test_the_opening_changes_no_score(agent):
    """Given the opening (as the game gives it, to reuse the user's readings), the heuristic judge scores
    as without it; an opening the turns repeat, or that states a fact, changes nothing either."""
    from dialogue_gym.evaluation import evaluate

    judge = HeuristicJudge()
    for trajectory in evaluate("DMBench-Assistant-v0", agent, 10, seed=2, learner="assistant"):
        pairs = [(turn.role, turn.text) for turn in trajectory.turns]
        merchant = trajectory.profile["merchant"]
        assert trajectory.meta["response_quality"] == {**judge.score(pairs, merchant), "judge": "heuristic"}
        for opening in (trajectory.profile["opening"], pairs[1][1], str(merchant["facts"][0])):
            assert judge.score(pairs, merchant, opening=opening) == judge.score(pairs, merchant)
