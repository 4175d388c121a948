"""RL-ADA co-evolution: ``python -m trainers.rlada`` (arena matches, isolation gyms, stopping rule)."""
