"""RL-ADA banking routing (paper 003; SPEC section 3): tools, simulated bank, intent taxonomy, adversarial customer, judge."""
