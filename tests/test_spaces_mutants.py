"""The text spaces: which values they hold (at their length limits), when two are equal, and that a
seed makes their samples repeat."""

from dialogue_gym.spaces import ChatMessages, Utterance


def test_an_utterance_of_exactly_max_length_is_in_the_space_and_one_more_is_not():
    space = Utterance(max_length=5)
    assert space.contains("abcde") and not space.contains("abcdef")
    assert space.contains("") and not space.contains(b"abc")


def test_chat_messages_hold_only_the_spaces_roles_and_at_most_max_messages():
    space = ChatMessages(roles=("user", "assistant"), max_messages=2)
    two = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert space.contains(two) and space.contains(tuple(two))
    assert not space.contains([*two, {"role": "user", "content": "again"}])
    assert not space.contains([{"role": "system", "content": "rules"}])
    assert not space.contains([{"role": "user", "content": 3}])


def test_chat_spaces_are_equal_only_with_the_same_roles_and_size():
    assert ChatMessages(max_messages=4) == ChatMessages(max_messages=4)
    assert ChatMessages(max_messages=4) != ChatMessages(max_messages=5)
    assert ChatMessages(roles=("user",)) != ChatMessages(roles=("assistant",))
    assert Utterance(10) == Utterance(10) and Utterance(10) != Utterance(11)


def test_a_seeded_chat_space_samples_the_same_messages_again():
    first, second = ChatMessages(), ChatMessages()
    first.seed(7)
    second.seed(7)
    samples = [first.sample() for _ in range(5)]
    assert samples == [second.sample() for _ in range(5)]
    first.seed(7)
    assert [first.sample() for _ in range(5)] == samples
    assert all(first.contains(sample) for sample in samples)
