"""The one L-BFGS driver (skquad._training._lbfgs) and its warnings."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from skquad._training import (
    Trainer,
    TrainingConfig,
    lbfgs_convergence_message,
    minimize_lbfgs,
)


def quadratic(theta):
    scales = np.arange(1.0, theta.size + 1)
    return float(0.5 * np.sum(scales * theta**2)), scales * theta


def test_minimize_lbfgs_reaches_the_minimum_and_reports_iterations():
    seen = []
    result = minimize_lbfgs(quadratic, np.ones(5), max_iter=100, max_fun=1000, tol=1e-10, ftol=0.0,
                            on_iteration=lambda i, loss, theta: seen.append((i, loss)) and False)
    np.testing.assert_allclose(result.x, 0.0, atol=1e-8)
    assert [i for i, _ in seen] == list(range(1, result.nit + 1))
    assert lbfgs_convergence_message(result, 100, 1000) is None


def test_a_callback_can_stop_the_solver():
    result = minimize_lbfgs(quadratic, np.ones(5), max_iter=100, max_fun=1000, tol=1e-12,
                            on_iteration=lambda i, loss, theta: i == 2)
    assert result.stopped_by_callback and result.nit == 2
    assert lbfgs_convergence_message(result, 100, 1000) is None


def test_gradient_scale_moves_the_gradient_test_to_the_scaled_coordinates():
    """The test reads gradient / gradient_scale: with scales of 1e3 it passes where
    scipy's own test on the gradient (gtol=tol) cannot yet, and is reported as scipy
    reports its gradient test."""
    tol = 1e-3
    plain = minimize_lbfgs(quadratic, np.ones(5), max_iter=100, max_fun=1000, tol=tol, ftol=0.0)
    scale = np.full(5, 1e3)
    scaled = minimize_lbfgs(quadratic, np.ones(5), max_iter=100, max_fun=1000, tol=tol, ftol=0.0,
                            gradient_scale=scale)
    assert scaled.success and scaled.status == 0 and "PGTOL" in scaled.message
    assert not scaled.stopped_by_callback
    assert lbfgs_convergence_message(scaled, 100, 1000) is None
    assert scaled.nit < plain.nit
    _, gradient = quadratic(scaled.x)
    assert np.max(np.abs(gradient) / scale) <= tol < np.max(np.abs(gradient))
    # unit scales: the same test as scipy's, the same iterates
    unit = minimize_lbfgs(quadratic, np.ones(5), max_iter=100, max_fun=1000, tol=tol, ftol=0.0,
                          gradient_scale=np.ones(5))
    assert unit.nit == plain.nit and np.array_equal(unit.x, plain.x)


def test_message_names_the_limit_that_stopped_scipy():
    by_iterations = minimize_lbfgs(quadratic, np.ones(50), max_iter=2, max_fun=1000, tol=1e-12)
    message = lbfgs_convergence_message(by_iterations, 2, 1000)
    assert "max_iter=2" in message and "max_fun" not in message
    by_evaluations = minimize_lbfgs(quadratic, np.ones(50), max_iter=100, max_fun=1, tol=1e-12)
    message = lbfgs_convergence_message(by_evaluations, 100, 1)
    assert "max_fun=1" in message and "max_iter" not in message


def test_trainer_lbfgs_warns_naming_max_fun_at_the_users_line():
    X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    module = torch.nn.Linear(4, 2, dtype=torch.float64)
    trainer = Trainer(
        module,
        lambda out, target: torch.nn.functional.cross_entropy(out, target, reduction="none"),
        config=TrainingConfig(solver="lbfgs", max_fun=1),
        dtype=torch.float64,
    )
    with pytest.warns(ConvergenceWarning, match="max_fun=1") as record:
        result = trainer.fit(X, y, max_iter=100)
    assert "Increase the number of iterations" not in str(record[0].message)
    assert record[0].filename == __file__
    assert not result.converged and result.loss == pytest.approx(result.best_loss)


def logistic_problem(seed=0):
    """A float64 logistic regression objective and its twin evaluated in float32."""
    rng = np.random.RandomState(seed)
    X = rng.randn(400, 8)
    y = (X @ rng.randn(8) + 0.5 * rng.randn(400) > 0).astype(float)

    def make(dtype):
        rows, labels = X.astype(dtype), y.astype(dtype)

        def objective(theta):
            z = rows @ theta.astype(dtype)
            loss = np.logaddexp(0.0, z).sum() - labels @ z + 0.5 * theta @ theta
            residuals = 1.0 / (1.0 + np.exp(-z)) - labels
            return float(loss) / 400, (rows.T @ residuals).astype(np.float64) / 400 + theta / 400

        return objective

    return make(np.float64), make(np.float32)


def counting(objective, calls, name):
    def counted(theta):
        calls.append(name)
        return objective(theta)

    vars(counted).update(vars(objective))  # the twin's attributes
    return counted


@pytest.mark.parametrize("engine", ["scipy", "compact"])
def test_coarse_phase_then_exact_ends_on_an_exact_evaluation_at_the_exact_fits_optimum(engine):
    """The float32 twin's phase only chooses where the float64 phase starts: the fit
    ends on a float64 evaluation whose gradient passes tol, at the pure float64 fit's
    objective up to what tol allows (|f - f*| <= |g|^2 / (2 mu), mu >= 1/400 here),
    on either engine."""
    exact, twin = logistic_problem()
    twin.gradient_floor = 1e-9
    calls = []
    kwargs = dict(max_iter=200, max_fun=1000, tol=1e-6, ftol=64 * np.finfo(float).eps,
                  engine=engine)
    mixed = minimize_lbfgs(counting(exact, calls, "exact"), np.zeros(8),
                           coarse_objective=counting(twin, calls, "coarse"), **kwargs)
    pure = minimize_lbfgs(exact, np.zeros(8), **kwargs)
    assert calls[0] == "coarse" and calls[-1] == "exact" and calls.count("coarse") > 5
    assert mixed.success and mixed.nfev == len(calls)
    value, gradient = exact(mixed.x)
    assert mixed.fun == value and np.max(np.abs(gradient)) <= 1e-6
    assert abs(mixed.fun - pure.fun) <= 0.5 * 400 * 2e-12


@pytest.mark.parametrize("engine", ["scipy", "compact"])
def test_a_fit_never_stops_on_a_coarse_evaluation(engine):
    """A twin whose gradient looks converged long before the exact one (a hundredth of
    it), or that overflows, hands over to the exact phase, which converges."""
    exact, _ = logistic_problem(1)

    def flattering(theta):
        value, gradient = exact(theta)
        return value, 0.01 * gradient

    def overflowing(theta):
        return np.inf, np.zeros_like(theta)

    for twin in (flattering, overflowing):
        twin.gradient_floor = 0.0
        result = minimize_lbfgs(exact, np.zeros(8), max_iter=200, max_fun=1000, tol=1e-6,
                                ftol=0.0, coarse_objective=twin, engine=engine)
        assert result.success and np.max(np.abs(exact(result.x)[1])) <= 1e-6


@pytest.mark.parametrize("engine", ["scipy", "compact"])
@pytest.mark.parametrize("max_iter", [4, 200])
def test_coarse_phase_settles_its_switching_point_and_shares_the_iteration_budget(max_iter,
                                                                                  engine):
    """``settle`` maps the switching point where the fit goes on, not where a limit
    stopped it (that fit ends on the iterate it reported); max_iter counts both phases."""
    exact, twin = logistic_problem(2)
    twin.gradient_floor = 1e-3  # the coarse phase stops early, the exact one goes on
    settled = []
    twin.settle = lambda theta: settled.append(theta.copy()) or theta
    reported = []
    result = minimize_lbfgs(exact, np.zeros(8), max_iter=max_iter, max_fun=1000, tol=1e-6,
                            ftol=0.0, coarse_objective=twin, engine=engine,
                            on_iteration=lambda i, loss, theta: reported.append(i) and False)
    assert reported == list(range(1, result.nit + 1))
    if max_iter == 4:
        assert result.nit == 4 and not settled
        assert lbfgs_convergence_message(result, 4, 1000) is not None
    else:
        assert len(settled) == 1 and result.success and result.nit > len(settled)

