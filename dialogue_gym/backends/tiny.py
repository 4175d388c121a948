"""A tiny, randomly initialised chat model built locally in a few seconds.

:func:`build_tiny_chat_model` trains a small byte-level BPE tokenizer on a built-in English corpus,
gives it a ChatML-style chat template, builds a random 2-layer Llama model and saves both with
``save_pretrained`` so that ``AutoTokenizer`` / ``AutoModelForCausalLM`` (and therefore
:class:`~dialogue_gym.backends.transformers_backend.TransformersBackend`) can load the folder.

The model's weights are random: it produces gibberish, but it runs the exact code path of a real
model (chat template, batching, left padding, sampling, log-probabilities, training steps), which
makes it the model of choice for tests and quick smoke runs. Nothing is downloaded.
"""

from __future__ import annotations

import os
import pathlib
from typing import Sequence

from ..errors import ConfigError, DependencyNotInstalled

PAD_TOKEN = "<|pad|>"
BOS_TOKEN = "<|bos|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (PAD_TOKEN, BOS_TOKEN, IM_START, IM_END)

# ChatML-style template; ``<|im_end|>`` ends a turn and is the eos token.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

ISOLATED_PIECES = r"<[^<>\n]{1,40}>|\n"
"""``whole_sentences`` cuts every tag (``<response>``) and newline out as a piece of its own (so a score
between tags is a piece too)..."""
SENTENCE_STARTS = r"(?<=[.?!]) "
"""...and starts a new piece at the space after a sentence's end (the space goes with the next sentence)."""
ID_PREFIX = r"(?<![A-Za-z])[A-Z]{2,5}-(?=[0-9])"
"""With ``whole_sentences``, ``digits`` cuts an id's letter prefix (``ACC-`` of ``ACC-823320``) out as a piece of
its own, so the token just before an id's digits is the same wherever the id appears."""

_CORPUS = """\
system user assistant reply message conversation dialogue turn agent customer caller
<reply> </reply> <think> </think> <estimate> </estimate> <status> </status> <action> </action>
Hello, thank you for calling. How can I help you today?
Hi, I would like to ask about my order. It has not arrived yet.
I am sorry to hear that. Could you tell me your order number, please?
Sure, the order number is 12345. I placed it last week on Monday.
Thank you. Let me check the status of your order for you.
Your package is on the way and should arrive within two days.
That is great, thank you very much for your help and cooperation.
You are welcome. Is there anything else I can help you with?
No, that is all. Have a nice day. Goodbye!
The negotiation requires cooperation and trust between both sides.
Cooperation, defection, agreement, offer, counteroffer, accept, reject, price, deal.
I propose that we split the reward equally: fifty percent for you and fifty for me.
I cannot accept that offer, but I can give you sixty percent if you agree today.
Please follow the standard operating procedure: greet, verify, resolve, and close.
Step one: greet the customer. Step two: verify the identity. Step three: solve the problem.
The customer is angry because the bill is too high and the service was slow.
I understand your frustration. Let me see what I can do to fix this problem.
Can you confirm your name, date of birth, and the address on the account?
My name is Alice, and I live at 42 Main Street in a small town near the river.
The weather today is sunny and warm, with a light breeze in the afternoon.
A quick brown fox jumps over the lazy dog while the cat sleeps on the mat.
The agent should be polite, helpful, honest, and concise in every reply.
If the user asks a question, answer it clearly; if not, ask a helpful question.
Reward, score, success, failure, hangup, timeout, invalid, episode, step, reset.
One two three four five six seven eight nine ten eleven twelve zero 0 1 2 3 4 5 6 7 8 9.
Yes. No. Maybe. Okay. Thanks! Sorry? Please wait a moment while I transfer your call.
"""


def _corpus_lines() -> list[str]:
    lines = [line for line in _CORPUS.splitlines() if line.strip()]
    # Also show the tokenizer the exact shape of rendered chats.
    chat = []
    for i, line in enumerate(lines):
        role = ("system", "user", "assistant")[i % 3]
        chat.append(f"{role}\n{line}")
    return lines + chat


def build_tiny_chat_model(
    directory: str | os.PathLike[str],
    seed: int = 0,
    vocab_size: int = 512,
    *,
    hidden_size: int = 64,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    max_position_embeddings: int = 1024,
    corpus: Sequence[str] = (),
    whole_sentences: bool = False,
    digits: bool = False,
) -> pathlib.Path:
    """Build and save a tiny random Llama chat model plus its tokenizer into ``directory``.

    Args:
        directory: folder to write into (created if missing).
        seed: seeds the model's random initialisation (the tokenizer training is deterministic).
        vocab_size: target size of the byte-level BPE vocabulary (at least 300: 256 byte tokens,
            the special tokens and some merges).
        hidden_size, num_hidden_layers, num_attention_heads, max_position_embeddings: model shape.
        corpus: more text to train the tokenizer on, beside the built-in English lines: a scenario's
            prompts, say, which then take a few times fewer tokens (and tests a few times less time).
        whole_sentences: split the text only at tags, newlines and sentence ends before merging, and
            merge only pieces seen twice: a recurring sentence of ``corpus`` becomes one token, each tag
            and each score between tags its own. A scenario's scripted lines then cost one token each, which lets a
            model trained from scratch on 2 CPU cores learn a dialogue in minutes (any text still
            encodes, byte by byte where it is new).
        digits: every digit a piece of its own, never merged, so a number is the same tokens wherever it
            appears, and an id's letter prefix (``ID_PREFIX``: ``ACC-``, ``CARD-``) a piece of its own too: a
            model that must copy an account id or an amount from its prompt into its reply (RL-ADA's agent)
            copies token for token, and the token before the digits is the same in both places, which is
            what a copying (induction) head keys on. Without it, BPE cuts one number differently in different
            contexts ("ACC-" "8" "23" "3" "20" in a reply, "8" "23" "3" "2" "0." in the prompt), and with
            digits alone the prefix merges into its sentence ("matched account ACC-" in the prompt,
            '"account_id": "ACC-' in the reply).

    Returns:
        The folder as a :class:`pathlib.Path`, loadable with ``from_pretrained``.
    """
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise DependencyNotInstalled("torch", "llm", "build_tiny_chat_model") from exc
    try:
        import transformers
        from tokenizers import (
            Regex,
            Tokenizer,
            decoders,
            models,
            pre_tokenizers,
            processors,
            trainers,
        )
    except ImportError as exc:  # pragma: no cover
        missing = "tokenizers" if "tokenizers" in str(exc) else "transformers"
        raise DependencyNotInstalled(missing, "llm", "build_tiny_chat_model") from exc

    if not isinstance(vocab_size, int) or vocab_size < 300:
        raise ConfigError(
            f"build_tiny_chat_model: vocab_size must be an int >= 300 (256 bytes + specials + merges), "
            f"got {vocab_size!r}; pass e.g. vocab_size=512."
        )
    if hidden_size % num_attention_heads != 0:
        raise ConfigError(
            f"build_tiny_chat_model: hidden_size ({hidden_size}) must be divisible by "
            f"num_attention_heads ({num_attention_heads})."
        )

    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)

    # --- tokenizer ---------------------------------------------------------------------------
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if whole_sentences:
        bpe.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(ISOLATED_PIECES), "isolated"),
            pre_tokenizers.Split(Regex(SENTENCE_STARTS), "merged_with_next"),
            *([pre_tokenizers.Split(Regex(ID_PREFIX), "isolated"), pre_tokenizers.Digits(individual_digits=True)] if digits else []),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    elif digits:
        # ByteLevel's own split already cuts an id's prefix off its sentence ("ACC" "-").
        bpe.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)])
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2 if whole_sentences else 1,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([*_corpus_lines(), *corpus], trainer=trainer)

    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=BOS_TOKEN,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[IM_START],
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=max_position_embeddings,
    )
    tokenizer.chat_template = CHAT_TEMPLATE

    # --- model -------------------------------------------------------------------------------
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_attention_heads,
        max_position_embeddings=max_position_embeddings,
        # A wide init keeps the random logits well separated, so greedy decoding is not decided by
        # float rounding (batched and single-request greedy outputs then agree).
        initializer_range=0.2,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config)
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id

    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
