"""SEAD outbound promotion calls (paper 000; SPEC section 1)."""
