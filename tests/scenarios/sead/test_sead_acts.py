"""The SEAD recogniser: acts only from understood sentences, steps only as instructions, limits per turn."""

import random

import pytest

from dialogue_gym.audit import made_up_word
from dialogue_gym.scenarios.sead import acts
from dialogue_gym.scenarios.sead.acts import analyze
from dialogue_gym.scenarios.sead.agents import PHRASES, SOP_SCRIPT
from dialogue_gym.scenarios.sead.audit import VOCABULARY
from dialogue_gym.scenarios import understanding
from dialogue_gym.scenarios.understanding import read_sentence, sentences


def test_constants_are_pinned():
    assert (acts.MAX_ACTS_PER_TURN, acts.MAX_SENTENCES_PER_TURN, acts.MAX_WORDS_PER_TURN) == (4, 4, 60)
    assert (acts.MAX_FRAGMENTS, acts.MAX_UNKNOWN_WORDS, acts.MIN_WORDS_PER_ACT) == (1, 1, 4)
    assert acts.STEPS == ("open_app", "tap_entry", "claim")
    assert acts.SHORT_ACTS == {"greeting", "closing", "empathy"}
    assert acts.SOCIAL_ACTS == {"greeting", "self_intro", "empathy", "closing"}
    assert {"guide", "ask_readiness", "off_script"} <= acts.ACTS


@pytest.mark.parametrize("act, options", [(act, options) for act, options in PHRASES.items()], ids=list(PHRASES))
def test_every_baseline_phrase_is_understood_and_carries_its_act(act, options):
    expected = {"opening": "identity_check", "guide_again": "guide"}.get(act, act)
    for phrase in options:
        recognition = analyze(phrase)
        assert recognition.confusing == () and not recognition.monologue, phrase
        assert expected in recognition.acts, (phrase, recognition.acts)


def test_the_sop_script_is_understood_line_by_line():
    for line in SOP_SCRIPT:
        recognition = analyze(line)
        assert recognition.confusing == () and not recognition.monologue and recognition.acts != {"off_script"}, line


@pytest.mark.parametrize(
    "text, reason",
    [
        ("free credit owner kalovex drimun", "made_up_words"),
        ("We offer zorpel credit to your vexmun restaurant today.", "made_up_words"),
        ("owner open the app anytime 700", "crammed"),
        ("no fees free credit anytime open the app", "crammed"),
        ("owner rating exposure", "no_function_word"),
        ("free credit, no fees, rating, sms, exposure, anytime", "keyword_list"),
    ],
)
def test_cue_strings_are_not_understood_and_carry_nothing(text, reason):
    recognition = analyze(text)
    assert recognition.acts == {"off_script"} and recognition.steps == ()
    assert reason in recognition.confusing


def test_two_cue_fragments_are_a_keyword_list_but_a_short_reply_is_not():
    assert analyze("No fees. Free credit. Rating 4.6.").confusing == ("keyword_fragments",)
    assert analyze("No fees. Free credit. Rating 4.6.").acts == {"off_script"}
    assert analyze("Sorry!").acts == {"empathy"} and analyze("Sorry!").confusing == ()
    assert analyze("Hello! Goodbye.").acts == {"greeting", "closing"}


def test_steps_count_only_as_instructions():
    assert analyze("Please open your merchant back-office app.").steps == ("open_app",)
    assert analyze("Now tap the 'get more exposure' entry.").steps == ("tap_entry",)
    assert analyze("Then claim the credit; you should see an SMS and a pop-up.").steps == ("claim",)
    assert analyze("Open the app and tap 'get more exposure'.").steps == ("open_app", "tap_entry")
    offer = analyze("Would you like to claim it now?")
    assert offer.steps == () and offer.acts == {"ask_readiness"}
    assert analyze("Tap the SMS pop-up, you should see it.").steps == ()
    # The entry's name is not a value pitch.
    assert "value" not in analyze("Now tap the 'get more exposure' entry.").acts


def test_a_turn_over_a_limit_is_a_monologue_and_nothing_lands():
    monologue = analyze(" ".join(VOCABULARY.facts))
    assert monologue.monologue and monologue.acts == {"off_script"} and monologue.steps == ()
    assert {"rules", "evidence", "guide"} <= monologue.carried
    five_sentences = " ".join(["We offer free credit."] * 5)
    assert analyze(five_sentences).monologue
    assert analyze("It is free. " * 21).monologue  # 63 words
    assert not analyze(PHRASES["opening"][0]).monologue  # four acts is the limit


def test_questions_that_ask_nothing_are_counted():
    for text in ("And?", "Could you tell me more?", "What do you mean?", "Is that so?"):
        assert analyze(text).vague_questions == 1, text
    assert analyze("Are you the owner of the restaurant?").vague_questions == 0
    assert analyze("?").silent and analyze("").silent


def test_the_reviews_salad_almost_never_lands_an_act():
    """The review's recipe: four cue words and two made-up words. A made-up word can come out real
    ("quotas"), so a rare salad is read as a sentence: measured 1 in 2000."""
    rng = random.Random(0)
    salads = [" ".join(rng.sample(VOCABULARY.cue_words, 4) + [made_up_word(rng), made_up_word(rng)]) for _ in range(2000)]
    assert sum(analyze(salad).acts != {"off_script"} for salad in salads) <= 4


def test_cue_strings_without_made_up_words_rarely_land_two_acts():
    """Without made-up words, strung cues fail as crammed or carry one act; two strung steps that
    read as an instruction ("get more exposure claim it open the app owner") are the rare rest:
    measured 2.4 %."""
    rng = random.Random(1)
    strings = [" ".join(rng.sample(VOCABULARY.cue_words, 4)) for _ in range(2000)]
    landed = [len(analyze(text).acts - acts.SOCIAL_ACTS - {"simplify", "respect_time"}) for text in strings]
    assert sum(n >= 2 for n in landed) <= 0.03 * len(strings)
    assert max(landed) <= 2


def test_the_shared_reader_keeps_decimals_and_reads_contractions():
    """Additions to understanding.py made for SEAD: '4.6' is not a sentence end, and a sentence
    written with contractions ("it's", "that's") has function words."""
    assert sentences("Our app is rated 4.6 by users. It is free.") == ("Our app is rated 4.6 by users.", "It is free.")
    assert read_sentence("That's right, it's free.").understood
    assert "evidence" in analyze("Customers rate our app 4.6, so diners trust it.").acts


def test_recognition_is_memoised_for_short_texts_only():
    """Neither the turn nor the sentence cache keeps hostile-length text (the shared reader's
    sentence cache was unbounded in length)."""
    analyze.cache_clear()
    understanding._read.cache_clear()
    analyze("We offer free credit.")
    for index in range(20):
        analyze(f"{index} " + "we offer free credit " * 300)
    assert analyze.cache_info().currsize == 1 and understanding._read.cache_info().currsize == 1


def test_highest_overlap_is_the_best_jaccard_share_by_hand():
    """{a, b, c} against {a, b} shares 2 of 3 words, against {c, d, e, f} 1 of 6: the best is 2/3 (a
    formula dividing by the smaller set would give 1.0, by the larger 2/3 and 1/4); empty sets count 0."""
    words = frozenset("abc")
    assert understanding.highest_overlap(words, [frozenset(), frozenset("cdef"), frozenset("ab")]) == 2 / 3
    assert understanding.highest_overlap(words, [frozenset("cdef")]) == 1 / 6
    assert understanding.highest_overlap(words, [frozenset("xyz")]) == 0.0 == understanding.highest_overlap(words, [])

    def unread():
        raise AssertionError("the earlier turns were read for a turn without content words")
        yield

    assert understanding.highest_overlap(frozenset(), unread()) == 0.0


def test_near_repeat_is_highest_overlap_on_content_words():
    first, second = "We offer free credit for new restaurants.", "The free credit is for new restaurants like yours."
    mine, theirs = (understanding.content_words(text) for text in (first, second))
    assert understanding.near_repeat(first, [second]) == len(mine & theirs) / len(mine | theirs) > 0
    assert understanding.near_repeat(first, ["Hello?", second, first]) == 1.0
    assert understanding.near_repeat("Hello?", [first]) == 0.0  # no content words: repeats nothing
