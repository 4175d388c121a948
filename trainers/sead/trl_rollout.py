"""SEAD dialogues driven through TRL's ``GRPOTrainer`` with a custom ``rollout_func``.

Each completion TRL sees is a whole call: the agent's generated tokens of every turn, with the
user's replies (and the chat template's turn markers) between them. ``env_mask`` is 1 on the
agent's own tokens and 0 on the user's, so TRL's loss covers learner tokens only. Generation is
token-in: each turn's prompt is the previous prompt + the agent's exact generated ids + the
user's tokens, so no turn is re-tokenised. The reward comes back as the ``outcome`` column for
:func:`dialogue_gym.rewards.sead.outcome_reward`.

Each dataset row's prompt names a call (``call_prompt(i)``); all generations of one prompt share
the call's initial profile, so a GRPO group compares dialogues with the same user.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from dialogue_gym.backends import GenerationRequest, SamplingParams
from dialogue_gym.backends.transformers_backend import TransformersBackend
from dialogue_gym.envs.driver import CounterpartDriver
from dialogue_gym.scenarios.sead.game import SeadConfig, SeadGame
from dialogue_gym.scenarios.sead.policies import make_policy
from dialogue_gym.seeding import mix_seed

_CALL = re.compile(r"\[call (\d+)\]")


def call_prompt(index: int) -> list[dict[str, str]]:
    """The dataset prompt of call ``index`` (a key for the rollout; the agent sees the env's own prompt)."""
    return [{"role": "user", "content": f"SEAD outbound call [call {index}]"}]


def _env_tokens(tokenizer, messages: list[dict[str, str]], assistant_text: str, completion_ids: list[int]) -> list[int] | None:
    """Tokens the template puts after the assistant's turn up to the next generation prompt, or None if
    the assistant text cannot be located in the rendered conversation."""
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    end = rendered.rfind(assistant_text)
    if not assistant_text or end < 0:
        return None
    delta = rendered[end + len(assistant_text) :]
    eos = tokenizer.eos_token
    if completion_ids and completion_ids[-1] == tokenizer.eos_token_id and eos and delta.startswith(eos):
        delta = delta[len(eos) :]
    return list(tokenizer(delta, add_special_tokens=False)["input_ids"])


def make_rollout_func(
    *,
    seed: int = 0,
    max_agent_turns: int = 3,
    max_new_tokens: int = 32,
    temperature: float = 1.0,
    profile_for: Callable[[int], dict[str, Any]] | None = None,
):
    """Build ``rollout_func(prompts, trainer)`` for ``GRPOTrainer(..., rollout_func=...)``.

    ``profile_for(call)`` gives a call's initial profile (default: the stratified evaluation
    profiles); pass ``lambda call: controller.sample(1)[0]`` wrapped in a cache to use a curriculum.
    """
    config = SeadConfig(max_agent_turns=max_agent_turns)
    template = SeadGame(config)
    user = make_policy("user", "scripted", template.library)
    driver = CounterpartDriver({"user": user}, learner="agent")
    profiles: dict[int, dict[str, Any]] = {}

    def profile(call: int) -> dict[str, Any]:
        if call not in profiles:
            profiles[call] = profile_for(call) if profile_for else template.evaluation_options(call, seed)["profile"]
        return profiles[call]

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        backend = TransformersBackend(model, tokenizer=tokenizer, device=str(trainer.accelerator.device), temperature=temperature, top_p=1.0, max_new_tokens=max_new_tokens)
        calls = [int(_CALL.search(str(p)).group(1)) for p in prompts]
        generations = getattr(trainer, "num_generations", 1)
        if generations > 1 and len(set(calls)) == len(calls):  # TRL handed each prompt once: expand the groups
            calls = [call for call in calls for _ in range(generations)]
        games = [template.spawn() for _ in calls]
        for k, (game, call) in enumerate(zip(games, calls)):
            game.reset(seed=mix_seed(seed, call, calls[:k].count(call), trainer.state.global_step), options={"profile": profile(call)})
        memories = [driver.start(game) for game in games]
        prompt_ids: list[list[int] | None] = [None] * len(games)
        context: list[list[int]] = [[] for _ in games]
        completion: list[list[int]] = [[] for _ in games]
        env_mask: list[list[int]] = [[] for _ in games]
        logprobs: list[list[float]] = [[] for _ in games]
        drifted = [False] * len(games)
        was_training = model.training
        model.eval()
        while True:
            active = [i for i, g in enumerate(games) if g.current_role == "agent" and not drifted[i]]
            if not active:
                break
            requests = []
            for i in active:
                observation = games[i].observe("agent")
                ids = tuple(context[i]) if prompt_ids[i] is not None else None
                requests.append(GenerationRequest(tuple(observation["messages"]), SamplingParams(seed=mix_seed(seed, i, len(completion[i]))), ids))
            outputs = backend.generate(requests)
            for i, output in zip(active, outputs):
                if prompt_ids[i] is None:
                    prompt_ids[i] = list(output.prompt_token_ids)
                    context[i] = list(output.prompt_token_ids)
                completion[i] += output.token_ids
                env_mask[i] += [1] * len(output.token_ids)
                logprobs[i] += output.logprobs
                context[i] += output.token_ids
                games[i].step(output.text, token_ids=output.token_ids, logprobs=output.logprobs)
            driver.advance([games[i] for i in active], [memories[i] for i in active])
            for i, output in zip(active, outputs):
                if games[i].done:
                    continue
                messages = games[i].observe("agent")["messages"]
                tokens = _env_tokens(tokenizer, messages, messages[-2]["content"], output.token_ids)
                if tokens is None:
                    drifted[i] = True  # the template changed the text: stop this call's sequence here
                    continue
                completion[i] += tokens
                env_mask[i] += [0] * len(tokens)
                logprobs[i] += [0.0] * len(tokens)
                context[i] += tokens
        if was_training:
            model.train()
        outcomes = [g.trajectory().outcome.value if g.done else "truncated" for g in games]
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion,
            "logprobs": logprobs,
            "env_mask": env_mask,
            "outcome": outcomes,
        }

    return rollout_func
