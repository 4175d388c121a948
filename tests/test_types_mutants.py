"""What the plain data types hand out is the caller's: reading a dict never changes it, and editing
a ``to_dict`` result never changes the turn or trajectory it came from."""

from dialogue_gym.types import Message, Outcome, Trajectory, Turn


def test_turn_from_dict_leaves_the_callers_dict_as_it_was():
    data = {"role": "user", "raw": "hi", "text": "hi", "state": [1, 2, 3]}
    turn = Turn.from_dict(data)
    assert turn.state == (1, 2, 3)
    assert data == {"role": "user", "raw": "hi", "text": "hi", "state": [1, 2, 3]}


def test_a_turns_dict_shares_nothing_mutable_with_the_turn():
    turn = Turn("agent", "raw", "text", parsed={"estimate": 2}, state=(1,), token_ids=[5], logprobs=[-0.5])
    data = turn.to_dict()
    data["parsed"]["estimate"] = 9
    data["token_ids"].append(6)
    data["logprobs"].append(-1.0)
    assert turn.parsed == {"estimate": 2} and turn.token_ids == [5] and turn.logprobs == [-0.5]
    assert data["state"] == [1]


def test_a_trajectorys_dict_shares_no_mapping_with_the_trajectory():
    trajectory = Trajectory(
        "Toy-v0", 3, {"p": 1}, [Turn("agent", "a", "a")], Outcome.SUCCESS,
        rewards={"agent": 1.0}, reward_terms={"agent/success": 1.0}, learner="agent", meta={"run": "x"},
    )
    data = trajectory.to_dict()
    data["rewards"]["agent"] = 5.0
    data["reward_terms"]["agent/success"] = 5.0
    data["meta"]["run"] = "y"
    assert trajectory.rewards == {"agent": 1.0} and trajectory.reward_terms == {"agent/success": 1.0}
    assert trajectory.meta == {"run": "x"}
    assert data["outcome"] == "success" and data["learner"] == "agent"


def test_turns_of_keeps_one_roles_turns_in_order_and_a_message_is_a_chat_dict():
    turns = [Turn("a", "1", "1"), Turn("b", "2", "2"), Turn("a", "3", "3")]
    trajectory = Trajectory("Toy-v0", None, {}, turns)
    assert [turn.raw for turn in trajectory.turns_of("a")] == ["1", "3"]
    assert Message("user", "hello").to_dict() == {"role": "user", "content": "hello"}
