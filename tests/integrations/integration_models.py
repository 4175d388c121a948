"""Tiny models for the integration tests: a random one whose tokenizer knows the scenarios' prompts
(so a whole dialogue is a few hundred tokens, not thousands), and a scripted one that always makes
the same tool call, to drive TRL's tool-calling loop through the env."""

import gymnasium as gym

import dialogue_gym  # noqa: F401  (registers the ids)
from envs_registry import REGISTRY


def opening_texts(seeds=range(8)):
    texts = []
    for entry in REGISTRY:
        environment = gym.make(entry.id)
        for seed in seeds:
            observation, _ = environment.reset(seed=seed)
            texts += [message["content"] for message in observation["messages"]]
    return texts


def build_scenario_model(directory):
    from dialogue_gym.backends.tiny import build_tiny_chat_model

    return build_tiny_chat_model(directory, vocab_size=2048, corpus=opening_texts(), max_position_embeddings=4096)


def build_tool_calling_model(source, directory, tool_call: str):
    """A copy of the tiny model that answers every prompt with exactly ``tool_call`` (one added token)
    and then its end-of-turn token, under TRL's copy of the Qwen2.5 chat template (which renders tools).

    Every layer's output projections are zeroed, so the last hidden state is the current token's
    embedding: a bigram model. The tool-call token's embedding points one way and every other
    token's the other, and the LM head maps the first to end-of-turn and the second to the tool call."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = AutoTokenizer.from_pretrained(source)
    tokenizer.chat_template = qwen2_5_chat_template
    tokenizer.add_tokens([tool_call])
    model = AutoModelForCausalLM.from_pretrained(source)
    model.resize_token_embeddings(len(tokenizer))
    call, end = tokenizer.convert_tokens_to_ids(tool_call), tokenizer.eos_token_id
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings, head = model.get_input_embeddings().weight, model.lm_head.weight
        embeddings.zero_()
        embeddings[:, 0] = 1.0
        embeddings[call] = 0.0
        embeddings[call, 1] = 1.0
        head.zero_()
        head[call, 0] = 50.0
        head[end, 1] = 50.0
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
