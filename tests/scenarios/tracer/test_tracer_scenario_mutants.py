"""Behaviours of TRACER / DM-Bench's assistants, policies, parsing, health checks, recogniser, audit
policies and synthetic generator that the older tests left open (found by mutation testing, issue 43
item 6). Expected values are worked out by hand from the data files and rules, not copied from the
code's output."""

import dataclasses
import json
import random
from pathlib import Path

import pytest

from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.tracer import audit as tracer_audit
from dialogue_gym.scenarios.tracer.acts import (
    read_turn,
    relevant_facts,
    reply_problem,
    states_fact,
)
from dialogue_gym.scenarios.tracer.assistants import (
    ConsultativeAssistant,
    PhraseAssistant,
    PlannerAssistant,
    SopAssistant,
)
from dialogue_gym.scenarios.tracer.data import (
    ReferenceSet,
    load_phrases,
    load_sessions,
    load_world,
)
from dialogue_gym.scenarios.tracer.health import (
    DEFAULT_HEALTH_FILE,
    assistant_turn_health,
    load_health_rules,
    user_turn_health,
)
from dialogue_gym.scenarios.tracer.parsing import (
    AssistantMove,
    UserMove,
    parse_assistant_output,
    parse_user_output,
    render_user_output,
)
from dialogue_gym.scenarios.tracer.policies import make_policy
from dialogue_gym.scenarios.tracer.prompts import describe_user

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


# -- health: the user turn's rules and the assistant's voice ------------------------------------------------


def _user(reply, level=3):
    return UserMove(reply=reply, intent_level=level, think="", format_ok=True)


def test_the_same_reply_is_a_violation_on_its_third_time_in_a_row():
    # data/health.json: same_reply_run 3, the current reply and the last two earlier ones.
    rules = load_health_rules()
    assert user_turn_health(_user("Maybe."), None, rules, ["Okay.", "Maybe."]).rule_violations == ()
    assert user_turn_health(_user("Maybe."), None, rules, ["Okay.", "Maybe.", "Maybe."]).rule_violations == ("the same reply 3 times in a row",)


def test_contact_details_are_a_violation_below_the_conversion_level_only():
    rules = load_health_rules()
    reply = "Sure, my number is 13812345678."
    assert user_turn_health(_user(reply, 5), None, rules, []).rule_violations == ()
    assert user_turn_health(_user(reply, 4), None, rules, []).rule_violations == (
        "contact details in the reply at intent level 4 (level 5 gives contact information)",
    )


def test_a_well_tagged_but_inconsistent_user_turn_is_in_format_and_breaks_a_rule():
    # Level 5 without contact details: the record is the exact format (nothing repaired), its content
    # contradicts the level (a rule violation, not a format problem).
    move = parse_user_output(render_user_output("Sounds good, thanks.", 5), 3)
    health = user_turn_health(move, None, load_health_rules(), [])
    assert health.format_ok is True and health.repaired == ()
    assert health.rule_violations == ("intent level 5 without contact information in the reply",)


def test_the_assistant_is_checked_against_the_assistants_own_role_voice():
    rules = load_health_rules()
    # "I'm not interested" is the user's voice: from the assistant it is a role reversal.
    assert assistant_turn_health(AssistantMove("I'm not interested, thanks."), rules).role_reversal != ()
    # "our specialists" is the assistant's own voice: no reversal.
    assert assistant_turn_health(AssistantMove("Our specialists can help you."), rules).role_reversal == ()


# -- parsing ---------------------------------------------------------------------------------------------


def test_an_out_of_range_level_in_the_exact_format_falls_back_and_is_flagged():
    move = parse_user_output(render_user_output("Tell me more.", 9), 2)
    assert (move.intent_level, move.format_ok) == (2, False)
    assert "kept 2" in move.problem


def test_a_reply_without_its_tag_is_the_text_with_the_tags_taken_out():
    move = parse_user_output("Hello <b>there</b> friend", 1)
    assert move.reply == "Hello there friend" and move.format_ok is False


def test_a_closing_response_tag_before_the_opening_one_is_not_its_close():
    assert parse_assistant_output("</response> noise <response>Hi there.</response>").utterance == "Hi there."


# -- assistants ------------------------------------------------------------------------------------------


def _merchant(industry):
    return next(m for m in load_world().merchants if m["industry"] == industry)


def test_the_first_unsaid_fact_comes_first_when_the_reply_points_at_none():
    merchant = _merchant("automotive")
    memory = {"reply": ""}
    facts = merchant["facts"]
    assert [PhraseAssistant.next_fact(merchant, memory) for _ in range(3)] == [facts[0], facts[1], facts[2]]


def test_the_sop_assistant_probes_on_odd_turns_and_asks_for_contact_on_even_ones():
    sop = SopAssistant()
    assert sop.acts("Okay.", 1, {}) == ["probe"]
    assert sop.acts("Okay.", 2, {}) == ["answer", "contact"]


def test_the_probe_phrase_comes_from_the_merchants_industry_pool():
    for industry in ("healthcare", "legal"):
        merchant = _merchant(industry)
        memory = {"profile": {"merchant": merchant}}
        expected = load_phrases()["phrases"]["probe"][industry][0].replace("{merchant}", merchant["name"])
        assert PhraseAssistant().phrase("probe", memory) == expected


def test_once_every_fact_is_said_an_answer_and_probe_turn_is_one_probe():
    # Consultative answers a non-concrete question with answer + probe; with nothing left to state the
    # answer becomes a probe too, said once.
    merchant = _merchant("automotive")
    memory = {"profile": {"merchant": merchant}, "facts_said": list(range(len(merchant["facts"])))}
    observation = {"turn": 2, "messages": [{"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Is it any good?"}]}
    said = ConsultativeAssistant().act(observation, {}, memory)
    assert said == load_phrases()["phrases"]["probe"]["automotive"][0].replace("{merchant}", merchant["name"])
    assert memory["used"] == {"probe": 1}


def test_the_planner_weighs_its_candidate_turns_on_copies_of_its_memory():
    # Only the turn it says is counted in its memory: one or two acts, each once.
    merchant = _merchant("automotive")
    planner = PlannerAssistant()
    memory = planner.start({"merchant": merchant}, 0)
    observation = {"turn": 1, "messages": [{"role": "assistant", "content": merchant["greeting"]}, {"role": "user", "content": "How much is the down payment?"}]}
    planner.act(observation, {}, memory)
    assert 1 <= sum(memory["used"].values()) <= 2 and set(memory["used"].values()) == {1}
    assert len(memory.get("facts_said", [])) <= 1


# -- acts: what the user asked, which facts a line is about, what a stated fact needs, copied replies ------

AUTO_FACTS = tuple(_merchant("automotive")["facts"])  # 0 test drives, 1 down payments, 2 models, 3 showroom


def test_a_new_fact_that_is_not_the_one_the_user_asked_about_is_no_answer():
    other = read_turn("Test drives can be booked any day of the week.", AUTO_FACTS, "How much is the down payment?")
    assert other.new_facts == {0} and other.acts == {"none"} and other.flags == {"ignored"}
    asked = read_turn("Down payments start from 15% on most models.", AUTO_FACTS, "How much is the down payment?")
    assert asked.new_facts == {1} and asked.acts == {"answer"} and asked.flags == frozenset()


def test_a_line_sharing_no_word_with_any_fact_is_about_none_of_them():
    assert relevant_facts("Hello there?", AUTO_FACTS) == frozenset()
    assert relevant_facts("How much is the down payment?", AUTO_FACTS) == {1}


def test_a_one_word_fact_is_stated_by_its_one_word():
    assert states_fact(frozenset({"weekend"}), frozenset({"weekend"})) is True
    assert states_fact(frozenset({"price", "weekend"}), frozenset({"price", "weekend", "open", "clinic"})) is True
    assert states_fact(frozenset({"price"}), frozenset({"price", "weekend", "open", "clinic"})) is False


def test_a_reply_held_inside_the_assistants_line_copies_it_as_much_as_one_holding_it():
    line = "Hello, we offer free consultations on weekends, would you like one?"
    assert reply_problem("we offer free consultations on weekends", line) == "the reply copies the assistant's last line"
    assert reply_problem(line, "we offer free consultations on weekends") == "the reply copies the assistant's last line"
    assert reply_problem("Weekends work for me.", line) is None


# -- audit policies and prompts ---------------------------------------------------------------------------


def _system(content):
    return {"messages": [{"role": "system", "content": content}, {"role": "user", "content": "Hi."}]}


def test_merchant_facts_are_the_list_under_the_facts_header_up_to_the_blank_line():
    prompt = "You are an assistant.\nFacts you may state:\n- we open at nine\n- parking is free\n\nSteps:\n- greet\n- ask"
    assert tracer_audit.merchant_facts(_system(prompt)) == ["we open at nine", "parking is free"]
    assert tracer_audit.merchant_facts(_system("No facts here.")) == []


def test_facts_then_contacts_states_each_fact_from_the_first_then_asks_for_contact():
    observation = _system("Facts you may state:\n- we open at nine\n- parking is free\n\nBe brief.")
    rng = random.Random(0)
    said = [tracer_audit._facts_then_contacts(observation, turn, rng) for turn in (1, 2, 3)]
    assert said[:2] == ["Good news: we open at nine.", "Good news: parking is free."]
    assert said[2] == tracer_audit.CONTACT_PHRASINGS[2 % len(tracer_audit.CONTACT_PHRASINGS)]


def test_a_user_is_described_by_the_labels_of_its_profile_fields():
    assert describe_user({"age_group": "25-34", "city_tier": "tier 1", "personality": "calm"}) == (
        "A platform user (age group: 25-34; city: tier 1). Personality: calm. Initial need: unknown."
    )


# -- data -------------------------------------------------------------------------------------------------


def test_a_reference_set_is_synthetic_only_when_every_session_is():
    first, second = load_sessions().sessions[:2]
    assert ReferenceSet("two.jsonl", (first, second)).synthetic is True
    assert ReferenceSet("mixed.jsonl", (first, dataclasses.replace(second, synthetic=False))).synthetic is False


def test_the_empathetic_assistant_answers_a_question_or_a_negative_reply_and_probes_otherwise():
    from dialogue_gym.scenarios.tracer.assistants import EmpatheticAssistant

    empathetic = EmpatheticAssistant()
    assert empathetic.acts("Okay?", 1, {}) == ["empathy", "answer"]  # a question, not negative
    assert empathetic.acts("Not interested, too expensive.", 1, {}) == ["empathy", "answer"]  # negative, no question
    assert empathetic.acts("Okay.", 1, {}) == ["empathy", "probe"]


def test_reply_level_reads_a_reply_against_the_users_own_industrys_templates():
    from dialogue_gym.scenarios.tracer.assistants import reply_level

    # "Does it hurt?" is a healthcare level-3 template (data/replies.json): an automotive user's reply is
    # read against the automotive (and any-industry) templates only, so it is not that level-3 line.
    assert reply_level("Does it hurt?", "healthcare") == 3
    assert reply_level("Does it hurt?", "automotive") != 3
    # With the industry unknown, every industry's templates could have rendered it.
    assert reply_level("Does it hurt?", None) == 3


def test_the_planner_weighs_each_candidate_against_the_users_last_reply():
    import numpy as np

    merchant = _merchant("automotive")
    planner = PlannerAssistant()
    seen = []

    class Features:
        def features(self, profile, utterances, previous, turn, own_replies):
            seen.append((utterances[0], turn, list(own_replies)))
            return np.zeros(3)

    planner.dynamics = type("Dynamics", (), {"feature_map": Features(), "weights": np.zeros((3, 6))})()
    memory = planner.start({"merchant": merchant}, 0)
    question = "How much is the down payment?"
    observation = {"turn": 1, "messages": [{"role": "assistant", "content": merchant["greeting"]}, {"role": "user", "content": question}]}
    planner.act(observation, {}, memory)
    # One weighing per candidate turn, each on the opening, the user's one reply so far, and that reply.
    assert len(seen) == 11 and set(map(str, seen)) == {str((merchant["greeting"], 1, [question]))}


def test_three_sentences_with_three_acts_is_a_turn_not_a_monologue():
    # MAX_SENTENCES = 3 and MAX_ACTS = 3 are the most a turn may hold: empathy, a fact (answer), a contact request.
    turn = "I understand. Down payments start from 15% on most models. Could you share your phone number?"
    reading = read_turn(turn, AUTO_FACTS, "How much is the down payment?")
    assert reading.acts == {"empathy", "answer", "contact_request"} and reading.sentences == 3
    assert "monologue" not in reading.flags


# -- the health rules file --------------------------------------------------------------------------------


def _rules_file(tmp_path, **fields):
    path = Path(tmp_path) / "health.json"
    path.write_text(json.dumps({**json.loads(DEFAULT_HEALTH_FILE.read_text()), **fields}))
    return str(path)


@pytest.mark.parametrize("run", [2, 15])
def test_a_same_reply_run_at_either_end_of_its_range_loads(tmp_path, run):
    assert load_health_rules(_rules_file(tmp_path, same_reply_run=run)).same_reply_run == run


@pytest.mark.parametrize("run", [1, 16, True, 3.0])
def test_a_same_reply_run_outside_its_range_is_a_typed_error(tmp_path, run):
    with pytest.raises(ScenarioError, match="same_reply_run"):
        load_health_rules(_rules_file(tmp_path, same_reply_run=run))


@pytest.mark.parametrize("voices", [None, ["x"], {"assistant": ["x"]}, {"assistant": ["x"], "user": ["y"], "judge": ["z"]}])
def test_role_voice_must_map_exactly_both_roles(tmp_path, voices):
    with pytest.raises(ScenarioError, match="role_voice"):
        load_health_rules(_rules_file(tmp_path, role_voice=voices))


def test_the_user_audits_fixed_policies_say_what_their_descriptions_say():
    says = {name: (what, say) for name, _, what, say in tracer_audit._tracer_says()}
    # The user's chat view: the assistant's lines come as "user" messages (audit.last_heard).
    heard = {"messages": [{"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Our specialists are free today."}]}
    rng = random.Random(0)

    def move(name):
        return parse_user_output(says[name][1](heard, 1, rng), -1)

    assert "at level 3" in says["echo"][0] and (move("echo").reply, move("echo").intent_level) == ("Our specialists are free today.", 3)
    assert "at level 3" in says["fixed_line"][0] and move("fixed_line").intent_level == 3
    assert "at level 2" in says["constant_level"][0] and (move("constant_level").reply, move("constant_level").intent_level) == ("Not sure yet.", 2)
    assert (move("hang_up").reply, move("hang_up").intent_level) == ("", 0)
    made_up = move("made_up_words")
    assert says["made_up_words"][0].startswith("six made-up words") and len(made_up.reply.split()) == 6 and made_up.intent_level in (2, 3)


def test_a_user_turn_with_an_empty_rationale_loads(tmp_path):
    from dialogue_gym.scenarios.tracer.data import DEFAULT_SESSIONS_FILE

    record = json.loads(DEFAULT_SESSIONS_FILE.read_text(encoding="utf-8").splitlines()[0])
    record["turns"][1]["rationale"] = ""  # the first user turn: its reasoning left out
    path = tmp_path / "sessions.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert load_sessions(path).sessions[0].turns[1].rationale == ""


def test_a_turn_of_45_words_is_a_turn_and_of_46_a_monologue():
    # MAX_WORDS = 45 is the most a turn may hold, on its own: one sentence, no act to count.
    ten = "we are here and we can help you with that"
    turn = "Sure, " + " ".join([ten] * 4) + " today and every day."  # 1 + 4 x 10 + 4 = 45 words
    reading = read_turn(turn, ())
    assert (reading.words, reading.sentences) == (45, 1) and "monologue" not in reading.flags
    longer = read_turn(turn[: -len(".")] + " too.", ())
    assert (longer.words, longer.sentences) == (46, 1) and "monologue" in longer.flags


def test_the_made_up_and_salad_users_say_every_level_of_their_description_and_no_other():
    says = {name: (what, say) for name, _, what, say in tracer_audit._tracer_says()}
    heard = {"messages": [{"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Our specialists are free today."}]}
    rng = random.Random(0)
    levels = {name: {parse_user_output(says[name][1](heard, 1, rng), -1).intent_level for _ in range(60)} for name in ("made_up_words", "word_salad")}
    assert says["made_up_words"][0].endswith("levels 2-3") and levels["made_up_words"] == {2, 3}
    assert says["word_salad"][0].endswith("levels 2-4") and levels["word_salad"] == {2, 3, 4}
