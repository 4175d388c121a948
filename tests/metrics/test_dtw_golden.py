"""Fixed DTW examples with hand-computed paths and costs, ties included, for every implementation.

The module documents its tie-break: tracing back from the end it prefers the diagonal, then
``(i-1, j)``, then ``(i, j-1)`` (tslearn's order). Random inputs rarely put a tie on the optimal path,
so a flipped preference passed some Hypothesis runs; these fixtures are built so that each of the
three preferences gives a different path, and the path changes TRACER's per-turn deviations d_t.
Paths come from one traceback (``dtw_path``, ``dtw_path_from_cost``, ``align``) and are checked
against tslearn; costs come from every batch backend.
"""

from __future__ import annotations

import numpy as np
import pytest

from dialogue_gym.metrics.dtw import (
    BACKENDS,
    align,
    batch_dtw,
    cdist_dtw,
    dtw,
    dtw_path,
    dtw_path_from_cost,
    local_cost_matrix,
    turn_deviations,
)

# (a, b, path, cost), each worked out by hand below.
EXAMPLES = [
    # All local costs 0, so every predecessor ties everywhere: the diagonal wins -> a straight path.
    # (Preferring (i-1, j) would give [(0,0),(0,1),(1,1)]; preferring (i, j-1) [(0,0),(1,0),(1,1)].)
    ([1, 1], [1, 1], [(0, 0), (1, 1)], 0.0),
    # 2 x 3, all zero: from (1,2) the diagonal (0,1) wins, then (0,1) -> (0,0) along the edge.
    # (i-1, j) first: (0,2),(0,1),(0,0) -> [(0,0),(0,1),(0,2),(1,2)]; (i, j-1) first: [(0,0),(1,1),(1,2)].
    ([0, 0], [0, 0, 0], [(0, 0), (0, 1), (1, 2)], 0.0),
    # C = |a_i - b_j| = [[1,0,1],[0,1,0],[1,0,1]]; accumulated D (row by row):
    #   D00=1 D01=1 D02=2 / D10=1 D11=1+min(1,1,1)=2 D12=0+min(D02=2, D11=2, D01=1)=1
    #   D20=2 D21=0+min(D11=2, D20=2, D10=1)=1 D22=1+min(D12=1, D21=1, D11=2)=2.
    # From (2,2): diagonal D11=2 loses, (i-1,j)=D12=1 ties (i,j-1)=D21=1 -> (1,2) wins the tie;
    # from (1,2): diagonal D01=1 < D02=2, D11=2 -> (0,1); then (0,0). Cost 2, path length 4.
    # (The other tie-break gives [(0,0),(1,0),(2,1),(2,2)], same cost.)
    ([0, 1, 0], [1, 0, 1], [(0, 0), (0, 1), (1, 2), (2, 2)], 2.0),
    # Unequal lengths, one reference point: the only path runs down the column; cost 0 + 1 + 2.
    ([0, 1, 2], [0], [(0, 0), (1, 0), (2, 0)], 3.0),
    # The paper's pacing delay: the simulation reaches 5 one turn late. C rows: [0,1,2] [0,1,2] [2,1,0].
    # D00=0 D01=1 D02=3 / D10=0 D11=1+min(0,1,0)=1 D12=2+min(1,3,1)=3 / D20=2 D21=1+min(0,1,2)=1
    # D22=0+min(D11=1, D12=3, D21=1)=1: the diagonal ties (i, j-1) -> (1,1); there the diagonal D00=0
    # ties (i, j-1)=D10=0 again -> (0,0). Preferring (i, j-1) would give [(0,0),(1,0),(2,1),(2,2)].
    ([3, 3, 5], [3, 4, 5], [(0, 0), (1, 1), (2, 2)], 1.0),
]


@pytest.mark.parametrize("a, b, path, cost", EXAMPLES)
def test_path_and_cost_by_hand(a, b, path, cost):
    assert dtw_path(a, b) == (path, cost)
    assert dtw(a, b) == cost
    assert dtw_path_from_cost(local_cost_matrix(a, b)) == (path, cost)
    assert list(align(a, b).path) == path and align(a, b).cost == cost


@pytest.mark.parametrize("a, b, path, cost", EXAMPLES)
def test_tslearn_takes_the_same_path(a, b, path, cost):
    from tslearn.metrics import dtw_path_from_metric  # here, not at the top: importing tslearn takes seconds

    reference_path, reference_cost = dtw_path_from_metric(np.array(a, float), np.array(b, float), metric="cityblock")
    assert [tuple(p) for p in reference_path] == path and reference_cost == cost


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_gives_the_hand_costs(backend):
    seqs_a, seqs_b = [e[0] for e in EXAMPLES], [e[1] for e in EXAMPLES]
    costs = [e[3] for e in EXAMPLES]
    assert batch_dtw(seqs_a, seqs_b, backend=backend).tolist() == costs
    matrix = cdist_dtw(seqs_a, seqs_b, backend=backend)
    assert np.diag(matrix).tolist() == costs
    # [0,1,0] against [0,0,0]: one step costs 1 whatever the path; [1,1] against [0]: 1 + 1.
    assert matrix[2, 1] == 1.0 and matrix[0, 3] == 2.0


def test_squared_local_cost_by_hand_on_every_backend():
    # a = [0, 2], b = [1]: the only path pairs both with b; (0-1)^2 + (2-1)^2 = 2 (abs would also be 2),
    # a = [0, 3], b = [1, 1]: diagonal (0-1)^2 + (3-1)^2 = 5 beats any longer path (abs: 1 + 2 = 3).
    for backend in BACKENDS:
        assert batch_dtw([[0, 2], [0, 3]], [[1], [1, 1]], "sqeuclidean", backend).tolist() == [2.0, 5.0]
    assert dtw([0, 3], [1, 1], "sqeuclidean") == 5.0 and dtw([0, 3], [1, 1]) == 3.0


def test_the_tie_break_decides_the_per_turn_deviations():
    # On the tie example the path [(0,0),(0,1),(1,2),(2,2)] averages C[0,0]=1 and C[0,1]=0 for turn 0,
    # takes C[1,2]=0 for turn 1 and C[2,2]=1 for turn 2. The other tie-break's path
    # [(0,0),(1,0),(2,1),(2,2)] would give d = (1, 0, 0.5): TRACER's modulation would differ.
    alignment = align([0, 1, 0], [1, 0, 1])
    assert alignment.deviations == (0.5, 0.0, 1.0)
    other = turn_deviations([0, 1, 0], [1, 0, 1], [(0, 0), (1, 0), (2, 1), (2, 2)])
    assert other.tolist() == [1.0, 0.0, 0.5]
    # c_t = d_t + rho c_{t+1} with rho = 0.4: c_2 = 1, c_1 = 0 + 0.4 = 0.4, c_0 = 0.5 + 0.16 = 0.66
    assert alignment.suffix(0.4).tolist() == pytest.approx([0.66, 0.4, 1.0])


def test_cosine_path_on_orthogonal_vectors_takes_the_same_tie():
    # x = (1, 0), y = (0, 1): cosine distance 0 between equal, 1 between orthogonal ones, so
    # [x, y, x] against [y, x, y] has the local cost matrix of the tie example above.
    x, y = [1.0, 0.0], [0.0, 1.0]
    path, cost = dtw_path([x, y, x], [y, x, y], metric="cosine")
    assert path == [(0, 0), (0, 1), (1, 2), (2, 2)] and cost == 2.0
