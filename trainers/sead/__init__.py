"""SEAD self-evolving training: ``python -m trainers.sead`` and ``python -m trainers.sead.ablate``."""
