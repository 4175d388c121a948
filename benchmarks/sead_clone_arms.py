"""The table of issue 41's eighth round: the 1,800-step cpu-lm-scratch clone beside its two arms at equal
steps and rate (more expert data; one DAgger round weighted to half the rows), each scored on the 1,200
held-out starts: held-out and training-chat agreement, turns 8+, on-policy agreement, near-repeat share
and greedy CR, one row per ``NAME_fit.json`` that ``sead_clone_factors.py eval`` or ``fit`` wrote.

    python benchmarks/sead_clone_arms.py FIT.json...

The rows are ``sead_clone_factors.py summary``'s; this script exists so that the docs keep this round's
saved output (docs/results/benchmarks/sead_clone_arms.txt) beside, not instead of, the seventh round's
(sead_clone_factors.txt): tools/docs_tables.py keeps one saved output per benchmark script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sead_clone_factors import summary_table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n\n")[0])
    parser.add_argument("fits", nargs="+", type=Path, help="NAME_fit.json files (NAME.json beside each holds its greedy CR)")
    print(summary_table(parser.parse_args(argv).fits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
