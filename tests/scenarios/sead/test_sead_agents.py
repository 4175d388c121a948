"""The scripted agents' reading of the owner's words."""

import pytest

from dialogue_gym.scenarios.sead.agents import track_estimate


@pytest.mark.parametrize(
    "said",
    [
        "My regulars are enough, honestly.",
        "I thought it through, though.",
        "Unpushed, I guess.",
        "I seem to have no time today.",
    ],
)
def test_cue_words_inside_other_words_move_nothing(said):
    assert track_estimate([2, 2, 2], said) == (2, 2, 2)


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("Ugh, again?", (2, 1, 2)),
        ("Look, I already said no.", (2, 1, 2)),
        ("You're being pushy.", (2, 1, 2)),
        ("What's the catch?", (2, 2, 1)),
        ("I'm not really interested.", (1, 2, 2)),
        ("I see, fair enough.", (2, 2, 3)),
        ("OK, what do I need to do?", (3, 3, 2)),
    ],
)
def test_each_cue_moves_its_own_coordinate(said, expected):
    assert track_estimate([2, 2, 2], said) == expected


def test_the_estimate_is_clamped_to_the_state_ranges():
    assert track_estimate([0, 0, 0], "Ugh. Is this a scam? Not interested.") == (0, 0, 0)
    assert track_estimate([4, 3, 5], "Fair enough. What's next?") == (4, 3, 5)
