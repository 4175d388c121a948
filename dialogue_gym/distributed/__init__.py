"""Scale-out of rollouts on Ray (optional extra ``ray``): see :mod:`.ray_rollouts`.

Importing this package does not import Ray; :func:`collect_rollouts` does, and raises
:class:`~dialogue_gym.errors.DependencyNotInstalled` naming the extra when it is missing.
"""

from dialogue_gym.distributed.ray_rollouts import RolloutWorker, collect_rollouts

__all__ = ["RolloutWorker", "collect_rollouts"]
