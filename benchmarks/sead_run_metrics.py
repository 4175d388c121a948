"""What decision-point GRPO saw while it trained, from saved run metrics (``metrics.jsonl`` of
``python -m trainers.sead``; issue 41 item 2): per run, over its first and last ``--window`` iterations,
the mean share of informative groups (rewards differ), with a greedy copy (``greedy_copy``) the share of
groups where a sampled turn beat the greedy one (``beaten``, the signal that can move the argmax) and where
the greedy turn beat a sampled one (``beats``), the per-token k3 KL to the SFT model (0 without ``kl_coef``)
and the seconds per iteration. Reads files only; runs nothing.

    python benchmarks/sead_run_metrics.py NAME=METRICS.jsonl ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

COLUMNS = (("decision/informative_groups", "informative"), ("decision/greedy_beaten", "beaten"), ("decision/greedy_beats", "beats"), ("loss/kl", "k3 KL"))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="NAME=path/to/metrics.jsonl")
    parser.add_argument("--window", type=int, default=10, help="iterations at each end averaged")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    header = " | ".join(f"{label} first {args.window} | last {args.window}" for _, label in COLUMNS)
    print(f"| run | iterations | {header} | s per iteration |")
    print("|---|---|" + "---|---|" * len(COLUMNS) + "---|")
    for spec in args.runs:
        if "=" not in spec:
            raise SystemExit(f"{spec!r}: pass NAME=path/to/metrics.jsonl")
        name, path = spec.split("=", 1)
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        if not rows:
            raise SystemExit(f"{path} holds no metrics rows; pass a run's metrics.jsonl.")

        def mean(key: str, part: list[dict[str, Any]]) -> float | None:
            values = [row[key] for row in part if key in row]
            return sum(values) / len(values) if values else None

        first, last = rows[: args.window], rows[-args.window :]
        entry = {label: [mean(key, first), mean(key, last)] for key, label in COLUMNS}
        entry["seconds"] = mean("time/seconds", rows)
        entry["iterations"] = len(rows)
        result[name] = entry
        cells = " | ".join("-" if v is None else f"{v:.3f}" for label in entry if label not in ("seconds", "iterations") for v in entry[label])
        print(f"| {name} | {len(rows)} | {cells} | {entry['seconds']:.0f} |")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
