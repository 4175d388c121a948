"""RL-ADA's supervised bootstrap checked against its definition (issue 43 item 6, trainers/rlada/sft.py):
the recorder keeps every (prompt, action) pair the teacher produced, and a supervised step reports the
mean negative log-likelihood, per demonstration token, of the teacher's action plus the end-of-sequence
token given the chat prompt as the policy generates from it (with the generation prompt, one BOS)."""

from __future__ import annotations

import math
import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainers.grpo.lm import CausalLMPolicy, GRPOConfig  # noqa: E402
from trainers.rlada.sft import DemoRecorder, lm_supervised_steps  # noqa: E402

PROMPT = [{"role": "system", "content": "You route bank calls."}, {"role": "user", "content": "My card was stolen."}]
LONGER = [*PROMPT, {"role": "assistant", "content": "Which card?"}, {"role": "user", "content": "The debit card, yesterday evening."}]


class Teacher:
    """Says ``reply <seed>:<turn>`` to each observation: every pair is told apart by its text."""

    def start(self, profile, seed):
        return {"seed": seed, "turn": 0}

    def act_batch(self, observations, infos, memories):
        texts = []
        for memory in memories:
            memory["turn"] += 1
            texts.append(f"reply {memory['seed']}:{memory['turn']}")
        return texts


def test_the_recorder_keeps_each_observation_whole_with_the_teachers_action():
    recorder = DemoRecorder(Teacher())
    memories = [recorder.start({}, 7), recorder.start({}, 8)]
    first = [{"messages": PROMPT}, {"messages": LONGER}]
    assert recorder.act_batch(first, [{}, {}], memories) == ["reply 7:1", "reply 8:1"]
    assert recorder.act_batch([{"messages": LONGER}], [{}], memories[:1]) == ["reply 7:2"]
    assert recorder.record(memories[0]) == {"pairs": [[PROMPT, "reply 7:1"], [LONGER, "reply 7:2"]]}
    assert recorder.record(memories[1]) == {"pairs": [[LONGER, "reply 8:1"]]}


@pytest.fixture()
def policy(tiny_model_dir):
    """The tiny chat model as a policy, its tokenizer adding a BOS of its own (as Llama's does): the chat
    template already renders one, so a prompt tokenized with special tokens would carry two."""
    from tokenizers.processors import TemplateProcessing

    made = CausalLMPolicy(str(tiny_model_dir), GRPOConfig(learning_rate=1e-3, kl_coef=0.0), device="cpu", seed=0)
    tokenizer = made.tokenizer
    tokenizer._tokenizer.post_processor = TemplateProcessing(
        single=f"{tokenizer.bos_token} $A", special_tokens=[(tokenizer.bos_token, tokenizer.bos_token_id)]
    )
    assert tokenizer("x")["input_ids"][0] == tokenizer.bos_token_id  # the BOS the bootstrap must leave out
    return made


def _nll_sum(policy, messages, target):
    """Summed NLL and count of the demonstration's tokens, one unpadded sequence through the model."""
    tokenizer = policy.tokenizer
    prompt = tokenizer.encode(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False), add_special_tokens=False)
    assert prompt.count(tokenizer.bos_token_id) == 1 and tokenizer.decode(prompt).endswith("<|im_start|>assistant\n")
    completion = tokenizer.encode(target, add_special_tokens=False) + [tokenizer.eos_token_id]
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = policy.model(input_ids=ids).logits[0].float()
    predicting = logits[len(prompt) - 1 : ids.shape[1] - 1]
    return float(torch.nn.functional.cross_entropy(predicting, ids[0, len(prompt):], reduction="sum")), len(completion)


def test_a_supervised_step_reports_the_demonstrations_mean_token_nll(policy):
    total, count = _nll_sum(policy, PROMPT, "route to card_block")
    metrics = lm_supervised_steps(policy, [[PROMPT, "route to card_block"]], 1, random.Random(0))
    assert metrics["sft/pairs"] == 1.0
    assert metrics["sft/nll"] == pytest.approx(total / count, rel=1e-5)
    assert not policy.model.training  # back to generation after the steps


def test_a_padded_batch_without_a_pad_token_averages_over_both_demonstrations(policy):
    # no pad token (Llama's): padding uses the EOS id, and padding never counts
    policy.tokenizer.pad_token = None
    assert policy.tokenizer.pad_token_id is None
    pairs = [[PROMPT, "route to card_block"], [LONGER, "ask which card, then route to fraud_escalation now"]]
    seed = next(s for s in range(100) if _draws(random.Random(s)) == [0, 1])  # a batch that draws both pairs
    sums = [_nll_sum(policy, *pair) for pair in pairs]
    metrics = lm_supervised_steps(policy, pairs, 1, random.Random(seed), batch=2)
    assert metrics["sft/pairs"] == 2.0
    assert metrics["sft/nll"] == pytest.approx(sum(s for s, _ in sums) / sum(c for _, c in sums), rel=1e-5)


def test_a_one_token_demonstration_is_its_end_of_sequence_token_alone(policy):
    # an empty action still teaches the model to stop: one token, its NLL not shared with anything
    total, count = _nll_sum(policy, PROMPT, "")
    assert count == 1
    assert lm_supervised_steps(policy, [[PROMPT, ""]], 1, random.Random(0))["sft/nll"] == pytest.approx(total, rel=1e-5)


def _draws(rng):
    return sorted(rng.randrange(2) for _ in range(2))


def test_no_pairs_train_nothing(policy):
    metrics = lm_supervised_steps(policy, [], 5, random.Random(0))
    assert metrics["sft/pairs"] == 0.0 and math.isnan(metrics["sft/nll"])
