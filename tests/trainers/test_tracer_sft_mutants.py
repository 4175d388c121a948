"""TRACER's supervised data checked against the reference sessions (issue 43 item 6, trainers/tracer/sft.py):
each user turn of a session becomes one row whose completion is that turn in TRACER's output format
(``<think>rationale</think><intent_level>z</intent_level><reply>text</reply>``, said as the assistant of
the simulator's own chat), and only the sessions asked for are replayed."""

from __future__ import annotations

from dialogue_gym.scenarios.tracer.game import TracerGame
from trainers.tracer.policy import IntentPolicy
from trainers.tracer.sft import lm_sessions, strategy_samples


def test_each_row_completes_with_the_reference_user_turn_in_tracer_format():
    game = TracerGame()
    session = game.references["syn-g00-s00"]
    users = [turn for turn in session.turns if turn.role == "user"]
    (rows,) = lm_sessions(game, [session])
    assert len(rows) == len(users) == 3
    for row, turn in zip(rows, users):
        assert row["completion"] == [{
            "role": "assistant",
            "content": f"<think>{turn.rationale}</think><intent_level>{turn.intent_level}</intent_level><reply>{turn.text}</reply>",
        }]
    # the first prompt ends with the assistant's greeting, the session's opening turn
    assert rows[0]["prompt"][-1]["content"] == session.turns[0].text


def test_only_the_sessions_given_are_replayed():
    game = TracerGame()
    chosen = [game.references["syn-g01-s03"], game.references["syn-g00-s00"]]
    rows = lm_sessions(game, chosen)
    assert [len(session) for session in rows] == [sum(t.role == "user" for t in s.turns) for s in chosen]
    assert rows[1][0]["completion"][0]["content"].endswith(f"<reply>{chosen[1].turns[1].text}</reply>")
    x, levels = strategy_samples(IntentPolicy(), game, chosen[1:])
    assert levels.tolist() == [3, 4, 5] and x.shape[0] == 3  # syn-g00-s00's user turns' levels, in turn order
