"""One squared-loss SDP block by a barrier method on its exact dual, against CLARABEL through CVXPY."""

import dataclasses
import math
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn.utils.estimator_checks import parametrize_with_checks

from skquad import SDPQuantizedClassifier, SDPQuantizedRegressor
from skquad.convex import InputLifting, LiftedData, solve_relaxation, solve_sdp
from skquad.convex import barrier, routes, squared_dual
from skquad.convex.certificate import squared_loss_rho
from skquad.convex.face_dual import verified_bound
from skquad.convex.routes import route, squared_dual_applies, use_routes
from skquad.convex.squared_dual import _DualBarrier, solve_squared_dual

from _convex_cases import LIFTINGS, assert_certified_bracket, binary_problem


def _problem(seed, n=50, d=4):
    return binary_problem(seed, n=n, d=d)


def _data(lifting, X, y, weight, beta):
    return LiftedData.from_lifting(lifting, X, y, weight, loss="squared", beta=beta, n_outputs=1)


def _reference(lifting, X, y, weight, beta):
    return solve_sdp(
        lifting.matrices(X), y, weight, loss="squared", beta=beta, n_outputs=1,
        solver="CLARABEL", solver_options={"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10,
                                           "tol_feas": 1e-10},
    ).value


@pytest.mark.parametrize("name", list(LIFTINGS))
@pytest.mark.parametrize("beta", [1e-4, 1e-2])
@pytest.mark.parametrize("n, d", [(50, 4), (10, 25)])  # the second: bilinear LMIs through their rank
def test_bracket_holds_the_clarabel_optimum(name, beta, n, d):
    lifting = LIFTINGS[name]
    X, y, weight = _problem(5 + int(1e4 * beta), n=n, d=d)
    reference = _reference(lifting, X, y, weight, beta)
    data = _data(lifting, X, y, weight, beta)
    assert squared_dual_applies(data)
    assert _DualBarrier(data).low_rank == (name == "bilinear" and n < d)
    solution = solve_squared_dual(data, tol=1e-4)
    assert solution.solver == "squared_dual"
    assert_certified_bracket(solution, reference)
    # A tighter tol is reached too (the primal point of a tight centring).
    tight = solve_squared_dual(data, tol=1e-7)
    assert_certified_bracket(tight, reference, tol=1e-7)


def test_bound_and_value_hold_when_stopped_early(monkeypatch):
    """Few Newton steps stop the barrier far from the optimum: the bracket still holds."""
    lifting = InputLifting()
    X, y, weight = _problem(11)
    beta = 1e-3
    reference = _reference(lifting, X, y, weight, beta)
    monkeypatch.setattr(squared_dual, "_MAX_NEWTON", 6)
    solution = solve_squared_dual(_data(lifting, X, y, weight, beta), tol=1e-4)
    assert not solution.converged and solution.relative_gap > 1e-3
    assert solution.lower_bound <= reference + 1e-9
    assert reference <= solution.value + 1e-9


def test_a_time_limit_keeps_the_bound_of_its_last_point(monkeypatch):
    """A time limit ends the solve without a new certificate: the result keeps the last
    verified bound (a valid one), or none before the first."""
    lifting = InputLifting()
    X, y, weight = _problem(7, n=40, d=8)
    beta = 1e-3
    reference = _reference(lifting, X, y, weight, beta)
    data = _data(lifting, X, y, weight, beta)
    assert solve_squared_dual(data, time_limit=0.0).lower_bound == 0.0  # none verified yet
    clock, bounds = [0.0], []

    def halved_bound(*args):
        # Half the verified bound (still a bound) leaves the point short of tol; the
        # barrier's clock then passes the limit before the next point.
        bounds.append(0.5 * verified_bound(*args))
        clock[0] = 1e9
        return bounds[-1]

    monkeypatch.setattr(squared_dual, "verified_bound", halved_bound)
    late = SimpleNamespace(perf_counter=lambda: time.perf_counter() + clock[0])
    monkeypatch.setattr(barrier, "time", late)
    solution = solve_squared_dual(data, time_limit=1e6)
    assert solution.status == "time_limit" and len(bounds) == 1
    assert 0.0 < solution.lower_bound == bounds[-1] <= reference
    assert reference <= solution.value + 1e-7 * max(1.0, reference)


def test_low_rank_lmis_equal_the_dense_ones(monkeypatch):
    """Where n <= p / 2 the LMIs go through their rank: their barrier value, gradient and
    Hessian equal the dense ones to float64 rounding (``p`` eps times the LMIs' condition)."""
    X, y, weight = _problem(8, n=12, d=39)
    phi = _DualBarrier(_data(InputLifting(), X, y, weight, 1e-2))
    assert phi.low_rank and phi.n <= squared_dual._LOW_RANK_SHARE * phi.p
    dense = _DualBarrier(phi.data)
    monkeypatch.setattr(dense, "low_rank", False)
    rng = np.random.RandomState(1)
    mu = phi.penalty / phi.p * rng.uniform(0.3, 0.5, phi.p)
    lam = rng.standard_normal(phi.n)
    M2, root = phi.parts(lam, np.zeros(phi.p))[0], 1.0 / np.sqrt(mu)
    lam /= np.abs(np.linalg.eigvalsh(root[:, None] * M2 * root)).max()  # on the LMIs' boundary
    for point in (0.5 * lam, 0.999 * lam):
        Sp, Sm, _ = phi.parts(point, mu)
        rounding = phi.p * np.finfo(float).eps * max(np.linalg.cond(Sp), np.linalg.cond(Sm))
        value = phi.value(point, mu, 3.0)
        assert value == pytest.approx(dense.value(point, mu, 3.0), rel=0,
                                      abs=rounding * (abs(value) + phi.p))
        for low, full in zip(phi.system(point, mu, 3.0), dense.system(point, mu, 3.0)):
            np.testing.assert_allclose(low, full, rtol=0, atol=rounding * np.abs(full).max())
    assert phi.value(1.001 * lam, mu, 3.0) == dense.value(1.001 * lam, mu, 3.0) == math.inf


@pytest.mark.parametrize("name", list(LIFTINGS))
def test_barrier_gradient_and_hessian_against_finite_differences(name):
    lifting = LIFTINGS[name]
    X, y, weight = _problem(3, n=30, d=3)
    weight[[4, 9]] = 0.0  # rows of weight 0 are left out of lam
    phi = _DualBarrier(_data(lifting, X, y, weight, 1e-2))
    assert phi.n == 28
    rng = np.random.RandomState(0)
    mu = np.full(phi.p, 0.4 * phi.penalty / phi.p) + 0.01 * phi.penalty / phi.p * rng.rand(phi.p)
    lam = rng.standard_normal(phi.n)
    M2 = phi.parts(lam, np.zeros(phi.p))[0]
    lam *= 0.5 * mu.min() / np.linalg.norm(M2, 2)  # strictly inside the LMIs
    tau = 37.0
    assert np.isfinite(phi.value(lam, mu, tau))
    hess, grad = phi.system(lam, mu, tau)
    hess = hess.copy()
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12, atol=1e-12 * np.abs(hess).max())
    eps = 1e-6
    for _ in range(3):
        d = rng.standard_normal(phi.n + phi.p)
        d[phi.n:] *= 1e-3 * phi.penalty / phi.p
        step = (lam + eps * d[: phi.n], mu + eps * d[phi.n:])
        back = (lam - eps * d[: phi.n], mu - eps * d[phi.n:])
        slope = (phi.value(*step, tau) - phi.value(*back, tau)) / (2 * eps)
        assert slope == pytest.approx(grad @ d, rel=1e-6, abs=1e-8 * np.abs(grad).max())
        curvature = (phi.system(*step, tau)[1] - phi.system(*back, tau)[1]) / (2 * eps)
        np.testing.assert_allclose(curvature, hess @ d, rtol=1e-5, atol=1e-6 * np.abs(hess @ d).max())


def test_solution_is_exactly_feasible_and_reproduces_its_scores():
    lifting = InputLifting()
    X, y, weight = _problem(2)
    beta = 1e-3
    data = _data(lifting, X, y, weight, beta)
    solution = solve_squared_dual(data)
    Q, rho = solution.Q[0], solution.rho[0]
    assert rho > 0
    np.testing.assert_allclose(np.diag(Q), rho, rtol=1e-12)
    assert np.linalg.eigvalsh(Q)[0] >= -1e-12 * rho
    scores = 2.0 * lifting.inner(X, solution.Z[0])
    np.testing.assert_allclose(scores, solution.scores[:, 0], rtol=1e-9, atol=1e-10)
    w = weight / weight.sum()
    value = w @ (scores - y) ** 2 + 2.0 * beta * data.n_lifted * rho
    assert value == pytest.approx(solution.value, rel=1e-10)


def test_zero_weights_are_the_fit_without_those_rows():
    lifting = InputLifting()
    X, y, weight = _problem(6)
    beta = 1e-3
    weight[:10] = 0.0
    full = solve_squared_dual(_data(lifting, X, y, weight, beta), tol=1e-7)
    subset = solve_squared_dual(_data(lifting, X[10:], y[10:], weight[10:], beta), tol=1e-7)
    assert full.value == pytest.approx(subset.value, rel=1e-6)
    assert full.lower_bound == pytest.approx(subset.lower_bound, rel=1e-6)


def test_dispatch_by_size_beta_options_and_lifted_side():
    lifting = InputLifting()
    X, y, weight = _problem(4, n=60, d=3)
    data = _data(lifting, X, y, weight, 1e-2)
    assert squared_dual_applies(data)
    assert not squared_dual_applies(_data(lifting, X, y, weight, 0.0))  # no trace budget
    n = routes.SQUARED_DUAL_MAX_SAMPLES
    for rows, applies in ((n, True), (n + 1, False)):
        X_many, y_many, _ = _problem(0, n=rows, d=3)
        assert squared_dual_applies(_data(lifting, X_many, y_many, np.ones(rows), 1e-2)) == applies
    hinge = LiftedData.from_lifting(lifting, X, y, weight, loss="hinge", beta=1e-2, n_outputs=1)
    assert not squared_dual_applies(hinge)
    # Options of the factor solver ask for the factor solver.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        solution = solve_relaxation(
            lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=1,
            solver_options={"rank": 4}, max_iter=5,
        )
    assert solution.solver == "native_numpy"
    # p = 4 here is below SQUARED_DUAL_FIRST_LIFTED: the factor solver goes
    # first (and would be the compact form's at its own size rule).
    calls = []
    dual_row = route("squared_dual")

    def spy(problem):
        calls.append(problem.data.n_lifted)
        return dual_row.solve(problem)

    spied = dataclasses.replace(dual_row, solve=spy)
    with use_routes(spied, "native_numpy", "native"):  # the compact form off
        first = solve_relaxation(lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=1)
    assert first.converged and first.solver == "native_numpy" and calls == []
    with use_routes(dataclasses.replace(spied, lead=lambda data: 0), "native_numpy", "native"):
        dual = solve_relaxation(lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=1)
    assert dual.converged and dual.solver == "squared_dual" and calls == [4]
    assert dual.value == pytest.approx(first.value, rel=2e-4)


def test_factor_solver_goes_first_then_the_dual_then_continues(monkeypatch):
    """Below SQUARED_DUAL_FIRST_LIFTED: factor iterations, the dual; the factor
    solver continues a dual left short of tol, from its point and with its bound."""
    lifting = InputLifting()
    X, y, weight = _problem(9, n=60, d=3)
    beta = 1e-4
    reference = _reference(lifting, X, y, weight, beta)
    monkeypatch.setattr(squared_dual, "_MAX_NEWTON", 8)  # the dual stops short of tol
    bounds = []
    dual_row = route("squared_dual")

    def spy(problem):
        solution = dual_row.solve(problem)
        bounds.append(solution.lower_bound)
        return solution

    # The compact form off; three factor iterations before the dual.
    staged = dataclasses.replace(dual_row, solve=spy, lead=lambda data: 3)
    with use_routes(staged, "native_numpy", "native"):
        solution = solve_relaxation(lifting, X, y, weight, loss="squared", beta=beta, n_outputs=1)
    assert len(bounds) == 1 and bounds[0] > 0
    assert solution.solver == "native_numpy" and solution.converged
    assert solution.solver_path == ("native_numpy", "squared_dual", "native_numpy")
    assert solution.lower_bound >= bounds[0]
    assert solution.n_iter > 3 + 8 - 1  # every stage's iterations and steps
    assert_certified_bracket(solution, reference)


def test_classifier_fits_through_the_dual_on_a_wide_lifting():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((120, 45))
    y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(int)
    model = SDPQuantizedClassifier(n_neurons=60, random_state=0).fit(X, y)
    assert model.solver_ == "squared_dual" and model.solver_status_ == "optimal"
    assert model.device_ == "cpu"
    assert model.certified_gap_ <= 1e-4 * model.relaxed_objective_
    assert model.score(X, y) > 0.75


def test_sdp_covariance_step_after_the_dual():
    """``covariance="sdp"`` solves its own problem by CVXPY whatever native solver ran."""
    rng = np.random.RandomState(1)
    X = rng.standard_normal((80, 41))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    model = SDPQuantizedClassifier(n_neurons=20, covariance="sdp", random_state=0).fit(X, y)
    assert model.solver_ == "squared_dual"
    K = model.covariance_[0]
    assert np.linalg.eigvalsh(K)[0] >= -1e-6 and np.allclose(np.diag(K), 1.0, atol=1e-5)


def test_squared_loss_rho_is_the_exact_minimiser():
    rng = np.random.RandomState(0)
    g = rng.standard_normal(30)
    t = 0.7 * g + 0.3 * rng.standard_normal(30)
    w = rng.uniform(0.1, 1.0, 30)

    def objective(rho):
        return w @ (rho * g - t) ** 2 + 0.05 * rho

    rho = squared_loss_rho(g, t, w, 0.05)
    assert rho > 0
    grid = np.linspace(0.0, 3.0 * rho, 20001)
    assert objective(rho) <= min(objective(r) for r in grid) + 1e-12
    assert squared_loss_rho(g, t, w, 100.0) == 0.0  # a penalty above every slope
    assert squared_loss_rho(np.zeros(30), t, w, 0.05) == 0.0


@pytest.fixture
def every_squared_block_through_the_dual():
    """The compact form off and the dual first whatever p: the checks' small
    data then exercise the dual barrier (at its own size rule they would go to
    the compact form)."""
    first = dataclasses.replace(route("squared_dual"), lead=lambda data: 0)
    with use_routes("hinge_dual", first, "native_numpy", "native"):
        yield


# A fixed beta: each check's fit is one solve in the dual. beta="auto"'s search (a
# warm-started path of solves per held-out fifth) through the dual is tested below.
@parametrize_with_checks([SDPQuantizedClassifier(beta=1e-5), SDPQuantizedRegressor(beta=1e-5)])
def test_estimators_pass_sklearn_checks_through_the_dual(
    estimator, check, every_squared_block_through_the_dual
):
    check(estimator)


@pytest.mark.parametrize("Estimator", [SDPQuantizedClassifier, SDPQuantizedRegressor])
def test_a_warm_started_path_through_the_dual_brackets_the_cold_optima(
    Estimator, every_squared_block_through_the_dual
):
    """beta="auto" and the CV estimators fit a path of betas, each solve warm-started from the
    last: at every beta its certified interval [lower_bound_, relaxed_objective_] holds the
    optimum, so it overlaps the interval of a cold solve at that beta."""
    X, y, _ = _problem(3, n=60, d=4)
    warm = Estimator(n_neurons=40, warm_start=True, random_state=0)
    for beta in (3e-2, 3e-3, 3e-4):
        warm.set_params(beta=beta).fit(X, y)
        cold = Estimator(n_neurons=40, beta=beta, random_state=0).fit(X, y)
        assert warm.solver_ == cold.solver_ == "squared_dual"
        assert warm.lower_bound_ <= cold.relaxed_objective_ + 1e-12
        assert cold.lower_bound_ <= warm.relaxed_objective_ + 1e-12


@pytest.mark.parametrize("Estimator", [SDPQuantizedClassifier, SDPQuantizedRegressor])
def test_auto_beta_through_the_dual_chooses_as_the_default_routes_do(
    Estimator, every_squared_block_through_the_dual, iris
):
    """The search's solves through the dual reach the optima the default routes reach: the
    held-out errors agree to the solvers' tolerance (the dual's floor may end the candidates
    sooner), and so does the beta chosen from them (on iris the regressor's choice clears the
    one-standard-error line by 0.002, the routes' errors differ by 1e-4)."""
    X, y = iris
    through_the_dual = Estimator(random_state=0).fit(X, y)
    with use_routes(*routes.ROUTES):
        by_default = Estimator(random_state=0).fit(X, y)
    assert through_the_dual.solver_ == "squared_dual" and by_default.solver_ != "squared_dual"
    assert through_the_dual.beta_ == by_default.beta_


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt])
def test_a_refit_failing_in_the_dual_leaves_the_model_as_it_was(
    failure, every_squared_block_through_the_dual
):
    X, y, _ = _problem(12, n=80, d=4)
    model = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X, y)
    assert model.solver_ == "squared_dual"
    before = {key: (value.copy() if isinstance(value, np.ndarray) else value)
              for key, value in model.__dict__.items()}

    def fail(*args, **kwargs):
        raise failure("injected")

    failing = [
        dataclasses.replace(row, solve=fail) if row.name == "squared_dual" else row
        for row in routes.active_routes()
    ]
    with use_routes(*failing), pytest.raises(failure):
        # Other data (3 features): a partial refit would show in n_features_in_ at once.
        model.set_params(beta=1e-3).fit(X[:60, :3], y[:60])
    model.set_params(beta=before["beta"])
    assert set(model.__dict__) == set(before)
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(model.__dict__[key], value)
        elif key != "beta":
            assert model.__dict__[key] is value or model.__dict__[key] == value, key
