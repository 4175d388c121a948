"""Reading a token mask in tests: its runs of equal values."""

import itertools


def runs(mask):
    """``[(value, start, end)]`` of the maximal runs of equal values in ``mask``."""
    out, start = [], 0
    for value, group in itertools.groupby(mask):
        length = len(list(group))
        out.append((value, start, start + length))
        start += length
    return out
