"""Curricula over starting profiles: SEAD's ProfileController and the wrappers that plug it into any view."""

from dialogue_gym.curriculum.profile_controller import (
    CATEGORIES,
    MODES,
    ProfileController,
    load_rules,
    state_grid,
)
from dialogue_gym.curriculum.wrappers import with_curriculum

__all__ = ["CATEGORIES", "MODES", "ProfileController", "load_rules", "state_grid", "with_curriculum"]
