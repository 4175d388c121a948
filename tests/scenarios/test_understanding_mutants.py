"""Rules of sentence understanding that the scenario tests leave open: inflections with a doubled
consonant, stems that only look like words, the comma rule for keyword lists, Jaccard overlap with the
scenario's vocabulary on both sides, the last unpunctuated sentence, and questions in made-up words."""

import pytest

from dialogue_gym.scenarios.understanding import (
    is_known_word,
    is_real_question,
    near_repeat,
    read_sentence,
    sentences,
)


@pytest.mark.parametrize("word", ["upping", "upped", "planned", "grabbing"])
def test_an_inflection_with_a_doubled_final_consonant_is_a_word(word):
    # "upp", "plann" and "grabb" are no words (nor with -e/-y): only the doubled-consonant rule (plan + n + ed) knows them
    assert is_known_word(word) is True


@pytest.mark.parametrize("word", ["catxed", "uzzing"])
def test_a_stem_is_a_word_only_by_its_own_rules(word):
    # "catx" is not "cat" doubled; "uzz" doubles, but "uz" is no word
    assert is_known_word(word) is False


@pytest.mark.parametrize(
    "sentence, words, reason",
    [
        ("I want a price, this app, the phone, my call, and some time.", 13, "keyword_list"),  # 4 commas, 4 >= 13 // 3
        ("I want a price, this app, the phone, my call, and some time for my mother.", 16, None),  # 4 < 16 // 3
        ("I want a price, this app, the phone, and some time.", 11, None),  # only 3 commas
    ],
)
def test_four_commas_make_a_keyword_list_only_in_a_short_sentence(sentence, words, reason):
    reading = read_sentence(sentence)
    assert len(reading.words) == words and reading.reason == reason


def test_near_repeat_is_jaccard_overlap_of_content_words():
    # {price, high} vs {price, low}: 1 shared of 3 in the union
    assert near_repeat("the price is high", ["the price is low"]) == pytest.approx(1 / 3)


def test_near_repeat_reads_earlier_turns_with_the_scenarios_vocabulary_too():
    # {love, zorblax, pricing} vs {zorblax, pricing, rocks}: 2 shared of 4
    assert near_repeat("I love zorblax pricing", ["zorblax pricing rocks"], frozenset({"zorblax"})) == 0.5


def test_the_last_sentence_counts_without_final_punctuation():
    assert sentences("Hello there. How are you") == ("Hello there.", "How are you")


def test_a_question_in_made_up_words_is_not_a_real_question():
    # 2 of 6 words made up (over a quarter): not understood, although "price" is a real, non-vague word
    assert read_sentence("Do you blorf the zintak price?").reason == "made_up_words"
    assert is_real_question("Do you blorf the zintak price?") is False
    assert is_real_question("Do you know the price?") is True
