"""Thin trainers that consume dialogue_gym's envs and trajectories (GRPO loops, curriculum loop, arena).

They import from ``dialogue_gym``; nothing in ``dialogue_gym`` imports from here.
"""
