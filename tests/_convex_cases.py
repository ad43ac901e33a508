"""Checks and problems shared by the SDP solver test modules (tests/test_convex_*.py)."""

import numpy as np

from skquad.convex import InputLifting

# The liftings the dual barriers are checked on (the polynomial one adds a
# coordinate and cross terms to every L_i).
LIFTINGS = {
    "bilinear": InputLifting(),
    "polynomial": InputLifting(activation=(1.0, 0.5, -0.2)),
}


def binary_problem(seed, n=40, d=3):
    """``(X, y, weight)``: ±1 targets of a noisy product of two features, positive weights."""
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    weight = rng.uniform(0.2, 2.0, size=n)
    return X, y, weight


def assert_certified_bracket(solution, reference, tol=1e-4):
    """``solution`` brackets the reference optimum and its certified gap is at most ``tol``.

    The lower bound is a proof (weak duality), the value a feasible point's
    objective; CLARABEL's own value is accurate to about 1e-8 relative, so
    both sides allow 1e-7 of the optimum's scale.
    """
    scale = max(1.0, abs(reference))
    assert solution.lower_bound <= reference + 1e-7 * scale
    assert reference <= solution.value + 1e-7 * scale
    assert solution.converged and solution.relative_gap <= tol
