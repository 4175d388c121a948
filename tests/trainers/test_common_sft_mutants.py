"""Where each assistant turn lies in a chat's tokens (trainers/common/sft.py ``turn_spans``, issue 43
item 6), worked by hand with a word-level stand-in tokenizer: the span is the turn's content and its
end-of-turn token, nothing the template adds after it; a template that rewrites earlier turns is refused."""

from __future__ import annotations

import pytest

from dialogue_gym.errors import ConfigError
from trainers.common.sft import turn_spans


class WordTokenizer:
    """One token per whitespace-separated word; ``<e>`` (id 1) ends a turn."""

    eos_token_id = 1
    pad_token_id = 0

    def __init__(self, numbered: bool = False, end: str = "<e>"):
        self.vocabulary = {"<pad>": 0, "<e>": 1}
        self.numbered, self.end = numbered, end

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        # numbered: the template writes the message count first, so a prefix renders differently
        head = f"<n{len(messages)}> " if self.numbered else ""
        body = "".join(f"<{m['role']}> {m['content']} {self.end} " for m in messages)
        return head + body + ("<assistant> " if add_generation_prompt else "")

    def __call__(self, text, add_special_tokens):
        return {"input_ids": [self.vocabulary.setdefault(word, len(self.vocabulary)) for word in text.split()]}

    def decode(self, ids):
        words = {i: w for w, i in self.vocabulary.items()}
        return " ".join(words[i] for i in ids)


CHAT = [
    {"role": "system", "content": "s"}, {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a b"},
    {"role": "user", "content": "u2"}, {"role": "assistant", "content": "c"},
]


def test_each_assistant_span_is_its_words_and_its_end_of_turn_token():
    tokenizer = WordTokenizer()
    whole, spans = turn_spans(tokenizer, CHAT)
    # <system> s <e> <user> u1 <e> <assistant> | a b <e> | <user> u2 <e> <assistant> | c <e>
    assert len(whole) == 16 and spans == [(7, 10), (14, 16)]
    words = {i: w for w, i in tokenizer.vocabulary.items()}
    assert [[words[i] for i in whole[s:e]] for s, e in spans] == [["a", "b", "<e>"], ["c", "<e>"]]


def test_without_an_end_of_turn_token_the_span_runs_to_the_end_of_the_turns_rendering():
    _, spans = turn_spans(WordTokenizer(end="<x>"), CHAT)
    assert spans == [(7, 10), (14, 16)]  # up to the end of what the turn rendered (its "<x>" included)


def test_a_template_that_rewrites_earlier_turns_is_refused():
    with pytest.raises(ConfigError, match=r"renders a prefix of this chat differently from the whole chat \(at its assistant turn 0\)"):
        turn_spans(WordTokenizer(numbered=True), CHAT)


class Teacher:
    """A stand-in model whose next-token argmax is always the teacher's next token."""

    device = "cpu"

    def eval(self):
        return self

    def __call__(self, input_ids, attention_mask):
        from types import SimpleNamespace

        import torch

        logits = torch.zeros((*input_ids.shape, 1 + int(input_ids.max())))
        for row in range(input_ids.shape[0]):
            for position in range(input_ids.shape[1] - 1):
                logits[row, position, int(input_ids[row, position + 1])] = 1.0
        return SimpleNamespace(logits=logits)


def test_one_turn_longer_than_the_budget_is_the_whole_too_long_share():
    pytest.importorskip("torch")
    from trainers.common.sft import teacher_forced_agreement

    chat = CHAT[:3]  # one assistant turn: "a b <e>", 3 tokens
    short = teacher_forced_agreement(Teacher(), WordTokenizer(), [chat], max_new_tokens=2, utterance_end="b")
    assert (short["agreement"], short["too_long"], short["turns"], short["turns_per_turn"]) == (0.0, 1.0, 1, [1])
    # what was said ends at "b", the turn's 2nd token: within the budget of 2, so it agrees though the turn does not fit
    assert (short["utterance_agreement"], short["utterance_agreement_per_turn"]) == (1.0, [1.0])
    fits = teacher_forced_agreement(Teacher(), WordTokenizer(), [chat], max_new_tokens=3)
    assert (fits["agreement"], fits["too_long"], fits["agreement_per_turn"]) == (1.0, 0.0, [1.0])
    # two turns, "a b <e>" (3 tokens) and "c <e>" (2): with a budget of 2 only the first is too long
    both = teacher_forced_agreement(Teacher(), WordTokenizer(), [CHAT], max_new_tokens=2, utterance_end="<e>")
    assert (both["agreement"], both["too_long"], both["agreement_per_turn"], both["turns"]) == (0.5, 0.5, [0.0, 1.0], 2)
    assert both["utterance_agreement"] == 0.5  # the first turn's words end at its 3rd token, past the budget
