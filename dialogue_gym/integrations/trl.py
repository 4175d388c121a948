"""Every registered id, in every role, as a TRL ``GRPOTrainer`` task (``pip install 'dialogue_gym[train]'``).

Two interfaces of the installed TRL:

- ``rollout_func`` (:func:`make_rollout_func`, prompts from :func:`rollout_prompts`): each completion
  is one whole dialogue, generated token-in by the trainer's model: the learner's generated ids of
  every turn with what it heard in between (counterpart replies, tool results, and the chat
  template's turn markers). ``env_mask`` is 1 on the learner's own tokens and 0 on every other, the
  ``logprobs`` are those of generation (0.0 on the masked tokens), and the env's reward comes back
  as columns: ``reward`` (the learner's return, for :func:`env_reward`), ``reward_terms``
  (``"<role>/<term>" -> value``, for :func:`reward_term` and the scenarios' own reward functions such
  as :func:`dialogue_gym.rewards.rlada.agent_reward`), ``outcome``, ``env_id`` and ``learner``.
- ``environment_factory`` (:func:`environment_factory`, rows from :func:`environment_dataset`), where
  the installed TRL has it (:func:`supports_environment_factory`): the model talks to the env through
  tool calls. A learner that speaks gets one tool, ``respond(message)``, which says its turn and returns
  what it hears next; RL-ADA's support agent gets the bank's six tools (built from the scenario's
  ``tools.json``), ``speak`` and ``end_call``, each one move of the env, so tool calls are routed,
  validated and judged by the env, never run by TRL as stateless functions. ``get_reward`` is the
  learner's return.

Each dataset row is one start state, and TRL's ``num_generations`` copies of it share it: episode
``i`` starts like evaluation episode ``i`` (:mod:`dialogue_gym.integrations.common`), so pass a
``seed`` other than the one you evaluate with. A dialogue the learner leaves unfinished (out of
``max_completion_length``, or a model that stops calling the env's tools) is finished with the
learner silent and scored by the env's rules (:class:`~dialogue_gym.integrations.common.LearnerEpisodes`).
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Sequence

from dialogue_gym.backends import GenerationRequest, SamplingParams
from dialogue_gym.errors import ConfigError, DependencyNotInstalled, EpisodeStateError
from dialogue_gym.integrations.common import LearnerEpisodes, check_episode, heard_tokens, learner_of
from dialogue_gym.seeding import mix_seed
from dialogue_gym.types import Trajectory

_PROMPT_KEY = re.compile(r"\[dialogue_gym (\S+) episode (\d+) seed (\d+)\]")
ENDED = "(The conversation is over.)"
"""What a tool of :func:`environment_factory` returns once the dialogue has ended."""


def _datasets():
    try:
        import datasets
    except ImportError as exc:
        raise DependencyNotInstalled("datasets", "train", "Building TRL training datasets") from exc
    return datasets


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive int, got {type(value).__name__}: {value!r:.80}.")
    return value


def supports_environment_factory() -> bool:
    """Whether the installed TRL's ``GRPOTrainer`` takes ``environment_factory``."""
    try:
        from trl import GRPOTrainer
    except ImportError as exc:
        raise DependencyNotInstalled("trl", "train", "Training with TRL") from exc
    return "environment_factory" in inspect.signature(GRPOTrainer.__init__).parameters


# -- rollout_func --------------------------------------------------------------------------------
def rollout_prompt(env_id: str, episode: int, seed: int = 0) -> list[dict[str, str]]:
    """The dataset prompt of training episode ``episode``: a key the rollout reads (the model is
    prompted with the env's own chat, never with this)."""
    episode, seed = check_episode(episode, seed)
    return [{"role": "user", "content": f"[dialogue_gym {env_id} episode {episode} seed {seed}]"}]


def rollout_prompts(env_id: str, episodes: int, *, seed: int = 0):
    """A ``datasets.Dataset`` of ``episodes`` prompts (episodes ``0 .. episodes - 1``) for :func:`make_rollout_func`."""
    _check_count(episodes, "episodes")
    learner_of(env_id, None)  # an unknown id fails here, before training starts
    return _datasets().Dataset.from_list([{"prompt": rollout_prompt(env_id, episode, seed)} for episode in range(episodes)])


def _episode_of(prompt: Any, env_id: str) -> tuple[int, int]:
    text = prompt[-1]["content"] if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict) else prompt
    found = _PROMPT_KEY.search(str(text))
    if found is None or found.group(1) != env_id:
        raise ConfigError(
            f"The {env_id} rollout got the prompt {prompt!r:.120}, which names no {env_id} episode; build the "
            f"dataset with rollout_prompts({env_id!r}, n)."
        )
    return int(found.group(2)), int(found.group(3))


def make_rollout_func(
    env_id: str,
    *,
    learner: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    max_turn_tokens: int = 64,
    temperature: float | None = None,
    top_p: float | None = None,
    on_trajectory: Callable[[Trajectory], None] | None = None,
) -> Callable[[list[Any], Any], dict[str, list]]:
    """``rollout_func(prompts, trainer)`` for ``GRPOTrainer(..., rollout_func=...)`` (see the module docstring).

    Args:
        env_id, learner, env_kwargs: the env, the role the model plays (default: the id's default
            learner) and the keywords choosing every other role's policy and the game's settings.
        max_turn_tokens: the most tokens the model generates in one turn; the whole dialogue stays
            within the trainer's ``max_completion_length``.
        temperature, top_p: sampling settings (default: the trainer's).
        on_trajectory: called with each finished dialogue's trajectory (to keep the rollouts).
    """
    from dialogue_gym.backends.transformers_backend import TransformersBackend

    _check_count(max_turn_tokens, "max_turn_tokens")
    episodes = LearnerEpisodes(env_id, learner=learner, env_kwargs=env_kwargs)

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        backend = TransformersBackend(
            model,
            tokenizer=tokenizer,
            device=str(trainer.accelerator.device),
            temperature=getattr(trainer, "temperature", 1.0) if temperature is None else temperature,
            top_p=getattr(trainer, "top_p", 1.0) if top_p is None else top_p,
            max_new_tokens=max_turn_tokens,
        )
        budget = getattr(trainer, "max_completion_length", None)
        step = trainer.state.global_step
        slots = list(range(len(prompts)))
        for slot, prompt in zip(slots, prompts):
            episodes.start(slot, *_episode_of(prompt, env_id))
        prompt_ids: list[list[int]] = [[] for _ in slots]
        completion: list[list[int]] = [[] for _ in slots]
        env_mask: list[list[int]] = [[] for _ in slots]
        logprobs: list[list[float]] = [[] for _ in slots]
        stopped = [False] * len(slots)
        was_training = model.training
        model.eval()
        try:
            while True:
                active = [s for s in slots if episodes.learners_turn(s) and not stopped[s]]
                if budget is not None:
                    for slot in active:
                        stopped[slot] = len(completion[slot]) >= budget
                    active = [s for s in active if not stopped[s]]
                if not active:
                    break
                seen = {slot: episodes.messages(slot) for slot in active}
                requests = [
                    GenerationRequest(
                        tuple(seen[slot]),
                        SamplingParams(
                            max_new_tokens=max_turn_tokens if budget is None else min(max_turn_tokens, budget - len(completion[slot])),
                            seed=mix_seed(slot, step, len(completion[slot])),
                        ),
                        tuple(prompt_ids[slot] + completion[slot]) if prompt_ids[slot] else None,
                    )
                    for slot in active
                ]
                outputs = backend.generate(requests)
                for slot, output in zip(active, outputs):
                    if not prompt_ids[slot]:
                        prompt_ids[slot] = list(output.prompt_token_ids)
                    completion[slot] += output.token_ids
                    env_mask[slot] += [1] * len(output.token_ids)
                    logprobs[slot] += output.logprobs
                episodes.move(active, [o.text for o in outputs], [o.token_ids for o in outputs], [o.logprobs for o in outputs])
                for slot, output in zip(active, outputs):
                    if episodes.done(slot):
                        continue
                    ended_with_eos = bool(output.token_ids) and output.token_ids[-1] == tokenizer.eos_token_id
                    heard = heard_tokens(tokenizer, seen[slot], output.text, episodes.messages(slot), ended_with_eos)
                    if heard is None or (budget is not None and len(completion[slot]) + len(heard) > budget):
                        stopped[slot] = True
                        continue
                    completion[slot] += heard
                    env_mask[slot] += [0] * len(heard)
                    logprobs[slot] += [0.0] * len(heard)
        finally:
            if was_training:
                model.train()
        episodes.finish_silently(slots)
        trajectories = [episodes.trajectory(slot) for slot in slots]
        if on_trajectory is not None:
            for trajectory in trajectories:
                on_trajectory(trajectory)
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion,
            "logprobs": logprobs,
            "env_mask": env_mask,
            "reward": [episodes.reward(slot) for slot in slots],
            "reward_terms": [dict(t.reward_terms) for t in trajectories],
            "outcome": [t.outcome.value for t in trajectories],
            "env_id": [env_id] * len(slots),
            "learner": [episodes.learner] * len(slots),
        }

    return rollout_func


# -- reward functions ----------------------------------------------------------------------------
def env_reward(completions: Sequence[Any] | None = None, reward: Sequence[float] | None = None, **kwargs: Any) -> list[float]:
    """TRL reward function: the env's reward of each dialogue, the ``reward`` column of :func:`make_rollout_func`
    (with ``environment_factory`` the environments' ``get_reward`` already is this reward)."""
    if reward is None:
        raise ConfigError("env_reward needs the 'reward' column of dialogue_gym's rollout_func (make_rollout_func).")
    return [float(value) for value in reward]


def reward_term(name: str) -> Callable[..., list[float]]:
    """A TRL reward function for the reward term ``name`` (``"<role>/<term>"``, e.g. ``"agent/judge"``): its
    value in each dialogue, 0.0 where the dialogue did not earn it. It reads the rollout's
    ``reward_terms`` column, or with ``environment_factory`` the environments themselves. TRL logs it
    under ``name``; the learner's terms summed with weight 1 give :func:`env_reward`."""
    if not isinstance(name, str) or name.count("/") != 1:
        raise ConfigError(f"reward_term needs a '<role>/<term>' name such as 'agent/judge', got {name!r}.")

    def term(completions: Sequence[Any] | None = None, reward_terms: Sequence[dict[str, float]] | None = None, environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float]:
        if reward_terms is None:
            if environments is None:
                raise ConfigError(f"reward_term({name!r}) needs the 'reward_terms' column of make_rollout_func or TRL's environments.")
            reward_terms = [environment.reward_terms for environment in environments]
        return [float(terms.get(name, 0.0)) for terms in reward_terms]

    term.__name__ = term.__qualname__ = name.replace("/", "_")
    return term


# -- environment_factory -------------------------------------------------------------------------
class DialogueEnvironment:
    """One learner's side of one dialogue at a time, as TRL's ``environment_factory`` wants it: TRL
    calls :meth:`reset` with a dataset row, the public methods of the subclass as tools, and
    :meth:`get_reward` once the model stops calling them. Built by :func:`environment_factory`."""

    def __init__(self, episodes: LearnerEpisodes, slot: int):
        self._episodes = episodes
        self._slot = slot

    def reset(self, env_episode: int | None = None, env_seed: int | None = None, prompt: Any = None, **row: Any) -> None:
        """Start the row's episode; the row's ``prompt`` must be the learner's opening chat, which it is
        for rows of :func:`environment_dataset` with counterparts that play the same opening for the
        same seed (scripted ones, or LLMs behind the ``cached`` backend)."""
        if env_episode is None or env_seed is None:
            raise ConfigError(
                f"The {self._episodes.env_id} environment got a dataset row without 'env_episode' and 'env_seed' "
                f"(keys: {sorted(row)}); build the dataset with environment_dataset({self._episodes.env_id!r}, n)."
            )
        messages = self._episodes.start(self._slot, env_episode, env_seed)
        if prompt is not None and [(m["role"], m["content"]) for m in prompt] != [(m["role"], m["content"]) for m in messages]:
            raise ConfigError(
                f"Episode {env_episode} of {self._episodes.env_id} opened differently from the dataset row's prompt, so the "
                "model would be answering another dialogue; its counterpart does not replay its opening from the seed. "
                "Use scripted counterparts or wrap the counterpart's backend in the 'cached' backend."
            )
        return None

    def get_reward(self) -> float:
        """The learner's return, the dialogue finished with the learner silent if it stopped early."""
        self._episodes.finish_silently([self._slot])
        return self._episodes.reward(self._slot)

    @property
    def reward_terms(self) -> dict[str, float]:
        return dict(self._episodes.games[self._slot].reward_terms)

    @property
    def trajectory(self) -> Trajectory:
        return self._episodes.trajectory(self._slot)

    def _say(self, text: str) -> str:
        episodes, slot = self._episodes, self._slot
        if not episodes.games[slot].started:
            raise EpisodeStateError("A tool was called before reset(); TRL resets each environment before generating.")
        if not episodes.learners_turn(slot):
            return ENDED
        (heard,) = episodes.move([slot], [text])
        replies = [message["content"] for message in heard]
        if episodes.done(slot):
            replies.append(ENDED)
        return "\n".join(replies)


class ConversationEnvironment(DialogueEnvironment):
    """A learner that speaks: its one tool says a whole turn."""

    def respond(self, message: str) -> str:
        """Say your next turn to the other party and hear what comes back.

        Args:
            message: Your whole turn, written in the output format your instructions ask for.
        """
        return self._say(message)


_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool}


def _described(name: str, spec: dict[str, Any]) -> str:
    parts = [spec.get("description", "") or f"The {name.replace('_', ' ')}."]
    if "enum" in spec:
        parts.append(f"One of: {', '.join(map(str, spec['enum']))}.")
    if "pattern" in spec:
        parts.append(f"Format: {spec['pattern']}.")
    return " ".join(parts)


def _bank_tool(tool: Any) -> Callable[..., str]:
    """An environment method for the RL-ADA tool ``tool``: its arguments as typed keyword parameters
    (optional ones default to None and are left out), one ``tool_call`` move of the env."""
    from dialogue_gym.scenarios.rlada.parsing import render_agent_action

    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", ()))
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, spec in properties.items():
        kind = _JSON_TYPES.get(spec.get("type"), str)
        if name in required:
            parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind))
        else:
            parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind | None))

    def call(self: BankingAgentEnvironment, **arguments: Any) -> str:
        given = {key: value for key, value in arguments.items() if value is not None}
        return self._say(render_agent_action("tool_call", tool.name, given))

    call.__name__ = call.__qualname__ = tool.name
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)
    call.__annotations__ = {**{p.name: p.annotation for p in parameters[1:]}, "return": str}
    args = "\n".join(f"    {name}: {_described(name, spec)}" for name, spec in properties.items())
    call.__doc__ = f"{tool.description}\n\nArgs:\n{args}\n" if args else tool.description
    return call


class BankingAgentEnvironment(DialogueEnvironment):
    """RL-ADA's support agent: the bank's tools, speaking and ending the call, each one move of the env
    (the six tool methods are added from the scenario's tools, see :func:`_banking_agent_class`)."""

    def speak(self, message: str) -> str:
        """Say something to the customer and hear their reply.

        Args:
            message: What you say to the customer.
        """
        from dialogue_gym.scenarios.rlada.parsing import render_agent_action

        return self._say(render_agent_action("speak", message))

    def end_call(self, message: str) -> str:
        """End the call once the customer's problem is handled.

        Args:
            message: Your closing words to the customer.
        """
        from dialogue_gym.scenarios.rlada.parsing import render_agent_action

        return self._say(render_agent_action("end_call", message))


def _banking_agent_class(tools: Sequence[Any]) -> type[BankingAgentEnvironment]:
    return type("BankingAgentEnvironment", (BankingAgentEnvironment,), {tool.name: _bank_tool(tool) for tool in tools})


def environment_factory(env_id: str, *, learner: str | None = None, env_kwargs: dict[str, Any] | None = None) -> Callable[[], DialogueEnvironment]:
    """``environment_factory`` for ``GRPOTrainer`` (see the module docstring): each call returns a new
    environment; all of them share one set of counterpart policies (one backend, loaded once)."""
    from dialogue_gym.scenarios.rlada.game import RladaGame

    episodes = LearnerEpisodes(env_id, learner=learner, env_kwargs=env_kwargs)
    game = episodes.games[0]
    if isinstance(game, RladaGame) and episodes.learner == "agent":
        environment_class: type[DialogueEnvironment] = _banking_agent_class(game.domain.tools)
    else:
        environment_class = ConversationEnvironment
    made = 0

    def factory() -> DialogueEnvironment:
        nonlocal made
        made += 1
        return environment_class(episodes, made - 1)

    return factory


def environment_dataset(env_id: str, episodes: int, *, seed: int = 0, learner: str | None = None, env_kwargs: dict[str, Any] | None = None):
    """A ``datasets.Dataset`` for :func:`environment_factory`: per training episode ``i`` (``0 ..
    episodes - 1``) the learner's opening chat as ``prompt``, and ``env_episode`` / ``env_seed``,
    which the environment's ``reset`` starts the same episode from."""
    _check_count(episodes, "episodes")
    opening = LearnerEpisodes(env_id, learner=learner, env_kwargs=env_kwargs)
    rows = [{"prompt": opening.start(0, episode, seed), "env_episode": episode, "env_seed": seed} for episode in range(episodes)]
    return _datasets().Dataset.from_list(rows)
