"""The face-restricted dual certificates (squared, binary logistic), against CLARABEL."""

import functools

import numpy as np
import pytest
import torch

from skquad.convex import InputLifting, LiftedData, dual_bound, solve_factored, solve_sdp
from skquad.convex.face_dual import face_basis, face_dual_bound, verified_bound
from skquad.convex.losses import dual_point

CASES = [
    (0, 1e-2, "bilinear"),
    (2, 3e-2, (0.25, 0.5, 0.0)),
    (3, 1e-1, "bilinear"),
]


def _problem(seed, beta, activation, n=120, d=5):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    t = X[:, 0] * X[:, 1] - X[:, 2] + 0.3 * rng.standard_normal(n)
    weight = rng.uniform(0.2, 2.0, size=n)
    lifting = InputLifting(fit_intercept=True, activation=activation)
    reference = solve_sdp(
        lifting.matrices(X), t, weight, loss="squared", beta=beta, n_outputs=1, solver="CLARABEL"
    ).value
    data = LiftedData.from_lifting(lifting, X, t, weight, loss="squared", beta=beta, n_outputs=1)
    return data, reference


@pytest.mark.parametrize("seed, beta, activation", CASES)
def test_face_bound_holds_at_random_points(seed, beta, activation):
    """A bound whatever the factors: random faces, random scores to start from."""
    data, reference = _problem(seed, beta, activation)
    _assert_random_faces_give_bounds(data, reference, seed, ranks=(2, 4, 7), score_scale=0.3)


def _assert_random_faces_give_bounds(data, reference, seed, ranks, score_scale, **options):
    rng = np.random.RandomState(seed)
    p = data.n_lifted
    for rank in ranks:
        F = rng.standard_normal((p, rank))
        F /= np.linalg.norm(F, axis=1, keepdims=True)
        signs = np.where(np.arange(rank) % 2 == 0, 1.0, -1.0)
        scores = score_scale * rng.standard_normal(data.target.shape[0])
        bound = face_dual_bound(data, F, signs, scores, **options)
        # CLARABEL's value is optimal to about 1e-8 relative (its tolerances).
        assert bound <= reference * (1 + 1e-7)


def _assert_random_pairs_give_bounds(data, reference, rng, scales):
    n, p = data.target.shape[0], data.n_lifted
    for scale in scales:
        lam = scale * rng.standard_normal(n)
        mu = scale * rng.standard_normal(p)
        assert verified_bound(data, lam, mu) <= reference * (1 + 1e-7)


@pytest.mark.parametrize("seed, beta, activation", CASES)
def test_verified_bound_repairs_any_dual_pair(seed, beta, activation):
    """verified_bound re-checks the LMIs itself: even a random (lam, mu) gives a bound."""
    data, reference = _problem(seed, beta, activation)
    _assert_random_pairs_give_bounds(data, reference, np.random.RandomState(seed + 1), (1e-3, 1.0, 1e3))


@pytest.mark.parametrize("seed, beta, activation", CASES)
def test_face_bound_is_tight_where_the_primal_is(seed, beta, activation):
    """Near the optimum the face dual closes the gap; lam = 2 (f - t) lags it."""
    data, reference = _problem(seed, beta, activation)
    solution = solve_factored(data, tol=1e-12, max_iter=200)
    F, signs = solution.factors[0]
    primal_error = (solution.value - reference) / reference
    assert primal_error < 1e-6  # the setting: a primal point accurate to 1e-6
    face = face_dual_bound(data, F, signs, solution.scores[:, 0])
    lam = dual_point(torch.as_tensor(solution.scores), data.target, "squared")
    cheap = dual_bound(
        data, lam, [(torch.as_tensor(F), torch.as_tensor(signs))], feasible_value=solution.value
    ).lower_bound
    assert face <= reference * (1 + 1e-7)
    # Measured 3e-10..2e-8 (CLARABEL's own accuracy); the cheap bound 2e-7..4e-5.
    assert (reference - face) / reference <= 1e-6
    assert reference - face <= reference - cheap + 1e-9 * reference


def test_face_basis_spans_the_factors_ranges_and_respects_the_size_cap():
    rng = np.random.RandomState(0)
    A = rng.standard_normal((8, 3))
    B = rng.standard_normal((8, 5))
    F = np.hstack([A, B])
    signs = np.array([1.0] * 3 + [-1.0] * 5)
    U, V = face_basis(F, signs)
    assert U.shape == (8, 3) and V.shape == (8, 5)
    np.testing.assert_allclose(U @ (U.T @ A), A, atol=1e-12)
    np.testing.assert_allclose(V @ (V.T @ B), B, atol=1e-12)
    U, V = face_basis(F, signs, max_size=12)
    assert U.shape[1] * (U.shape[1] + 1) // 2 + V.shape[1] * (V.shape[1] + 1) // 2 <= 12


def test_factor_solver_certifies_a_tight_tol_with_the_face_dual():
    """tol=1e-6 on a squared-loss block: certified by the face dual (the cheap
    certificate alone still lagged at 1e-5 after 200 iterations here)."""
    data, reference = _problem(0, 1e-2, "bilinear")
    solution = solve_factored(data, tol=1e-6, max_iter=400)
    assert solution.converged and solution.relative_gap <= 1e-6
    assert solution.lower_bound <= reference * (1 + 1e-7) <= solution.value * (1 + 2e-7)


# The binary logistic loss: the face dual with the entropy as the conjugate.
LOGISTIC_CASES = [
    (0, 1e-2, "bilinear"),
    (2, 3e-3, (0.25, 0.5, 0.0)),
]


def _logistic_problem(seed, beta, activation, n=100, d=4):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] - 0.5 * X[:, 2] + 0.4 * rng.standard_normal(n) > 0, 1.0, -1.0)
    weight = rng.uniform(0.2, 2.0, size=n)
    weight /= weight.sum()
    lifting = InputLifting(fit_intercept=True, activation=activation)
    reference = solve_sdp(
        lifting.matrices(X), y, weight, loss="logistic", beta=beta, n_outputs=1, solver="CLARABEL"
    ).value
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="logistic", beta=beta, n_outputs=1)
    return data, reference


@functools.lru_cache(maxsize=None)
def _logistic_solution(seed, beta, activation):
    """The problem and a factor solution accurate to about 1e-9 (shared by two tests)."""
    data, reference = _logistic_problem(seed, beta, activation)
    return data, reference, solve_factored(data, tol=1e-12, max_iter=150)


@pytest.mark.parametrize("seed, beta, activation", LOGISTIC_CASES)
def test_logistic_face_bound_holds_at_random_points(seed, beta, activation):
    """A bound whatever the factors and the scores the family is built from."""
    data, reference = _logistic_problem(seed, beta, activation)
    _assert_random_faces_give_bounds(data, reference, seed, ranks=(2, 5), score_scale=2.0, max_newton=20)


@pytest.mark.parametrize("seed, beta, activation", LOGISTIC_CASES)
def test_verified_bound_repairs_any_logistic_dual_pair(seed, beta, activation):
    """lam outside the entropy's domain is clipped, mu repaired: still a bound."""
    data, reference = _logistic_problem(seed, beta, activation)
    _assert_random_pairs_give_bounds(data, reference, np.random.RandomState(seed + 1), (1e-2, 1.0, 1e2))


@pytest.mark.parametrize("seed, beta, activation", LOGISTIC_CASES)
def test_logistic_face_bound_is_tight_where_the_primal_is(seed, beta, activation):
    """Near the optimum the logistic face dual closes the gap; lam = l'(f) lags it."""
    data, reference, solution = _logistic_solution(seed, beta, activation)
    F, signs = solution.factors[0]
    primal_error = (solution.value - reference) / reference
    assert primal_error < 1e-6
    face = face_dual_bound(data, F, signs, solution.scores[:, 0])
    lam = dual_point(torch.as_tensor(solution.scores), data.target, "logistic")
    cheap = dual_bound(
        data, lam, [(torch.as_tensor(F), torch.as_tensor(signs))], feasible_value=solution.value
    ).lower_bound
    assert face <= reference * (1 + 1e-7)
    assert (reference - face) / reference <= 1e-6
    assert reference - face <= reference - cheap + 1e-9 * reference


def test_logistic_score_step_family_is_a_bound_and_tight_with_the_right_step(monkeypatch):
    """Where the face is too large to form, the family is l'(f) plus l''(f)
    times given score directions: a bound for any directions, and tight when
    they contain the remaining error f* - f."""
    import skquad.convex.face_dual as face_dual_module

    monkeypatch.setattr(face_dual_module, "_FACE_WORK", 0.0)
    data, reference, solution = _logistic_solution(0, 1e-2, "bilinear")
    rng = np.random.RandomState(3)
    p, n = data.n_lifted, data.target.shape[0]
    F = rng.standard_normal((p, 4))
    F /= np.linalg.norm(F, axis=1, keepdims=True)
    signs = np.array([1.0, -1.0, 1.0, -1.0])
    steps = rng.standard_normal((n, 3))
    assert face_dual_bound(data, F, signs, rng.standard_normal(n), directions=steps) <= reference * (1 + 1e-7)
    F, signs = solution.factors[0]
    exact = solution.scores[:, 0]
    start = exact + 0.05 * rng.standard_normal(n)  # off the optimum by a known step
    bound = face_dual_bound(data, F, signs, start, directions=np.stack([exact - start, start], axis=1))
    assert bound <= reference * (1 + 1e-7)
    # The linearised dual point errs by O(|f* - f|²): measured 3e-5 here.
    assert (reference - bound) / reference <= 3e-4


def test_verified_bound_repairs_any_hinge_dual_pair():
    """The hinge's conjugate is linear on the box: lam clipped into it, mu
    repaired, theta <= 1: a bound for any pair."""
    rng = np.random.RandomState(5)
    n, d = 60, 3
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    weight = np.full(n, 1.0 / n)
    lifting = InputLifting(fit_intercept=True)
    reference = solve_sdp(
        lifting.matrices(X), y, weight, loss="hinge", beta=1e-2, n_outputs=1, solver="CLARABEL"
    ).value
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="hinge", beta=1e-2, n_outputs=1)
    p = data.n_lifted
    _assert_random_pairs_give_bounds(data, reference, rng, (1e-2, 1.0, 1e2))
    # The exact dual point (-y on every sample, mu large) gives a positive bound.
    assert verified_bound(data, -y, np.full(p, 10.0)) > 0.0


def test_factor_solver_with_the_score_step_family_brackets_the_optimum(monkeypatch):
    """The solver's path for large p (the face too large to form, few score
    steps), forced on a small problem: the bracket holds CLARABEL's optimum
    and the chunk history stays the solver's."""
    import skquad.convex.face_dual as face_dual_module
    import skquad.convex.factor_solver as factor_solver_module

    monkeypatch.setattr(face_dual_module, "_FACE_WORK", 0.0)
    monkeypatch.setattr(factor_solver_module, "_FEW_STEPS_ABOVE", 0)
    data, reference = _logistic_problem(2, 3e-3, (0.25, 0.5, 0.0))
    solution = solve_factored(data, tol=1e-6, max_iter=300)
    assert solution.lower_bound <= reference * (1 + 1e-7) <= solution.value * (1 + 2e-7)
    assert all(isinstance(entry, dict) for entry in solution.info["history"])


@pytest.mark.parametrize("p, q", [(12, 5), (9, 20)])  # both branches of hess_ymu (q < p, q >= p)
def test_lmi_terms_are_the_log_determinant_derivatives(p, q):
    """The triangular products give the traces they stand for, computed from S⁻¹ directly."""
    import math

    from skquad.convex.face_dual import _lmi_terms

    rng = np.random.default_rng(p * q)
    A = rng.standard_normal((q, p, p))
    A = A + A.transpose(0, 2, 1)
    R = rng.standard_normal((p, p))
    S = R @ R.T + p * np.eye(p)
    rows, cols = np.triu_indices(p)
    scale = np.where(rows == cols, 1.0, math.sqrt(2.0))
    grad_y, grad_mu, hess_yy, hess_ymu, hess_mumu = _lmi_terms(
        S, np.ascontiguousarray(A.transpose(1, 0, 2)), rows, cols, scale)
    inverse = np.linalg.inv(S)
    products = inverse @ A  # S⁻¹ A_a
    np.testing.assert_allclose(grad_y, -np.trace(products, axis1=1, axis2=2), rtol=0, atol=1e-12)
    np.testing.assert_allclose(grad_mu, -np.diag(inverse), rtol=0, atol=1e-12)
    np.testing.assert_allclose(hess_yy, np.einsum("aij,bji->ab", products, products), rtol=0, atol=1e-12)
    np.testing.assert_allclose(hess_ymu, np.einsum("aji,ij->aj", products, inverse), rtol=0, atol=1e-12)
    np.testing.assert_allclose(hess_mumu, inverse**2, rtol=0, atol=1e-12)


@pytest.mark.parametrize("q", [3, 40])  # fewer columns than lifted features, and more (the triangle)
def test_weighted_matrices_are_the_coefficients_sums_of_the_lifted_matrices(q):
    from skquad.convex.face_dual import _weighted_matrices

    data, _ = _problem(0, 1e-2, (0.25, 0.5, 0.0), n=70)
    coefficients = np.random.default_rng(q).standard_normal((70, q))
    matrices = _weighted_matrices(data, coefficients, chunk=32)  # several chunks, a short last one
    lifted = np.stack([data.weighted_matrix(torch.as_tensor(np.eye(70)[i], dtype=data.features.dtype))
                       .cpu().numpy() for i in range(70)])
    expected = np.einsum("ia,ijk->ajk", coefficients, lifted)
    np.testing.assert_allclose(matrices, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
