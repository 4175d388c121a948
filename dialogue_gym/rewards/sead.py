"""SEAD reward terms as pure functions; each also works as a TRL ``reward_funcs`` entry."""

from __future__ import annotations

from typing import Any, Sequence


def outcome_reward(completions: Sequence[Any] | None = None, outcome: Sequence[str] | None = None, success_reward: float = 1.0, **kwargs: Any) -> list[float]:
    """R = success_reward * 1[outcome == "success"] per dialogue (SEAD's sparse terminal reward).

    TRL calls reward functions with ``completions`` and the extra columns a rollout returned, here
    ``outcome``; the completions themselves are not needed."""
    if outcome is None:
        raise TypeError("outcome_reward needs the dialogues' outcomes (outcome=[...]), e.g. from the SEAD rollout_func.")
    return [success_reward if o == "success" else 0.0 for o in outcome]
