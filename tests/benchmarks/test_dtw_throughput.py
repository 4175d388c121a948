"""The DTW throughput benchmark builds both tables on a few pairs, every row equal to tslearn, and
prints the thread settings and load it ran under."""

import importlib.util
from pathlib import Path

import numba
import numpy as np
import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "dtw_throughput.py"


def load():
    spec = importlib.util.spec_from_file_location("benchmark_dtw_throughput", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_packed_arrays_are_the_layout_pack_sequences_builds():
    from dialogue_gym.metrics.dtw import pack_sequences

    seqs = load().make_sequences(50, 0)
    values, offsets = load().packed_arrays(seqs)
    packed = pack_sequences(seqs)
    assert np.array_equal(values, packed.values) and np.array_equal(offsets, packed.offsets)
    assert {len(s) for s in seqs} <= set(range(3, 16)) and {x for s in seqs for x in s} <= set(range(6))


@pytest.mark.slow  # imports tslearn, torch and dtaidistance and runs tslearn's matrix: tens of seconds on shared cores
def test_tables_compare_every_row_with_tslearn(capsys):
    import torch

    threads_before = torch.get_num_threads()
    tables = load().main(["--pairs", "300", "--repeats", "1"])
    paths = [row["path"] for row in tables["batch_dtw"]]
    assert paths[:3] == ["tslearn dtw_path_from_metric, per pair", "batch_dtw numpy wavefront", "batch_dtw torch wavefront"]
    assert paths.count("batch_dtw numba, PackedSequences") == len({1, numba.config.NUMBA_NUM_THREADS})
    assert tables["cdist_dtw"][0]["path"] == "tslearn cdist_dtw" and tables["cdist_dtw"][0]["pairs"] == 300  # 25 sequences
    assert all(row["equal"] and row["rate"] > 0 for rows in tables.values() for row in rows)
    printed = capsys.readouterr().out
    assert "load average (1, 5, 15 min)" in printed and "BLAS" in printed and "torch 1" in printed
    assert "from NumPy input (PackedSequences)" in printed
    assert torch.get_num_threads() == threads_before  # pinned only while the tables ran
