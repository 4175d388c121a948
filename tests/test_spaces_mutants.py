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


def test_text_spaces_are_not_numpy_flattenable():
    # gymnasium's flatten utilities must refuse them rather than try to turn text into an array
    assert Utterance().is_np_flattenable is False and ChatMessages().is_np_flattenable is False


def test_a_sampled_utterance_has_one_to_twelve_words():
    space = Utterance(seed=0)
    lengths = {len(space.sample().split()) for _ in range(2000)}
    assert lengths == set(range(1, 13))


def test_a_sampled_chat_has_one_to_five_messages_of_the_spaces_roles():
    space = ChatMessages(roles=("user", "assistant"), seed=0)
    samples = [space.sample() for _ in range(500)]
    assert {len(sample) for sample in samples} == set(range(1, 6))
    assert {message["role"] for sample in samples for message in sample} == {"user", "assistant"}


def test_the_default_spaces_hold_4096_characters_and_256_messages():
    assert Utterance().contains("x" * 4096) and not Utterance().contains("x" * 4097)
    message = {"role": "user", "content": "hi"}
    assert ChatMessages().contains([message] * 256) and not ChatMessages().contains([message] * 257)
