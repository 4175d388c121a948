"""Views on the games: PettingZoo AEC / parallel modules (``<name>_v<N>``), Gymnasium single-agent and vector envs."""
