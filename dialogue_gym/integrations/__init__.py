"""Plug-ins for other RL libraries, one module per library, each importing its library on use:

- :mod:`dialogue_gym.integrations.datasets`: export recorded runs as Hugging Face datasets (``dialogue-gym export``).
- :mod:`dialogue_gym.integrations.trl`: TRL's ``GRPOTrainer`` (``rollout_func`` and ``environment_factory``).
- :mod:`dialogue_gym.integrations.openenv_server`: every id as an OpenEnv environment server (``dialogue-gym serve``);
  :mod:`dialogue_gym.integrations.openenv` is its client, which imports neither the server nor ``openenv-core``.
- :mod:`dialogue_gym.integrations.verifiers`: every id as a ``verifiers`` multi-turn environment.
- :mod:`dialogue_gym.integrations.skyrl`: every id as a SkyRL-gym text environment.
- :mod:`dialogue_gym.integrations.verl`: every id and role as a verl agent loop (its pure part: token and mask
  assembly, rows, loop configs); :mod:`dialogue_gym.integrations.verl_loop` is the loop class, loaded where verl is.

:mod:`dialogue_gym.integrations.common` holds what they share and needs none of those libraries.
"""
