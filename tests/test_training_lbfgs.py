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
