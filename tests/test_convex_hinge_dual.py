"""The binary hinge SDP by a barrier method on its exact dual, against CLARABEL through CVXPY."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skquad import SDPQuantizedClassifier
from skquad.convex import InputLifting, LiftedData, solve_relaxation, solve_sdp
from skquad.convex import routes
from skquad.convex.barrier import best_rho
from skquad.convex.hinge_dual import solve_hinge_dual
from skquad.convex.routes import hinge_dual_applies

from _convex_cases import LIFTINGS, assert_certified_bracket, binary_problem


def _problem(seed, n=40, d=3):
    return binary_problem(seed, n=n, d=d)


def _reference(lifting, X, y, weight, beta):
    return solve_sdp(
        lifting.matrices(X), y, weight, loss="hinge", beta=beta, n_outputs=1, solver="CLARABEL"
    ).value


@pytest.mark.parametrize("name", list(LIFTINGS))
@pytest.mark.parametrize("beta", [1e-4, 1e-2])
def test_bracket_holds_the_clarabel_optimum(name, beta):
    # Issue 18: the smoothed hinge of the factor solver stalled short of tol
    # at small beta; the dual barrier certifies tol there.
    lifting = LIFTINGS[name]
    X, y, weight = _problem(3 + int(1e4 * beta))
    reference = _reference(lifting, X, y, weight, beta)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="hinge", beta=beta, n_outputs=1)
    assert hinge_dual_applies(data)
    solution = solve_hinge_dual(data, tol=1e-4)
    assert_certified_bracket(solution, reference)
    relaxed = solve_relaxation(lifting, X, y, weight, loss="hinge", beta=beta, n_outputs=1)
    assert relaxed.solver == "hinge_dual" and relaxed.converged


def test_bound_and_value_hold_when_stopped_early():
    """A loose tol stops the barrier far from the optimum: the bracket still holds."""
    lifting = InputLifting()
    X, y, weight = _problem(11)
    beta = 1e-3
    reference = _reference(lifting, X, y, weight, beta)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="hinge", beta=beta, n_outputs=1)
    solution = solve_hinge_dual(data, tol=0.5)
    assert solution.relative_gap > 1e-3  # really short of the optimum
    assert solution.lower_bound <= reference + 1e-9
    assert reference <= solution.value + 1e-9


@pytest.mark.parametrize("name", list(LIFTINGS))
def test_solution_is_exactly_feasible_and_reproduces_its_scores(name):
    lifting = LIFTINGS[name]
    X, y, weight = _problem(2)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="hinge", beta=1e-3, n_outputs=1)
    solution = solve_hinge_dual(data)
    Q, rho = solution.Q[0], solution.rho[0]
    assert rho > 0
    np.testing.assert_allclose(np.diag(Q), rho, rtol=1e-12)
    assert np.linalg.eigvalsh(Q)[0] >= -1e-12 * rho
    scores = 2.0 * lifting.inner(X, solution.Z[0])
    np.testing.assert_allclose(scores, solution.scores[:, 0], rtol=1e-9, atol=1e-10)
    w = weight / weight.sum()
    value = w @ np.maximum(0.0, 1.0 - y * scores) + 2.0 * 1e-3 * data.n_lifted * rho
    assert value == pytest.approx(solution.value, rel=1e-10)


def test_best_rho_is_the_exact_minimiser():
    rng = np.random.RandomState(0)
    g, t = rng.standard_normal(30), np.sign(rng.standard_normal(30))
    w = rng.uniform(0.1, 1.0, 30)
    w /= w.sum()

    def objective(rho):
        return w @ np.maximum(0.0, 1.0 - rho * t * g) + 0.05 * rho

    rho = best_rho(g, t, w, 0.05)
    grid = np.linspace(0.0, 3.0 * max(rho, 1.0), 20001)
    assert objective(rho) <= min(objective(r) for r in grid) + 1e-12
    assert best_rho(g, t, w, 10.0) == 0.0  # a penalty above every slope


def test_dispatch_by_size_and_options():
    lifting = InputLifting()
    X, y, weight = _problem(4)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="hinge", beta=1e-2, n_outputs=1)
    assert hinge_dual_applies(data)
    many = LiftedData.from_lifting(
        lifting, X, (y > 0).astype(int) + (X[:, 2] > 0), weight, loss="hinge", beta=1e-2,
        n_outputs=3,
    )
    assert not hinge_dual_applies(many)  # Crammer-Singer: the compact form / factor solver
    n = routes.HINGE_DUAL_MAX_SAMPLES
    for rows, applies in ((n, True), (n + 1, False)):
        X_many, y_many, _ = binary_problem(0, n=rows, d=3)
        sized = LiftedData.from_lifting(
            lifting, X_many, y_many, np.ones(rows), loss="hinge", beta=1e-2, n_outputs=1
        )
        assert hinge_dual_applies(sized) == applies
    # Options of the factor solver ask for the factor solver.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 5 iterations
        solution = solve_relaxation(
            lifting, X, y, weight, loss="hinge", beta=1e-2, n_outputs=1,
            solver_options={"hinge_sigma": 10.0}, max_iter=5,
        )
    assert solution.solver == "native"


def test_classifier_fits_and_samples_from_the_dual_solution():
    X, y, _ = _problem(8, n=60)
    model = SDPQuantizedClassifier(loss="hinge", beta=1e-3, n_neurons=40, random_state=0)
    model.fit(X, y)
    assert model.solver_ == "hinge_dual" and model.solver_status_ == "optimal"
    assert model.certified_gap_ <= 1e-4 * model.relaxed_objective_
    assert model.score(X, y) > 0.8


@pytest.mark.parametrize("n, d", [(12, 6), (80, 3)])  # fewer rows than m = 28; more than m = 10
def test_balanced_start_is_the_least_squares_correction_through_either_gram(n, d):
    """The start's correction through the n x n Gram (where n < m) or the m x m one is
    A (AᵀA + r I)⁻¹ Aᵀ (1/2), solved here directly with the m x m matrix."""
    import scipy.linalg

    from skquad.convex.compact_solver import lifted_svecs
    from skquad.convex.hinge_dual import _balanced_start

    X, y, weight = _problem(1, n=n, d=d)
    data = LiftedData.from_lifting(LIFTINGS["bilinear"], X, y, weight, loss="hinge", beta=1e-2,
                                   n_outputs=1)
    t = data.target.detach().cpu().numpy()[:, 0].astype(np.float64)
    weight = data.weight.detach().cpu().numpy().astype(np.float64)
    A = -(weight * t)[:, None] * lifted_svecs(data)
    ridge = 1e-10 * np.trace(A.T @ A) / A.shape[1]
    half = np.full(len(t), 0.5)
    expected = half - A @ scipy.linalg.solve(A.T @ A + ridge * np.eye(A.shape[1]), A.T @ half)
    np.testing.assert_allclose(_balanced_start(data, t, weight, floor=-np.inf), expected,
                               rtol=1e-6, atol=1e-8)
