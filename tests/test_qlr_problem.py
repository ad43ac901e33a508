"""skquad.linear_model._qlr_problem: the one QLR problem that every driver consumes."""

import dataclasses
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from skquad import QuadraticLogisticRegression
from skquad.linear_model import _qlr_drivers as drivers
from skquad.linear_model._qlr_problem import Solution, build_problem


def _data(n=40, d=6, n_classes=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) if n_classes == 2 else np.arange(n) % n_classes
    return X, y


def _problem(model, route, X, y):
    model._validate_params()
    X, y_encoded, w = model._validate_training_data(X, y)
    data = drivers.training_rows(X, y_encoded, w, model.classes_, merge=True)
    problem = build_problem(model, route, data, None, step_size=(0.01, "constant"))
    return problem, data


@pytest.mark.parametrize("route", [drivers.LBFGS, drivers.NEWTON], ids=["lbfgs", "newton"])
def test_each_driver_takes_the_problem_and_returns_its_optimum(route):
    """Both full-batch drivers, called on the same problem, reach the same optimum."""
    X, y = _data()
    model = QuadraticLogisticRegression(C=2.0, tol=1e-10, max_iter=200, quadratic_C=None)
    problem, data = _problem(model, route, X, y)
    solution = route.solve(problem, data)
    assert isinstance(solution, Solution) and solution.n_iter > 0
    reference = QuadraticLogisticRegression(C=2.0, tol=1e-10, max_iter=200, solver="lbfgs",
                                            quadratic_C=None).fit(X, y)
    arrays = problem.fitted_arrays(solution.params)
    np.testing.assert_allclose(arrays["Q_"], reference.Q_, atol=1e-6)
    assert solution.loss == pytest.approx(reference.loss_, rel=1e-9)


def test_the_policy_is_decided_once_from_the_routes_cost_and_placement():
    """The route's flops set the thread count, its bytes the memory check, its placement wins."""
    X, y = _data()
    model = QuadraticLogisticRegression(n_threads=3)
    problem, _ = _problem(model, drivers.LBFGS, X, y)
    assert problem.policy.n_threads == 3
    pinned = dataclasses.replace(drivers.LBFGS, placement={"n_threads": 1, "device": "cpu"})
    assert _problem(model, pinned, X, y)[0].policy.n_threads == 1
    huge = dataclasses.replace(drivers.LBFGS, cost=lambda problem, n_rows: (1.0, 1e30))
    with pytest.raises(MemoryError, match="rank=None"):
        _problem(model, huge, X, y)


@pytest.mark.parametrize("Q_init", ["zeros", "identity", "random"])
@pytest.mark.parametrize("rank", [None, 2])
def test_the_start_depends_on_Q_init_and_rank_not_on_the_dtype(Q_init, rank):
    X, y = _data(d=4)
    starts = []
    for dtype in (np.float64, np.float32):
        model = QuadraticLogisticRegression(Q_init=Q_init, rank=rank, random_state=0, fit_intercept=False)
        problem, _ = _problem(model, drivers.LBFGS, X.astype(dtype), y)
        starts.append(problem.initial_params())
    for a, b in zip(*starts):
        assert a.dtype == b.dtype == torch.float64
        torch.testing.assert_close(a, b)
    Q = problem.fitted_arrays(starts[0])["Q_"][0]
    expected = {"zeros": np.zeros((4, 4)), "identity": None, "random": None}[Q_init]
    if rank is None and Q_init == "identity":
        expected = np.eye(4)
    if expected is not None:
        np.testing.assert_array_equal(Q, expected)
    elif Q_init == "random":
        assert np.abs(Q).max() > 0 and np.allclose(Q, Q.T)


def test_publication_sets_and_removes_the_fitted_attributes():
    """An SGD fit's loss_curve_ and t_ are removed when another driver publishes."""
    X, y = _data()
    model = QuadraticLogisticRegression(solver="sgd", max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert hasattr(model, "loss_curve_") and hasattr(model, "t_")
    problem, data = _problem(model, drivers.NEWTON, X, y)
    params = problem.initial_params()
    problem.publish(Solution(params, 0, None), "newton-dual", data.given)
    assert not hasattr(model, "loss_curve_") and not hasattr(model, "t_")
    assert model.solver_ == "newton-dual" and model.n_iter_.tolist() == [0]
    # no step ran: the objective at the published (zero) model is log(2)
    assert model.loss_ == pytest.approx(np.log(2.0))
    np.testing.assert_array_equal(model.Q_, np.zeros((1, 6, 6)))
