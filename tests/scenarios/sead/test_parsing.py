import dataclasses
import json
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dialogue_gym.scenarios.common import MAX_ACTION_CHARS, scan_tags
from dialogue_gym.scenarios.sead import parsing
from dialogue_gym.scenarios.sead.parsing import (
    UserMove,
    _parse_user_output,
    _user_spans,
    parse_agent_output,
    parse_user_output,
    render_agent_output,
    render_user_output,
)
from dialogue_gym.scenarios.sead.state import UserState


def test_tagged_agent_output_with_estimate():
    move = parse_agent_output(render_agent_output("Hello there.", (3, 2, 4)) + "<stage>1</stage>")
    assert move.utterance == "Hello there."
    assert move.estimate == UserState(3, 2, 4)
    assert move.stage == 1 and move.format == "tags" and move.problem is None


def test_json_agent_output():
    text = json.dumps({"response": "Hi!", "cooperation_score": 1, "emotion_score": "2", "trust_score": 0})
    move = parse_agent_output(text)
    assert (move.utterance, move.estimate, move.format, move.problem) == ("Hi!", (1, 2, 0), "json", None)


def test_plain_text_has_no_estimate_and_is_valid():
    move = parse_agent_output("  Hello,   is this the owner? ")
    assert move.utterance == "Hello, is this the owner?"
    assert move.estimate is None and move.format == "plain" and move.problem is None


def test_out_of_range_estimate_is_flagged_and_dropped():
    move = parse_agent_output(render_agent_output("Hi", (7, 2, 4)))
    assert move.estimate is None
    assert "cooperation 7 outside 0..4" in move.problem


def test_incomplete_estimate_is_flagged():
    move = parse_agent_output("<response>Hi</response><cooperation_score>2</cooperation_score>")
    assert move.estimate is None and "missing emotion_score, trust_score" in move.problem


def test_empty_and_malformed_outputs_are_flagged():
    assert parse_agent_output("").problem == "empty utterance"
    assert "malformed JSON" in parse_agent_output("{not json").problem
    assert "no string 'response'" in parse_agent_output('{"reply": "x"}').problem
    unclosed = parse_agent_output("<response>Hello there")
    assert unclosed.utterance == "Hello there" and "unclosed <response> tag" in unclosed.problem
    tags_only = parse_agent_output("<cooperation_score>2</cooperation_score>")
    assert "without a <response> tag" in tags_only.problem


def test_overlong_utterance_is_truncated_and_flagged():
    move = parse_agent_output("word " * 100, max_chars=50)
    assert len(move.utterance) == 50 and "exceeds max_utterance_chars=50" in move.problem


def test_user_output_round_trip():
    move = parse_user_output(render_user_output("Fine.", (3, 1, 5), 1, "thinking"), UserState(0, 0, 0))
    assert (move.reply, move.state, move.status, move.think, move.problem) == ("Fine.", (3, 1, 5), 1, "thinking", None)


def test_user_output_is_clamped_and_repaired():
    move = parse_user_output("<reply>ok</reply><cooperation>9</cooperation><emotion>-2</emotion>", UserState(1, 2, 3))
    assert move.state == (4, 0, 3)
    assert "trust missing" in move.problem and "clamped" in move.problem
    plain = parse_user_output("just words", UserState(1, 2, 3))
    assert plain.reply == "just words" and plain.state == (1, 2, 3) and "no <reply> tag" in plain.problem
    bad_status = parse_user_output(render_user_output("x", (1, 1, 1), 0).replace("<status>0", "<status>7"), UserState(1, 1, 1))
    assert bad_status.status == 0 and "status '7'" in bad_status.problem


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_agent_parser_never_crashes_and_flags_what_it_cannot_use(text):
    move = parse_agent_output(text)
    assert isinstance(move.utterance, str)
    if not move.utterance:
        assert move.problem is not None
    if move.estimate is not None:
        assert not move.estimate.out_of_range()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["<response>", "</response>", "<cooperation_score>", "</cooperation_score>", "{", "}", '"response":', "9", "-1", "hi", " "]),
        max_size=20,
    )
)
def test_agent_parser_on_tag_soup(pieces):
    move = parse_agent_output("".join(pieces))
    assert move.problem is not None or move.utterance


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 5)))
def test_user_parser_always_returns_a_state_in_range(text, previous):
    move = parse_user_output(text, UserState(*previous))
    assert not move.state.out_of_range() and move.status in (-1, 0, 1)


def general(text, previous=UserState(1, 1, 1)):
    """What the general parser gives for ``text``, without the canonical-record fast path."""
    with mock.patch.object(parsing, "_canonical_user", lambda spans: None):
        return _parse_user_output.__wrapped__(text, previous)


_CLOSERS = ("</think>", "</reply>", "</cooperation>", "</emotion>", "</trust>")


@settings(max_examples=400, deadline=None)
@given(
    st.text(max_size=40),
    st.text(max_size=60),
    st.tuples(st.integers(-1, 9), st.integers(-1, 9), st.integers(-1, 9)),
    st.integers(-2, 2),
    st.sampled_from(["", " ", "x", "<a>", "\n"]),
    st.sampled_from(["", " ", "x", "</status>", "\n"]),
    st.sampled_from(["", " ", "y"]),
    st.sampled_from(_CLOSERS),
)
@example("t", " ", (2, 1, 3), 0, "", "", "", "</think>")  # a blank reply
@example(" t ", " Sure,  go. ", (2, 1, 3), 1, "x", "x", "y", "</reply>")  # padding, text around and between
def test_the_canonical_fast_path_gives_the_general_parsers_move_on_any_record(think, reply, state, status, before, after, gap, where):
    """Records with text before, after or between their tags, padded or empty fields, out-of-range
    values: the fast path either declines or returns exactly the general parser's move."""
    text = before + render_user_output(reply, state, status, think).replace(where, where + gap, 1) + after
    for previous in (UserState(0, 0, 0), UserState(4, 3, 5)):
        assert _parse_user_output.__wrapped__(text, previous) == general(text, previous)


def test_the_fast_path_takes_a_plain_record_and_one_with_text_around_and_between_its_tags():
    text = render_user_output("Sure.", (2, 1, 3), 0, "t")
    for variant in (text, f" x{text}\n", text.replace("</reply>", "</reply> y")):
        assert parsing._canonical_user(_user_spans(variant)) == UserMove("Sure.", UserState(2, 1, 3), 0, "t")


_USER_PIECES = ["<think>", "</think>", "<reply>", "</reply>", "<cooperation>", "</cooperation>", "<emotion>", "</emotion>",
                "<trust>", "</trust>", "<status>", "</status>", "<", ">", "a", " ", "3", "-1", "Okay."]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_USER_PIECES), max_size=30).map("".join))
def test_user_record_layout_shortcut_finds_the_tags_scan_tags_finds(text):
    assert _user_spans(text) == scan_tags(text)


def test_user_record_layout_shortcut_on_the_scripted_users_record():
    text = render_user_output("Sure, go on.", (2, 1, 3), 0, "open concerns: []")
    assert _user_spans(text) == scan_tags(text)
    assert [span.name for span in _user_spans(text)] == ["think", "reply", "cooperation", "emotion", "trust", "status"]


def scanned(text, previous=UserState(1, 1, 1)):
    """What parsing ``text`` gives without the rendered-record shortcut or the memo."""
    parsing._RENDERED_MOVES.pop(text, None)
    return _parse_user_output.__wrapped__(text, previous)


@settings(max_examples=400, deadline=None)
@given(
    st.text(max_size=40),
    st.text(max_size=60),
    st.tuples(*[st.one_of(st.integers(-2, 9), st.booleans()) for _ in range(3)]),
    st.one_of(st.integers(-3, 3), st.booleans()),
)
def test_a_rendered_record_reads_back_as_its_scan_reads_it(think, reply, state, status):
    """render_user_output keeps the move of each record it writes so the game need not scan it again:
    whatever the fields (tags, blank or padded replies, out-of-range or bool values), the move read back
    is the move a scan gives, from any previous state."""
    text = render_user_output(reply, state, status, think)
    kept = parsing._RENDERED_MOVES.get(text)
    for previous in (UserState(0, 0, 0), UserState(4, 3, 5)):
        assert parse_user_output(text, previous) == scanned(text, previous) if kept is None else kept == scanned(text, previous)


def test_a_canonical_record_is_kept_and_a_non_canonical_one_is_scanned():
    text = render_user_output("Sure,   go on.", (2, 1, 3), 0, " open concerns: [] ")
    kept = parsing._RENDERED_MOVES[text]
    assert kept == scanned(text) and kept.reply == "Sure, go on." and kept.think == "open concerns: []"
    for fields in [
        ("Sure <b>now</b>", (2, 1, 3), 0, ""),  # a tag character in the reply
        ("Sure", (2, 1, 3), 0, "a<b"),  # ... or in the think
        (" Sure", (2, 1, 3), 0, ""),  # a padded reply
        ("", (2, 1, 3), 0, ""),  # an empty one
        ("Sure", (5, 1, 3), 0, ""),  # cooperation out of range
        ("Sure", (2, 1, 3), 2, ""),  # an unknown status
        ("Sure", (True, 1, 3), 0, ""),  # a bool is no state value
        ("Sure", (2, 1, 3), True, ""),  # ... nor a status
        ("x" * MAX_ACTION_CHARS, (2, 1, 3), 0, ""),  # a record longer than a parser reads
    ]:
        assert render_user_output(*fields) not in parsing._RENDERED_MOVES, fields


def test_every_record_the_scripted_user_writes_reads_back_as_scanned():
    from dialogue_gym.evaluation import evaluate

    for trajectory in evaluate("SEAD-Outbound-v0", "adaptive", 240, seed=3):
        previous = UserState(*trajectory.profile["state"])
        for turn in trajectory.turns:
            if turn.role == "user":
                assert parse_user_output(turn.raw, previous) == scanned(turn.raw, previous)
                previous = turn.state


def test_the_kept_records_are_bounded(monkeypatch):
    monkeypatch.setattr(parsing, "_MAX_RENDERED_MOVES", 3)
    monkeypatch.setattr(parsing, "_RENDERED_MOVES", {})
    texts = [render_user_output(f"Reply {n}.", (2, 1, 3), 0) for n in range(7)]
    assert len(parsing._RENDERED_MOVES) <= 3 and texts[-1] in parsing._RENDERED_MOVES
    assert parse_user_output(texts[0], UserState(1, 1, 1)) == scanned(texts[0])


def test_moves_are_frozen_because_the_parsers_share_them_from_their_memo():
    agent = parse_agent_output("<response>Hello</response>")
    user = parse_user_output(render_user_output("Sure.", (2, 1, 3), 0), UserState(1, 1, 1))
    for move, field in ((agent, "utterance"), (user, "reply")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(move, field, "changed")


def test_an_unclosed_response_reads_everything_after_its_first_opening():
    """Two openings, no closing: the utterance is the text after the first, tags blanked to spaces."""
    move = parse_agent_output("<response>Hello<response>there")
    assert move.utterance == "Hello there" and move.format == "tags" and move.problem == "unclosed <response> tag"


def test_an_utterance_of_2000_characters_is_kept_whole_and_one_more_is_cut():
    assert parse_agent_output("a" * 2000).problem is None
    move = parse_agent_output("a" * 2001)
    assert move.utterance == "a" * 2000 and move.problem == "utterance of 2001 characters exceeds max_utterance_chars=2000; truncated"


def test_a_non_integer_estimate_names_only_the_fields_that_are_not_integers():
    text = "<response>Hi</response><cooperation_score>x</cooperation_score><emotion_score>1</emotion_score><trust_score>y</trust_score>"
    move = parse_agent_output(text)
    assert move.estimate is None and move.problem == "state estimate is not integer: {'cooperation_score': 'x', 'trust_score': 'y'}"


def test_a_missing_status_reads_as_continue_without_a_problem_and_is_listed_as_missing():
    move = parse_user_output("<think>t</think><reply>Fine.</reply><cooperation>2</cooperation><emotion>1</emotion><trust>3</trust>", UserState(1, 1, 1))
    assert (move.status, move.problem, move.missing, move.state) == (0, None, ("status",), UserState(2, 1, 3))


def test_records_at_the_length_limit_and_with_zero_states_are_kept():
    longest = render_user_output("x" * (MAX_ACTION_CHARS - len(render_user_output("", (0, 0, 0), 0))), (0, 0, 0), 0)
    assert len(longest) == MAX_ACTION_CHARS and longest in parsing._RENDERED_MOVES


def test_the_kept_records_start_afresh_when_full(monkeypatch):
    monkeypatch.setattr(parsing, "_MAX_RENDERED_MOVES", 3)
    monkeypatch.setattr(parsing, "_RENDERED_MOVES", {})
    sizes = []
    for n in range(7):
        render_user_output(f"Reply {n}.", (2, 1, 3), 0)
        sizes.append(len(parsing._RENDERED_MOVES))
    assert sizes == [1, 2, 3, 1, 2, 3, 1]
