"""Behaviours of SEAD's agents, policies, health checks, recogniser and audit policies that the older
tests left open (found by mutation testing, issue 43 item 6). Expected values are worked out by hand
from the phrase tables, not copied from the code's output."""

import json
import random
from pathlib import Path

import pytest

from dialogue_gym import audit as generic_audit
from dialogue_gym.errors import ScenarioError
from dialogue_gym.scenarios.sead import audit as sead_audit
from dialogue_gym.scenarios.sead.acts import analyze
from dialogue_gym.scenarios.sead.agents import (
    PHRASES,
    SOP_SCRIPT,
    AdaptiveAgent,
    InformedAgent,
    SopAgent,
    voiced_state,
)
from dialogue_gym.scenarios.sead.data import DATA_DIR, load_behaviors, load_campaign
from dialogue_gym.scenarios.sead.health import (
    agent_turn_health,
    load_health_rules,
    user_turn_health,
)
from dialogue_gym.scenarios.sead.parsing import AgentMove, UserMove, parse_agent_output
from dialogue_gym.scenarios.sead.prompts import caller_turn, caller_words
from dialogue_gym.scenarios.sead.state import UserState


def _adaptive_lines(owner_lines):
    """The adaptive agent's utterances for the opening and one turn per owner line."""
    agent, memory = AdaptiveAgent(), AdaptiveAgent().start({}, 0)
    messages, said = [], []
    for turn, line in enumerate([None, *owner_lines]):
        if line is not None:
            messages.append({"role": "user", "content": line})
        text = agent.act({"turn": turn, "messages": list(messages)}, {}, memory)
        said.append(parse_agent_output(text).utterance)
        messages.append({"role": "assistant", "content": text})
    return said


def test_adaptive_without_cues_gives_the_offer_then_asks_twice_then_simplifies():
    # "Okay." carries no cue: value, evidence, cost in turn, then the readiness question (turn 4 and,
    # its second asking, turn 5: both the first phrasing), and from the third asking on it simplifies.
    said = _adaptive_lines(["Okay."] * 7)
    assert said[1:] == [
        PHRASES["value"][1],  # turn 1: _pick by turn, 1 % 3
        PHRASES["evidence"][2],  # turn 2
        PHRASES["cost"][1],  # turn 3
        PHRASES["ask_readiness"][0],  # turn 4
        PHRASES["ask_readiness"][0],  # turn 5: second asking, pick(2) -> 2 % 2
        PHRASES["simplify"][0],  # turn 6: third asking is dropped for simplify, 6 % 3
        PHRASES["simplify"][1],  # turn 7
    ]


# -- make_policy: an LLM-played role stops at its record's closing tag unless the caller sets stop -------------
CANNED = {"name": "canned", "replies": ["Hi."]}


def test_an_llm_owner_stops_at_the_closing_status_tag_and_an_llm_caller_at_the_trust_tag():
    from dialogue_gym.scenarios.sead.data import load_behaviors
    from dialogue_gym.scenarios.sead.policies import make_policy

    library = load_behaviors()
    assert make_policy("user", "llm", library, backend=CANNED).sampling.stop == ("</status>",)
    assert make_policy("agent", "llm", library, backend=CANNED).sampling.stop == ("</trust_score>",)


def test_a_stop_the_caller_sets_replaces_the_roles_default():
    from dialogue_gym.scenarios.sead.data import load_behaviors
    from dialogue_gym.scenarios.sead.policies import make_policy

    policy = make_policy("user", "llm", load_behaviors(), backend=CANNED, sampling={"stop": ["\n"], "temperature": 0.5})
    assert policy.sampling.stop == ("\n",)
    assert policy.sampling.temperature == 0.5


def test_the_informed_name_builds_the_unprivileged_fair_ceiling():
    from dialogue_gym.scenarios.sead.agents import InformedAgent
    from dialogue_gym.scenarios.sead.data import load_behaviors
    from dialogue_gym.scenarios.sead.policies import make_policy

    policy = make_policy("agent", "informed", load_behaviors())
    assert type(policy) is InformedAgent and policy.privileged is False


# -- health: the rules file's bounds, and the owner turn's checks --------------------------------------------


def _rules_with(tmp_path, **fields):
    data = {**json.loads((DATA_DIR / "health.json").read_text()), **fields}
    path = tmp_path / "health.json"
    path.write_text(json.dumps(data))
    return load_health_rules(load_campaign(), load_behaviors(), path)


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_state_step", 1), ("max_state_step", 5), ("same_reply_run", 2), ("same_reply_run", 15), ("echo_overlap", 0.0), ("echo_overlap", 1.0), ("echo_overlap", 1)],
)
def test_each_setting_is_accepted_at_both_ends_of_its_range(tmp_path, field, value):
    assert getattr(_rules_with(tmp_path, **{field: value}), field) == value


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_state_step", 0), ("max_state_step", 6), ("max_state_step", 2.0), ("same_reply_run", 1), ("same_reply_run", 16),
        ("echo_overlap", -0.1), ("echo_overlap", 1.5), ("echo_overlap", "0.5"), ("echo_overlap", True), ("same_reply_run", None),
    ],
)
def test_a_setting_out_of_its_range_or_of_the_wrong_type_is_a_typed_error_naming_the_field(tmp_path, field, value):
    with pytest.raises(ScenarioError, match=field):
        _rules_with(tmp_path, **{field: value})


def _owner(reply, state=(2, 2, 2), status=0):
    return UserMove(reply=reply, state=UserState(*state), status=status, think="")


def _violations(move, categories, earlier=(), caller_line="Hello.", rules=None):
    rules = rules or load_health_rules(load_campaign(), load_behaviors())
    return user_turn_health(move, UserState(2, 2, 2), frozenset(categories), rules, list(earlier), caller_line).rule_violations


def test_a_concern_of_exactly_the_profiles_categories_is_no_violation():
    # "Are you a robot?" raises Identity_Verification (behavior_cues); a profile of that category alone may.
    assert _violations(_owner("Are you a robot?"), {"Identity_Verification"}) == ()
    assert _violations(_owner("Are you a robot?"), {"Cost_Concerns"}) == ("raises a Identity_Verification concern, which none of its behaviors has",)


def test_the_same_reply_is_a_violation_on_its_third_time_in_a_row_not_its_second():
    # same_reply_run is 3: the current reply plus the two before it.
    assert _violations(_owner("Fine."), set(), earlier=["Sure.", "Fine."]) == ()
    assert _violations(_owner("Fine."), set(), earlier=["Fine.", "Fine."]) == ("the same reply 3 times in a row",)
    # Only the last two earlier replies count: a different one before them does not break the run.
    assert _violations(_owner("Fine."), set(), earlier=["Sure.", "Fine.", "Fine."]) == ("the same reply 3 times in a row",)


def test_the_reading_memo_is_keyed_on_the_caller_line_too():
    # The same reply copies one caller line and not another: a memo keyed on the reply alone would
    # answer the second question with the first one's reading.
    rules = load_health_rules(load_campaign(), load_behaviors())
    copied = "Our platform gives restaurants free advertising credit today"
    assert _violations(_owner(copied), set(), caller_line=copied + ".", rules=rules) == ("copies the caller's last line",)
    assert _violations(_owner(copied), set(), caller_line="Hello, am I speaking with the owner?", rules=rules) == ()


def test_a_caller_turn_in_plain_text_is_out_of_format_even_with_an_estimate():
    rules = load_health_rules(load_campaign(), load_behaviors())
    plain = AgentMove(utterance="Hello.", estimate=UserState(2, 2, 2), stage=None, status=None, format="plain")
    tagged = AgentMove(utterance="Hello.", estimate=UserState(2, 2, 2), stage=None, status=None, format="tags")
    assert agent_turn_health(plain, rules).format_ok is False
    assert agent_turn_health(tagged, rules).format_ok is True


# -- acts: the recogniser's "crammed" rule counts real words only ---------------------------------------------


def test_a_made_up_word_adds_nothing_to_a_two_act_sentences_word_count():
    # cost + rules are two units: a sentence needs 2 * MIN_WORDS_PER_ACT = 8 real words for them.
    assert analyze("There are no fees and it is pay-per-click.").acts == {"cost", "rules"}  # 8 real words
    crammed = analyze("No fees and it is pay-per-click, blorvish.")  # 7 words, one made up: 6 real
    assert crammed.confusing == ("crammed",) and crammed.acts == {"off_script"}


def test_sixty_words_is_still_a_turn_and_sixty_one_a_monologue():
    # MAX_WORDS_PER_TURN = 60: "more words than this" is a monologue. Four understood sentences of
    # 17 + 17 + 17 + 9 words, then the last one a word longer.
    opener = "I would like to tell you a little about what we do for places like yours today."
    sixty = analyze(" ".join([opener] * 3 + ["We help places like yours on every single day."]))
    sixty_one = analyze(" ".join([opener] * 3 + ["We help places like yours on every single day, honestly."]))
    assert (sixty.words, sixty.understood, sixty.monologue) == (60, 4, False)
    assert (sixty_one.words, sixty_one.monologue) == (61, True)


# -- audit: the text policies' lines by turn -------------------------------------------------------------------


def _heard(line):
    return {"messages": [{"role": "assistant", "content": "Hi."}, {"role": "user", "content": line}]}


def test_the_blind_scripts_open_with_the_opener_and_then_read_their_lines_in_order():
    rng, empty = random.Random(0), {"messages": []}
    opener = sead_audit.VOCABULARY.opener
    assert [sead_audit._monologue(empty, turn, rng) for turn in (1, 2, 3)] == [opener, sead_audit.MONOLOGUE, sead_audit.MONOLOGUE]
    steps = sead_audit.STEPS_SCRIPT
    assert [sead_audit._step_loop(empty, turn, rng) for turn in range(1, 7)] == [opener, steps[0], steps[1], steps[2], steps[0], steps[1]]
    script = sead_audit.SCRIPT
    assert [sead_audit._script(empty, turn, rng) for turn in (1, 2, 6, 7, 20)] == [script[0], script[1], script[5], script[5], script[5]]
    twice = sead_audit.SCRIPT_TWICE
    assert [sead_audit._script_twice(empty, turn, rng) for turn in (1, 2, 11, 12)] == [twice[0], twice[1], twice[10], twice[10]]


def test_the_cue_template_opens_with_the_opener_then_slots_two_different_cues_into_the_turns_carrier():
    rng, empty = random.Random(0), {"messages": []}
    assert sead_audit._cue_template(empty, 1, rng) == sead_audit.VOCABULARY.opener
    line = sead_audit._cue_template(empty, 2, rng)
    cues = sead_audit.TEMPLATE_CUES
    # Turn 2 uses CARRIERS[2 % 4], "We are calling because of {a} and {b}."
    assert any(line == f"We are calling because of {a} and {b}." for a in cues for b in cues if a != b)


def test_the_cue_salad_answers_at_most_two_concerns_and_drops_the_step_after_them():
    # IV1's line resolves by ai_disclosure (first of its acts, sorted), CC1's by cost; "What's next?" would
    # add the first step's cue third, but the salad keeps two cues.
    heard = "Wait, are you a real person or a robot? Are there any hidden fees I should know about? What's next?"
    said = sead_audit.ResolvingCueSalad()(_heard(heard), 3, random.Random(5))
    rng = random.Random(5)
    padding = [*rng.sample(sead_audit.VOCABULARY.cue_words, 2), generic_audit.made_up_word(rng), generic_audit.made_up_word(rng)]
    assert said == " ".join(["ai assistant", "no fees", *padding])


def test_the_saved_audit_results_were_made_with_the_audits_fair_order_and_gap():
    # docs/results/audits/SEAD-Outbound-v0.json renders the docs' audit table: its fair order and the
    # "sop < adaptive" bound must be the ones the audit declares, or the docs describe another audit.
    saved = json.loads((Path(__file__).resolve().parents[3] / "docs/results/audits/SEAD-Outbound-v0.json").read_text())["audits"][0]
    (declared,) = sead_audit.audits()
    assert tuple(saved["fair_order"]) == declared.fair_order == ("random", "sop", "adaptive", "oracle")
    bounds = {row["name"]: row["bound"] for row in saved["rows"] if row["kind"] == "fair order"}
    assert bounds["sop < adaptive"] == declared.min_gaps[("sop", "adaptive")]


# -- the SOP agent: after the script it repeats the walkthrough, not the opening -----------------------------


def test_the_sop_agent_reads_its_script_then_loops_over_the_walkthrough_part():
    agent = SopAgent()
    said = [parse_agent_output(agent.act({"turn": turn, "messages": []}, {}, agent.start({}, 0))).utterance for turn in range(20)]
    # 11 script lines (turns 0-10), then lines 4-10 again (7 lines) from turn 11 on.
    assert said[:11] == list(SOP_SCRIPT)
    assert said[11:18] == list(SOP_SCRIPT[4:]) and said[18:20] == list(SOP_SCRIPT[4:6])


# -- the informed agent (SEAD's fair ceiling): the state the owner's words voice, and help it remembers -------


@pytest.mark.parametrize(
    ("estimate", "said", "expected"),
    [
        ([2, 1, 2], "Okay.", (2, 2, 2)),  # nothing voiced: irritation has passed, emotion back to at least 2
        ([2, 3, 2], "Okay.", (2, 3, 2)),
        ([2, 2, 2], "Ugh. Fine.", (2, 1, 2)),
        ([1, 2, 3], "What do I need to do?", (3, 2, 3)),  # readiness: cooperation to 3, trust at least 2
        ([3, 2, 4], "I'm not sure I believe that.", (3, 2, 2)),  # doubt: trust at most 2
        ([4, 2, 3], "Why would I need this?", (2, 2, 3)),  # coldness: cooperation at most 2
    ],
)
def test_voiced_state_moves_the_estimate_to_what_the_owner_voices(estimate, said, expected):
    assert voiced_state(estimate, said) == expected and estimate == list(expected)


def test_the_informed_agent_keeps_helping_with_the_app_once_the_owner_said_it_struggles():
    agent = InformedAgent(load_behaviors())
    memory = agent.start({}, 0)
    messages = []
    said = []
    for turn, line in enumerate([None, "I'm not good with these apps.", "What do I need to do?"]):
        if line is not None:
            messages.append({"role": "user", "content": line})
        text = agent.act({"turn": turn, "messages": list(messages)}, {}, memory)
        said.append(parse_agent_output(text).utterance)
        messages.append({"role": "assistant", "content": text})
    # Turn 1 answers the operational concern (simplify, its first phrasing); turn 2, ready, gets the least
    # used simplify phrasing before the first step, because the owner said it struggles with apps.
    assert said[1] == PHRASES["simplify"][0]
    assert said[2] == PHRASES["simplify"][1] + " " + PHRASES["guide"][0]


def test_a_step_given_twice_in_one_turn_counts_once_in_order_of_first_mention():
    assert analyze("Please open your merchant back-office app. Then open the app again, please.").steps == ("open_app",)
    twice = analyze("Please open your merchant back-office app and tap get more exposure. Then open the app again.")
    assert twice.steps == ("open_app", "tap_entry")


def test_a_step_inside_an_offer_is_a_readiness_question_not_an_instruction():
    offer = analyze("Would you like to claim it now?")
    assert offer.acts == {"ask_readiness"} and offer.steps == ()


# -- prompts and data ---------------------------------------------------------------------------------------


def test_caller_words_undo_caller_turn_and_leave_a_message_without_a_note_as_it_is():
    assert caller_words(caller_turn("Hi, is this the owner?", UserState(2, 1, 3))) == "Hi, is this the owner?"
    assert caller_words("Hi, is this the owner?") == "Hi, is this the owner?"


def test_a_behaviors_index_is_its_position_in_the_library_file():
    library = load_behaviors()
    data = json.loads((DATA_DIR / "behaviors.json").read_text())
    assert [library.index(entry["id"]) for entry in data["behaviors"]] == list(range(len(data["behaviors"])))
    assert library.index("IV1") == 0 and library["CC1"].resolved_by == {"cost"}


def test_the_cue_salad_gives_the_third_step_once_the_owner_confirmed_two():
    # "app is open" and "tapped": two steps done, so the claim step's cue leads the salad.
    said = sead_audit.ResolvingCueSalad()(_heard("The app is open and I tapped it. What is next?"), 4, random.Random(0))
    assert said.startswith(sead_audit.STEP_CUES[2] + " ")


def test_the_shared_behaviors_and_campaign_cannot_be_changed_in_place():
    # load_behaviors and load_campaign are memoised: every game shares one object, so none may alter it.
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        load_behaviors()["IV1"].category = "Cost_Concerns"
    with pytest.raises(dataclasses.FrozenInstanceError):
        load_campaign().agent_name = "Bob"
