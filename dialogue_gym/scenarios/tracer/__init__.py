"""TRACER user simulation and DM-Bench (paper 002, SPEC section 2): rules, data, scripted policies, judges."""
