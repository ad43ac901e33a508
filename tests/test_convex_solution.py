"""skquad.convex.solution: the gap arithmetic and the warm-start state of an SDP solution."""

import numpy as np

from skquad.convex import SDPSolution, SolverFailedError
from skquad.convex.solution import relative_gap


def _solution(factors=None):
    p = 2
    Q = np.zeros((1, 2 * p, 2 * p))
    Q[0, :p, p:] = [[1.0, 2.0], [3.0, 4.0]]
    return SDPSolution(
        Q=Q, rho=np.array([0.5]), value=2.0, scores=np.zeros((3, 1)), status="optimal",
        solver="native" if factors else "CLARABEL", solve_time=1.0, lower_bound=1.5, factors=factors,
    )


def test_gap_and_relative_gap():
    solution = _solution()
    assert solution.objective == 2.0
    assert solution.gap == 0.5
    assert solution.relative_gap == 0.25
    assert relative_gap(-4.0, -5.0) == 0.25  # relative to |objective|
    assert relative_gap(0.0, -1e-13) == 1e-13 / 1e-12  # no division by zero


def test_Z_is_the_off_diagonal_block():
    np.testing.assert_array_equal(_solution().Z[0], [[1.0, 2.0], [3.0, 4.0]])


def test_warm_start_state_keeps_the_factors_and_drops_Q():
    assert _solution().warm_start_state() is None  # a CVXPY solution has no factors
    factors = [(np.eye(2), np.ones(2))]
    state = _solution(factors).warm_start_state()
    assert state.Q is None and state.scores is None
    assert state.factors is factors
    np.testing.assert_array_equal(state.rho, [0.5])
    assert state.lower_bound == 1.5


def test_solver_failure_is_a_runtime_error():
    assert issubclass(SolverFailedError, RuntimeError)
