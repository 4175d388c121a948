"""TRACER trainer: ``python -m trainers.tracer --preset cpu-strategy`` (SFT, then RL with deviation-aware advantages)."""
