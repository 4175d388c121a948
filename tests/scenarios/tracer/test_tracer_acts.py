"""The TRACER / DM-Bench recogniser: acts need sentences, effects saturate, crammed turns are
monologues, and gibberish, echoes and repeats are flagged (``data/UNDERSTANDING.md``)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue_gym.scenarios.common import MAX_ACTION_CHARS
from dialogue_gym.scenarios.tracer import acts
from dialogue_gym.scenarios.tracer.acts import analyze, read_turn, reply_problem, states_fact
from dialogue_gym.scenarios.tracer.data import DYNAMICS_FILE, REPLIES_FILE, load_world
from dialogue_gym.scenarios.tracer.dynamics import FeatureMap, IntentDynamics

FACTS = [
    "down payments start from 15% on most models",
    "test drives can be booked any day of the week",
    "the showroom is next to the city ring road",
    "laser surgery needs a pre-operation exam first",
]
CONTACT = "Could you share your phone or WeChat so we can follow up?"


def test_constants_are_pinned():
    assert (acts.MAX_SENTENCES, acts.MAX_WORDS, acts.MAX_ACTS, acts.HEARD_SENTENCES) == (3, 45, 3, 2)
    assert (acts.SATURATION, acts.SATURATING_ACTS) == (2, ("empathy", "benefit", "urgency"))
    assert (acts.REPEAT_THRESHOLD, acts.ECHO_THRESHOLD, acts.ECHO_SPAN) == (0.6, 0.5, 3)
    assert (acts.MAX_FACT_WORDS, acts._STEM) == (20, 5)
    assert (acts.REPLY_KEYWORD_WORDS, acts.REPLY_MIN_FUNCTION_SHARE, acts.REPLY_ECHO_SPAN) == (5, 0.2, 5)
    assert acts.SHORT_ACTS == {"greeting", "empathy"}
    assert acts.FLAGS == ("confusing", "echo", "repeat", "monologue", "ignored")
    assert acts.ACTS == ("greeting", "answer", "contact_request", "empathy", "benefit", "urgency", "probe", "none")
    assert acts.CONFUSING_REASONS == {"made_up_words", "no_function_word", "keyword_list", "babble"}
    assert acts.REPLY_REASONS == {"made_up_words", "keyword_list", "babble"}


@pytest.mark.parametrize(
    "turn, expected",
    [
        ("we offer phone sorry", {"none"}),  # the review's exploit: a sentence that carries nothing
        ("Leave your phone number and our specialist will send you a plan.", {"contact_request"}),
        ("What's your WeChat?", {"contact_request"}),
        ("I understand.", {"empathy"}),  # a formula may be short
        ("Sorry.", {"none"}),  # a bare keyword is not
        ("Good news: test drives can be booked any day of the week.", {"benefit", "answer"}),
        ("We offer great service for you.", {"none"}),  # no merchant fact, no answer
        ("What budget range do you have in mind?", {"probe"}),
        ("Hello! How can I help you today?", {"greeting", "probe"}),
        ("This offer ends today, don't miss it!", {"urgency"}),
    ],
)
def test_acts_need_sentences_and_constructions(turn, expected):
    assert analyze(turn, FACTS) == expected


@pytest.mark.parametrize("question", ["?", "And?", "Why?", "Could you tell me more?", "What do you mean?", "Is that so?"])
def test_content_free_questions_are_no_probe(question):
    assert read_turn(question, FACTS).acts == {"none"}


@pytest.mark.parametrize(
    "turn",
    [
        "we offer phone sorry understand free discount contact wechat specialist today",  # keyword stuffing
        "phone sorry free discount kalovex drimun",  # word salad with made-up words
        "kalovex drimunpel zortas quobre nuvrin",  # made-up words
        "phone phone phone phone phone please",  # babble
        "first check-up x-ray free month laser surgery exam pre-operation",  # fact words shuffled into a list
    ],
)
def test_gibberish_is_confusing_and_carries_no_act(turn):
    reading = read_turn(turn, FACTS)
    assert reading.acts == {"none"} and "confusing" in reading.flags and reading.poor


def test_a_terse_fact_said_word_for_word_reads_as_a_sentence():
    reading = read_turn("Right now laser surgery needs a pre-operation exam first.", FACTS)
    assert reading.acts == {"answer"} and reading.flags == set() and reading.new_facts == {3}


def test_states_fact_needs_half_the_fact_words_and_at_least_two():
    five = frozenset({"a", "b", "c", "d", "e"})
    assert states_fact(frozenset({"a", "b"}), five) and not states_fact(frozenset({"a"}), five)
    three = frozenset({"a", "b", "c"})
    assert states_fact(frozenset({"a", "b"}), three) and not states_fact(frozenset({"c"}), three)
    assert states_fact(frozenset({"a"}), frozenset({"a"})) and not states_fact(frozenset({"a"}), frozenset())


def test_answers_and_empathy_saturate():
    said = "Sure: down payments start from 15% on most models."
    assert read_turn(said, FACTS).acts == {"answer"}
    again = read_turn("To answer that, down payments start from 15% on most models.", FACTS, earlier=[said])
    assert "answer" not in again.acts and again.facts == {0} and again.new_facts == set()
    soothing = ["I understand, no pressure at all.", "Sorry about that, I'm happy to help."]
    assert "empathy" in read_turn("That's a fair question, take your time.", FACTS, earlier=soothing[:1]).acts
    assert "empathy" not in read_turn("That's a fair question, take your time.", FACTS, earlier=soothing).acts


def test_a_near_repeat_carries_nothing_even_padded_with_made_up_words():
    first = "Could you leave your phone number so our specialist can help you?"
    padded = "Could you leave your phone number so our kalovex can help you?"
    for turn in (first, padded):
        reading = read_turn(turn, FACTS, earlier=["Hello!", first])
        assert reading.flags == {"repeat"} and reading.acts == {"none"}
    fresh = read_turn("Sure: the showroom is next to the city ring road. " + CONTACT, FACTS, earlier=[first])
    assert "repeat" not in fresh.flags and fresh.acts == {"answer", "contact_request"}


def test_echo_of_the_users_line_is_flagged():
    mirrored = read_turn(f"Where is your store? {CONTACT}", FACTS, heard="Where is your store?")
    assert "echo" in mirrored.flags and mirrored.poor
    assert read_turn("Not needed.", FACTS, heard="Not needed.").flags == {"echo"}
    answer = read_turn("The showroom is next to the city ring road.", FACTS, heard="Where is your store?")
    assert answer.flags == set() and answer.acts == {"answer"}


def test_an_answer_answers_the_question_asked():
    asked = "Where is the showroom?"
    right = read_turn("The showroom is next to the city ring road.", FACTS, heard=asked)
    assert right.acts == {"answer"} and right.flags == set()
    wrong = read_turn("Test drives can be booked any day of the week.", FACTS, heard=asked)
    assert wrong.acts == {"none"} and wrong.flags == {"ignored"} and wrong.new_facts == {1}
    back = read_turn("Which part of the city are you in?", FACTS, heard=asked)
    assert back.acts == {"probe"} and back.flags == set(), "a question back is no dodge"
    # No fact is about the question: any new fact answers it.
    assert read_turn("Test drives can be booked any day of the week.", FACTS, heard="Is it nice?").acts == {"answer"}
    assert acts.relevant_facts(asked, tuple(FACTS)) == {2} and acts.relevant_facts("Hmm.", tuple(FACTS)) == set()
    # "down", "payme(nt)", "most", "model(s)" (stems of five letters); "what is the on" are function words.
    assert acts.fact_overlaps("What is the down payment on most models?", tuple(FACTS)) == (4, 0, 0, 0)


def test_a_crammed_turn_is_a_monologue_heard_by_its_first_sentences():
    turn = "Good news: test drives can be booked any day of the week. What budget do you have? I understand. " + CONTACT
    reading = read_turn(turn, FACTS)
    assert reading.flags == {"monologue"} and reading.sentences == 4
    assert reading.acts == {"benefit", "answer", "probe"}, "the contact request in sentence 4 is not taken in"
    pasted = read_turn(" ".join(f"Also, {fact}." for fact in FACTS), FACTS)
    assert pasted.flags == {"monologue"} and pasted.new_facts == {0, 1} and pasted.facts == {0, 1, 2, 3}
    long = read_turn("Sure, " + " ".join(["we are here and we can help you with that"] * 5) + ".", FACTS)
    assert long.words > acts.MAX_WORDS and "monologue" in long.flags


def test_feature_map_switches_on_what_the_user_made_of_the_turn():
    feature_map = FeatureMap.from_world(load_world())
    assert {f"turn:{flag}" for flag in acts.FLAGS} <= set(feature_map.names)
    profile = {"user": {}, "merchant": {"facts": FACTS}}
    x = feature_map.features(profile, ["Hello!", "phone sorry free discount kalovex drimun"], 3, 1)
    assert {feature_map.names[i] for i in np.flatnonzero(x)} == {"bias", "prev:3", "progress", "act:none", "turn:confusing"}
    x = feature_map.features(profile, ["Hello!", "Where is your store? " + CONTACT], 3, 1, ["Where is your store?"])
    assert {"act:contact_request", "turn:echo"} <= {feature_map.names[i] for i in np.flatnonzero(x)}


def test_flag_weights_push_towards_leaving_and_are_pinned():
    weights = json.loads(DYNAMICS_FILE.read_text())["weights"]
    assert weights["turn:confusing"] == [1.5, 0.9, 0.0, -0.5, -0.9, -1.4]
    assert weights["turn:echo"] == [1.2, 0.8, 0.0, -0.4, -0.8, -1.2]
    assert weights["turn:repeat"] == [0.9, 0.6, 0.0, -0.3, -0.6, -1.0]
    assert weights["turn:monologue"] == [1.0, 0.6, 0.2, -0.3, -0.6, -1.0]
    assert weights["turn:ignored"] == [0.6, 0.4, 0.1, -0.2, -0.4, -0.6]
    # Re-set with the recogniser (the keyword reader's rows were about half as strong).
    assert weights["bias"] == [-0.3, 0.0, 0.0, 0.0, 0.0, -0.7]
    assert weights["act:answer"] == [-0.8, -0.6, -0.2, 0.5, 0.8, 0.3]
    assert weights["act:contact_request"] == [0.2, 0.3, -0.2, -0.3, 0.3, 1.5]
    assert weights["act:empathy"] == [-0.6, -0.3, 0.1, 0.3, 0.2, 0.0]
    assert weights["act:probe"] == [-0.5, -0.2, 0.5, 0.3, 0.2, -0.1]
    assert weights["act:none"] == [1.2, 0.8, 0.0, -0.4, -0.7, -0.9]
    dynamics = IntentDynamics.from_file()
    profile = {"user": {"personality": "skeptical"}, "merchant": {"facts": FACTS}}
    fair = dynamics.probabilities(dynamics.feature_map.features(profile, ["Hello!", "Sure: the showroom is next to the city ring road. " + CONTACT], 3, 2))
    salad = dynamics.probabilities(dynamics.feature_map.features(profile, ["Hello!", "we offer phone sorry understand free discount contact wechat"], 3, 2))
    assert salad[0] > fair[0] and salad[5] < fair[5] / 4


def test_every_reply_template_is_a_reply_a_person_writes():
    replies = json.loads(REPLIES_FILE.read_text())["replies"]
    fields = {"phone": "138xxxx1234", "wechat": "user123a", "need_short": "wants a car", "merchant": "Smile Dental Clinic"}
    for by_industry in replies.values():
        for options in by_industry.values():
            for reply in options:
                assert reply_problem(reply.format(**fields)) is None, reply


@pytest.mark.parametrize(
    "reply, heard, problem",
    [
        ("price phone free wechat appointment discount yes number", "", "keyword list"),
        ("kalovex drimun zorpel", "", "made up words"),
        ("yes yes yes yes yes please", "", "babble"),
        ("Leave your phone number and our specialist", "Leave your phone number and our specialist will call.", "copies"),
        ("Contact me at 138xxxx1234.", "", None),
        ("Upper left tooth.", "Which tooth, upper left?", None),
        ("I'm just comparing options for now.", "", None),
    ],
)
def test_reply_problem(reply, heard, problem):
    found = reply_problem(reply, heard)
    assert (found is None) if problem is None else (problem in found)


def test_a_replys_language_is_read_once_but_its_copy_check_each_time():
    reply = "Leave your phone number and our specialist"
    assert reply_problem(reply, "") is None
    assert "copies" in reply_problem(reply, reply + " will call.")
    assert reply_problem(reply, "Hello") is None
    # numbers are set aside before reading: a word list with numbers in it is still a keyword list
    assert "keyword list" in reply_problem("price 12 phone 34 free wechat appointment discount yes number")
    assert acts._without_numbers("Call 13812345678 now, ok?") == "Call   now, ok?"
    assert acts._without_numbers("No digits at all.") == "No digits at all."


CARRIES_SAMPLES = [
    "Hello! Leave your phone number and our specialist will call you.",
    "Down payments start from 15% on most models.",  # states a fact: an answer
    "What budget do you have in mind?",
    "Sorry to hear that. Book now, the offer ends today!",
    "kalovex drimun zorpel",  # carries nothing: none
    "",
]


@pytest.mark.parametrize("utterance", CARRIES_SAMPLES)
def test_carries_is_membership_in_analyze(utterance):
    for facts in ([], FACTS):
        found = analyze(utterance, facts)
        assert {act for act in acts.ACTS if acts.carries(utterance, act, facts)} == found, (utterance, facts)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_the_recogniser_is_total(text):
    assert read_turn(text, FACTS, text[:20], [text[::-1]]).acts
    problem = reply_problem(text, text[:10])
    assert problem is None or isinstance(problem, str)


def test_the_recogniser_is_linear_on_huge_hostile_text():
    for unit in ("a ", "phone. ", "? ", "x" * 50 + " ", "Leave your " * 3, "xy", "138xxxx1234 ", "a1"):
        text = (unit * (MAX_ACTION_CHARS // len(unit) + 1))[:MAX_ACTION_CHARS]
        start = time.process_time()
        read_turn(text, FACTS, text, [text])
        reply_problem(text, text)
        assert time.process_time() - start < 2.0, unit


@pytest.mark.parametrize("name", ["sop", "consultative", "empathetic"])
def test_scripted_assistants_state_each_fact_once(name):
    """A restated fact is a repeat to the user: once every fact is said, the assistant probes."""
    from dialogue_gym.envs.driver import CounterpartDriver
    from dialogue_gym.scenarios.tracer.assistants import FACT_ACTS
    from dialogue_gym.scenarios.tracer.game import TracerGame
    from dialogue_gym.scenarios.tracer.policies import make_policy

    assert FACT_ACTS == ("answer", "benefit")
    game = TracerGame()
    driver = CounterpartDriver({"assistant": make_policy("assistant", name), "user": make_policy("user", "flat")}, learner=None)
    game.reset(seed=0, options={"session_id": "syn-g00-s00"})
    driver.advance([game], [driver.start(game)])
    facts = game.profile["merchant"]["facts"]
    spoken = [turn.text for turn in game.turns if turn.role == "assistant"]
    assert len(spoken) == 14, "the flat user times out after 15 replies"
    for fact in facts:
        assert sum(fact in text for text in spoken) <= 1, fact


def test_the_sop_answers_with_the_fact_the_question_is_about():
    from dialogue_gym.scenarios.tracer.assistants import SopAssistant

    merchant = {"name": "Shop", "industry": "automotive", "facts": FACTS}
    sop = SopAssistant()
    memory = sop.start({"merchant": merchant}, 0)
    observation = {"messages": [{"role": "user", "content": "Where is the showroom exactly?"}], "turn": 1}
    assert "the showroom is next to the city ring road" in sop.act(observation, {}, memory)
    observation["messages"].append({"role": "user", "content": "Is it expensive?"})
    assert FACTS[0] in sop.act(observation, {}, memory), "no fact is about it: the first unsaid one"


def test_numbers_are_blanked_run_by_run_in_linear_time():
    """Contact details are set aside as whole whitespace-separated runs; the pattern must not
    backtrack (``\\S*\\d\\S*`` took seconds on a 20,000-character run without a digit)."""
    from dialogue_gym.scenarios.tracer.acts import _without_numbers

    assert _without_numbers("call 138xxxx0000 now") == "call   now"
    assert _without_numbers("a1 b c2d\te") == "  b  \te"
    assert _without_numbers("no digits here") == "no digits here"
    assert _without_numbers("x" * 20000 + " 7") == "x" * 20000 + "  "


def test_read_turn_memoises_short_contexts_only():
    acts._read_turn_cached.cache_clear()
    acts._in_context_cached.cache_clear()
    earlier = ("Hello, this is the clinic.", "We offer laser surgery.")
    first = read_turn("Laser surgery needs a pre-operation exam first.", FACTS, "What do I need?", list(earlier))
    again = read_turn("Laser surgery needs a pre-operation exam first.", FACTS, "What do I need?", earlier)
    assert first is again and acts._read_turn_cached.cache_info().currsize == 1
    long_history = ["We offer laser surgery and many other things. " * 20] * 5
    assert sum(map(len, long_history)) > acts.MAX_CACHED_TEXT_CHARS
    reading = read_turn("Laser surgery needs a pre-operation exam first.", FACTS, "What do I need?", long_history)
    assert reading == acts._read_turn("Laser surgery needs a pre-operation exam first.", tuple(FACTS), "What do I need?", tuple(long_history))
    assert acts._read_turn_cached.cache_info().currsize == 1 and acts._in_context_cached.cache_info().currsize == 1
    # a long reply makes the context long too: nothing of it is memoised, the assistant's turns included
    read_turn("Laser surgery needs a pre-operation exam first.", FACTS, "What? " * acts.MAX_CACHED_TEXT_CHARS, ["Hello."])
    assert acts._read_turn_cached.cache_info().currsize == 1 and acts._in_context_cached.cache_info().currsize == 1


def _plain_read_turn(utterance, facts, heard, earlier):
    """:func:`read_turn` in one pass with none of its parts memoised (the code before the in-context
    memo): what the memoised parts must add up to."""
    from dialogue_gym.scenarios.understanding import near_repeat

    parsed = acts._parse(utterance, facts)
    said_before, uses = set(), {act: 0 for act in acts.SATURATING_ACTS}
    for text in earlier:
        previous = acts._parse(text, facts)
        said_before |= previous.heard_facts
        for act in acts.SATURATING_ACTS:
            uses[act] += act in previous.heard_acts
    new_facts = parsed.heard_facts - said_before
    kept = {a for a in parsed.heard_acts if a not in acts.SATURATING_ACTS or uses[a] < acts.SATURATION}
    asked = acts.relevant_facts.__wrapped__(heard, facts) if "?" in heard else frozenset()
    answered = bool(parsed.heard_facts & asked)
    if new_facts and (not asked or new_facts & asked):
        kept.add("answer")
    flags = {flag for flag, on in (("confusing", parsed.confusing), ("monologue", parsed.monologue)) if on}
    extra = acts.vocabulary(facts)
    if heard and acts._echoes(utterance, heard, extra):
        flags.add("echo")
    if asked and not answered and "probe" not in kept:
        flags.add("ignored")
    if earlier and near_repeat(utterance, earlier, extra) >= acts.REPEAT_THRESHOLD:
        flags.add("repeat")
        kept = set()
    return acts.TurnReading(
        frozenset(kept or {"none"}), frozenset(flags), frozenset(i for sentence in parsed.facts for i in sentence),
        frozenset(new_facts), len(parsed.acts), parsed.understood, parsed.words,
    )


def test_read_turn_equals_its_plain_reading_on_scripted_and_hostile_contexts(monkeypatch):
    """The memoised parts of a reading (the earlier turns' history, grown a turn at a time, and the echo
    check) give the plain reading on every context scripted DM-Bench and TRACER episodes read, in any
    order (a history read for one dialogue serves another), and on hostile and long ones."""
    from dialogue_gym.evaluation import evaluate

    contexts = []
    reading = acts._read_turn_cached
    monkeypatch.setattr(acts, "_read_turn_cached", lambda *context: contexts.append(context) or reading(*context))
    for env_id, learner, agent in (("DMBench-Assistant-v0", "assistant", "sop"), ("TRACER-UserSim-v0", "user", "scripted"),
                                   ("DMBench-Assistant-v0", "assistant", "random")):
        evaluate(env_id, agent, 12, seed=3, learner=learner)
    monkeypatch.undo()
    facts = tuple(FACTS)
    gibberish = "kalovex drimun zorpel. " * 3
    contexts += [
        ("Down payments start from 15% on most models.", facts, "How much is the down payment?", ()),
        ("Test drives can be booked any day.", facts, "How much is the down payment?", ("Down payments start from 15% on most models.",)),
        ("I understand. Sorry to hear that.", facts, "ok", ("I understand.", "Sorry to hear that, I understand.")),
        ("What is the down payment", facts, "What is the down payment?", ()),
        (gibberish, facts, gibberish, (gibberish,)),
        ("Laser surgery needs a pre-operation exam first.", facts, "What do I need?", ("We offer laser surgery and more. " * 40,) * 4),
        ("I understand, sorry.", facts, "", ("Sorry to hear that.", "I understand.") * (acts.MAX_CHAINED_HISTORY + 3)),
        ("We offer laser surgery, and more.", facts, "", ("We offer laser surgery.",)),
        # a history too long to memoise, whose first turn states the fact the turn states again
        (f"{FACTS[0]}.", facts, "", (f"{FACTS[0]}. " + "We offer laser surgery and more. " * 70, "We are open. " * 200, "Hello.")),
    ]
    assert len({context[2] for context in contexts}) > 20, "the episodes read many different replies"
    for order in (contexts, contexts[::-1]):
        for cache in (acts._read_turn_cached, acts._in_context_cached, acts._history_cached, acts._echoes_cached, acts._pair_repeats, acts.relevant_facts):
            cache.cache_clear()
        for utterance, facts_, heard, earlier in order:
            assert read_turn(utterance, facts_, heard, earlier) == _plain_read_turn(utterance, facts_, heard, earlier), (utterance, heard, earlier)
    for cache in (acts._in_context_cached, acts._history_cached, acts._echoes_cached, acts._pair_repeats, acts.relevant_facts):
        assert cache.cache_info().hits > 0, cache
    assert any(acts._read_turn(*context).flags & {"repeat"} for context in contexts), "some contexts are repeats"


def test_a_repeat_found_pair_by_pair_is_the_highest_overlap_reaching_the_threshold():
    """The memoised pairwise repeat check equals the highest overlap against the threshold, on random
    word sets and on overlaps exactly at, just below and just above it (3 of 5, 5 of 9, 4 of 6)."""
    import random

    from dialogue_gym.scenarios.understanding import highest_overlap

    def words(*names):
        return frozenset(names)

    at = (words("a", "b", "c", "d"), (words("a", "b", "c", "e"),))  # 3 shared of 5: exactly 0.6
    below = (words("a", "b", "c", "d", "e", "f", "g"), (words("a", "b", "c", "d", "e", "h", "i"),))  # 5 of 9
    above = (words("a", "b", "c", "d", "e"), (words("a", "b", "c", "d", "f"),))  # 4 of 6
    cases = [at, below, above, (frozenset(), (words("a"),)), (words("a"), (frozenset(), words("b"))), (words("a"), ())]
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(8)]
    for _ in range(3000):
        cases.append((frozenset(rng.sample(vocabulary, rng.randint(0, 6))),
                      tuple(frozenset(rng.sample(vocabulary, rng.randint(0, 6))) for _ in range(rng.randint(0, 5)))))
    assert [acts._repeats(*at, memoised) for memoised in (True, False)] == [True, True]
    assert not acts._repeats(*below, True) and acts._repeats(*above, True)
    for words_, earlier in cases:
        plain = highest_overlap(words_, earlier) >= acts.REPEAT_THRESHOLD
        assert acts._repeats(words_, earlier, True) == plain == acts._repeats(words_, earlier, False), (words_, earlier)


def test_a_dialogues_history_grows_a_turn_at_a_time_and_only_while_short():
    acts._read_turn_cached.cache_clear()
    acts._in_context_cached.cache_clear()
    acts._history_cached.cache_clear()
    acts._echoes_cached.cache_clear()
    said = ["Hello, this is the clinic.", "We offer laser surgery.", "Laser surgery needs a pre-operation exam first."]
    for turn in range(1, len(said)):
        read_turn(said[turn], FACTS, "What do I need?", said[:turn])
    # each reading memoised its whole history and found its prefix's: the empty one is never stored
    assert acts._history_cached.cache_info()[:2] == (1, 2) and acts._history_cached.cache_info().currsize == 2
    read_turn(said[2], FACTS, "Is it safe?", said[:2])
    # another reply to the same turns finds what they told the user read, history and all
    assert acts._in_context_cached.cache_info()[:2] == (1, 2) and acts._history_cached.cache_info().hits == 1
    long_turn = "We offer laser surgery and many other things. " * 100
    assert len(long_turn) > acts.MAX_CACHED_TEXT_CHARS
    read_turn("Laser surgery needs a pre-operation exam first.", FACTS, "What do I need?", [long_turn] * 3)
    assert acts._history_cached.cache_info().currsize == 2 and acts._echoes_cached.cache_info().currsize == 3
    at_the_limit = ("We offer laser surgery. " * 200)[: acts.MAX_CACHED_TEXT_CHARS]
    read_turn("Laser surgery needs a pre-operation exam first.", FACTS, "", [at_the_limit, "Hello."])
    assert acts._history_cached.cache_info().currsize == 3, "a prefix of exactly MAX_CACHED_TEXT_CHARS is memoised"


def test_a_reading_after_the_opening_is_the_plain_reading_without_it():
    """:func:`read_turn_after` (the judge's reading, through the user's memo where the opening cannot
    change it) equals the plain reading without the opening: on every context of scripted DM-Bench
    episodes, each with its own opening and with every reference opening, and on openings that matter
    (one states a fact, one carries a benefit or empathy, a turn repeats one, the first turn included)."""
    from dialogue_gym.evaluation import evaluate
    from dialogue_gym.scenarios.tracer.data import DEFAULT_SESSIONS_FILE, load_sessions

    openings = sorted({session.opening for session in load_sessions(DEFAULT_SESSIONS_FILE).sessions})
    contexts = []
    for agent in ("sop", "random", "pushy"):
        for trajectory in evaluate("DMBench-Assistant-v0", agent, 8, seed=4, learner="assistant"):
            merchant, opening = trajectory.profile["merchant"], trajectory.profile["opening"]
            facts = tuple(str(f) for f in merchant.get("facts", ()))
            pairs = [(turn.role, turn.text) for turn in trajectory.turns]
            for i, (role, text) in enumerate(pairs):
                if role == "assistant":
                    heard = pairs[i - 1][1] if i and pairs[i - 1][0] == "user" else ""
                    earlier = tuple(t for r, t in pairs[:i] if r == "assistant")
                    contexts += [(o, text, facts, heard, earlier) for o in (opening, *openings[::40])]
    facts = tuple(FACTS)
    fact = f"{FACTS[0]}."
    for opening in (fact, "Good news, a free trial for you today!", "I understand, sorry to hear that.", "Welcome to the clinic! We offer laser surgery."):
        for utterance in (opening, "We offer laser surgery.", fact, "Get a free trial today, good news!", "I understand. Sorry to hear that."):
            for earlier in ((), (opening,), ("We offer laser surgery.", "Hello."), (fact, opening)):
                contexts += [(opening, utterance, facts, heard, earlier) for heard in ("", "What do I need?", opening)]
    assert sum(not acts._inert(c[0], c[2]) for c in contexts) > 50 and sum(acts._inert(c[0], c[2]) for c in contexts) > 250
    for cache in (acts._read_turn_cached, acts._history_cached, acts._echoes_cached, acts._pair_repeats, acts.relevant_facts, acts._inert):
        cache.cache_clear()
    shared = 0
    for opening, utterance, facts_, heard, earlier in contexts:
        with_opening = read_turn(utterance, facts_, heard, (opening, *earlier))
        after = acts.read_turn_after(opening, utterance, facts_, heard, earlier)
        assert after == _plain_read_turn(utterance, facts_, heard, earlier), (opening, utterance, heard, earlier)
        shared += after is with_opening
    assert shared > len(contexts) // 2, "most readings are the one read with the opening first (the user's)"


def test_a_reading_after_the_opening_finds_the_scripted_users_reading():
    from dialogue_gym.evaluation import evaluate

    acts._read_turn_cached.cache_clear()
    seen = []
    trajectories = evaluate("DMBench-Assistant-v0", "sop", 6, seed=9, learner="assistant")
    misses = acts._read_turn_cached.cache_info().misses
    for trajectory in trajectories:
        facts = tuple(str(f) for f in trajectory.profile["merchant"].get("facts", ()))
        pairs = [(turn.role, turn.text) for turn in trajectory.turns]
        earlier = []
        for i, (role, text) in enumerate(pairs):
            if role == "assistant":
                heard = pairs[i - 1][1] if i and pairs[i - 1][0] == "user" else ""
                seen.append(acts.read_turn_after(trajectory.profile["opening"], text, facts, heard, earlier))
                earlier.append(text)
    assert seen
    assert acts._read_turn_cached.cache_info().misses == misses, "every judged turn was read by the user before"
