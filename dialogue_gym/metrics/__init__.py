"""Pure metrics over recorded trajectories.

DTW follows tslearn's names: ``from dialogue_gym.metrics import dtw, dtw_path, batch_dtw, cdist_dtw``
(functions; the module is ``dialogue_gym.metrics.dtw``, import its other names from there).
"""

from dialogue_gym.metrics.core import (
    MeanStd,
    cr,
    cr_interval,
    invalid_action_rate,
    mean_std,
    tokens_per_dialogue,
)
from dialogue_gym.metrics.dtw import (
    align,
    batch_dtw,
    cdist_dtw,
    discounted_suffix,
    dtw,
    dtw_path,
)

__all__ = [
    "MeanStd", "align", "batch_dtw", "cdist_dtw", "cr", "cr_interval", "discounted_suffix", "dtw", "dtw_path",
    "invalid_action_rate", "mean_std", "tokens_per_dialogue",
]
