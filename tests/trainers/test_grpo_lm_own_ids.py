"""Issue 41, item 6: in a dialogue, the causal-LM policy sees its earlier turns as the ids it sampled.

The tiny model's byte-level tokenizer does not round-trip sampled ids (a random model emits byte pieces
that re-encode as merges), so a prompt rendered from the decoded text would hold other ids than the ones
sampled and trained on.
"""

import pytest

torch = pytest.importorskip("torch")

from trainers.grpo.lm import CausalLMPolicy, GRPOConfig, pack_turns, TurnSample  # noqa: E402

SYSTEM = {"role": "system", "content": "You are the agent."}
REPLIES = ["Hello? Who is this?", "Why would I need that?", "Fine, tell me more.", "Goodbye."]


def play(policy, seeds, rewrite=lambda text: text, turns=len(REPLIES)):
    """Dialogues in lockstep in which the counterpart answers each policy turn with the next reply; the
    chat the policy sees holds its turn as ``rewrite`` of what it said (the identity: as a game echoes it)."""
    memories = [policy.start({}, seed) for seed in seeds]
    chats = [[SYSTEM, {"role": "user", "content": REPLIES[0]}] for _ in seeds]
    for turn in range(turns):
        texts = policy.act_batch([{"messages": list(chat), "turn": turn} for chat in chats], [{}] * len(seeds), memories)
        for chat, text in zip(chats, texts):
            chat += [{"role": "assistant", "content": rewrite(text)}, {"role": "user", "content": REPLIES[(turn + 1) % len(REPLIES)]}]
    return memories, chats


def as_text(tokenizer, turns):
    """The last turn's prompt read back as the game shows it: each earlier turn's sampled ids as the text
    it said (special tokens it sampled mid-turn are not said) and its closing eos, everything between
    them as it decodes."""
    ids, text, position = turns[-1]["prompt_ids"], "", 0
    for turn in turns[:-1]:
        start, completion = len(turn["prompt_ids"]), turn["completion_ids"]
        said = completion[:-1] if completion[-1:] == [tokenizer.eos_token_id] else completion
        text += tokenizer.decode(ids[position:start]) + tokenizer.decode(said, skip_special_tokens=True) + tokenizer.decode(completion[len(said):])
        position = start + len(completion)
    return text + tokenizer.decode(ids[position:])


def rendered(policy, chat):
    return policy.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)


@pytest.fixture(scope="module")
def policy(tiny_model_dir):
    policy = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(max_new_tokens=10, temperature=1.0, kl_coef=0.0))
    # Raise the end-of-turn logit, so that some turns end with a sampled eos and others run out of tokens.
    eos = policy.tokenizer.eos_token_id
    policy.model.lm_head.register_forward_hook(lambda module, args, logits: logits.index_add(-1, torch.tensor([eos]), torch.full((*logits.shape[:-1], 1), 4.0)))
    return policy


def test_later_turns_are_prompted_with_the_sampled_ids_even_where_the_text_re_encodes_to_others(policy):
    memories, chats = play(policy, range(6))
    tokenizer = policy.tokenizer
    completions = [turn["completion_ids"] for memory in memories for turn in memory["turns"]]
    re_encoded = [tokenizer(tokenizer.decode(ids, skip_special_tokens=True), add_special_tokens=False)["input_ids"] for ids in completions]
    # Not a vacuous check: on this tokenizer most sampled turns re-encode to other ids.
    assert sum(ids[: len(again)] != again for ids, again in zip(completions, re_encoded)) > len(completions) // 2
    ended = [ids[-1] == tokenizer.eos_token_id for ids in completions]
    assert any(ended) and not all(ended)
    for memory, chat in zip(memories, chats):
        turns = memory["turns"]
        assert [turn["own_ids"] for turn in turns] == [False] + [True] * (len(turns) - 1)
        for before, after in zip(turns, turns[1:]):
            context = before["prompt_ids"] + before["completion_ids"]
            assert after["prompt_ids"][: len(context)] == context
        # ...and, read back as text, the prompt is the chat the game shows: the template's end of each
        # turn once (not again after a sampled eos), the replies, the opening of the next turn.
        assert as_text(tokenizer, turns) == rendered(policy, chat[:-2])
        assert turns[-1]["prompt_ids"].count(tokenizer.eos_token_id) == rendered(policy, chat[:-2]).count(tokenizer.eos_token)


def test_the_trained_ids_are_the_sampled_ids_in_the_context_they_were_sampled_in(policy):
    # update() trains each dialogue as one packed sequence, whose learner tokens are exactly the sampled ids.
    [memory], _ = play(policy, [7])
    turns = memory["turns"]
    samples = [TurnSample(t["prompt_ids"], t["completion_ids"], t["logprobs"], [1.0] * len(t["completion_ids"])) for t in turns]
    [packed] = pack_turns(samples)
    assert [packed.ids[start : start + len(t["completion_ids"])] for start, t in zip(packed.starts, turns)] == [t["completion_ids"] for t in turns]
    # What it heard between two turns is the template's text, the counterpart's reply and its next opening.
    end = packed.starts[0] + len(turns[0]["completion_ids"])
    heard = policy.tokenizer.decode(packed.ids[end : packed.starts[1]])
    assert REPLIES[1] in heard and heard.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("rewrite", [lambda text: f"[{text}]", lambda text: f"{text} (cut)"], ids=["wrapped", "appended"])
def test_a_turn_the_game_rewrote_is_rendered_from_the_chat_it_shows(policy, rewrite):
    # A game that shows the policy's turn otherwise than it was said (cut, replaced, annotated): no one
    # sequence holds both, so the prompt is rendered from the chat, as before. An appended note would
    # pass for the template's text after the turn were the turn itself not compared.
    memories, chats = play(policy, range(3), rewrite=rewrite)
    for memory, chat in zip(memories, chats):
        assert [turn["own_ids"] for turn in memory["turns"]] == [False] * len(REPLIES)
        assert policy.tokenizer.decode(memory["turns"][-1]["prompt_ids"]) == rendered(policy, chat[:-2])


def test_greedy_play_from_the_same_start_is_the_same_whatever_the_batch(policy):
    # The ids carried from turn to turn are per memory: dialogues batched together do not mix.
    policy.greedy = True
    try:
        alone = play(policy, [3])[0][0]["turns"]
        together = play(policy, [3, 4, 5])[0][0]["turns"]
    finally:
        policy.greedy = False
    assert [t["completion_ids"] for t in alone] == [t["completion_ids"] for t in together]
    assert [t["prompt_ids"] for t in alone] == [t["prompt_ids"] for t in together]
