"""benchmarks/sead_informative_groups.py with ``--greedy-copy``: copy 0 of every group is the greedy turn
(the trainer's ``greedy_copy``). A script of its own so its saved output (docs/results/benchmarks/, kept by
``tools/docs_tables.py --benchmark NAME``, one file per name) sits beside the all-sampled table instead of
replacing it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sead_informative_groups import main

if __name__ == "__main__":
    main(["--greedy-copy", *sys.argv[1:]])
    sys.exit(0)
