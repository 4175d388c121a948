"""Pure metrics over recorded trajectories."""

from dialogue_gym.metrics.core import MeanStd, cr, cr_interval, invalid_action_rate, mean_std, tokens_per_dialogue

__all__ = ["MeanStd", "cr", "cr_interval", "invalid_action_rate", "mean_std", "tokens_per_dialogue"]
