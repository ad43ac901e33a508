"""Checks shared by the SDP solver test modules (tests/test_convex_*.py)."""


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
