"""QLR's dual (kernel) Newton solver: the L-BFGS path's optimum, the gradient test, the chooser."""

import warnings

import numpy as np
import pytest
import scipy.sparse
import torch
from sklearn.callback.tests._utils import RecordingCallback
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

import skquad.linear_model._qlr_drivers as drivers
from skquad import QuadraticLogisticRegression
from skquad.nn.quadratic_dual import dual_to_primal
from skquad.nn.quadratic_ridge import degree2_kernel


def _problem(n=60, d=12, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] + 0.5 * rng.randn(n) > 0).astype(int)
    return X, y, rng.uniform(0.5, 2.0, n)


def _objective_and_gradient(model, X, y, sample_weight, C, cross_weight):
    """QLR's objective over ``C * sum(s)`` and its gradient in the full matrix's entries, by autograd.

    Independent of both solvers: the penalty written on the full matrix
    (``sum_i Q_ii^2 + cross_weight * sum_{i != j} Q_ij^2``), whose partial
    derivative in ``Q_ij`` is the entry that QLR's gradient test reads.
    """
    s = torch.as_tensor(sample_weight / sample_weight.sum())
    Q = torch.tensor(model.Q_[0].astype(np.float64), requires_grad=True)
    w = torch.tensor(model.coef_[0].astype(np.float64), requires_grad=True)
    b = torch.tensor(float(model.intercept_[0]), dtype=torch.float64, requires_grad=True)
    X_t = torch.as_tensor(X)
    z = torch.einsum("ni,ij,nj->n", X_t, Q, X_t) + X_t @ w + b
    loss = s @ torch.nn.functional.softplus(torch.where(torch.as_tensor(y == 1), -z, z))
    off = ~torch.eye(Q.shape[0], dtype=torch.bool)
    penalty = (torch.diagonal(Q) ** 2).sum() + cross_weight * (Q[off] ** 2).sum() + (w**2).sum()
    objective = loss + 0.5 / (C * sample_weight.sum()) * penalty
    objective.backward()
    gradient = max(float(Q.grad.abs().max()), float(w.grad.abs().max()))
    if model.fit_intercept:  # (b is fixed at 0 otherwise)
        gradient = max(gradient, abs(float(b.grad)))
    return float(objective.detach()), gradient


def test_degree2_kernel_is_the_feature_inner_product():
    """``K = S + T + (S o S - T) / c`` is ``psi psi^T`` for ``psi = [x_a^2, sqrt(2/c) x_a x_b, x_a]``."""
    X = np.random.RandomState(1).randn(7, 4)
    rows, cols = np.triu_indices(4, 1)
    for c in (1.0, 2.0):
        psi = np.hstack([X**2, np.sqrt(2.0 / c) * X[:, rows] * X[:, cols], X])
        np.testing.assert_allclose(degree2_kernel(X, c), psi @ psi.T, rtol=1e-12, atol=1e-12)
        # and dual_to_primal gives the model whose penalty is alpha^T K alpha
        alpha = np.random.RandomState(2).randn(7)
        Q, coef = dual_to_primal(X, alpha, c)
        off = ~np.eye(4, dtype=bool)
        penalty = np.sum(np.diag(Q) ** 2) + c * np.sum(Q[off] ** 2) + coef @ coef
        np.testing.assert_allclose(penalty, alpha @ degree2_kernel(X, c) @ alpha, rtol=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("penalty", ["polynomial", "frobenius"])
def test_dual_newton_reaches_the_lbfgs_optimum(fit_intercept, penalty):
    """Weighted (sample_weight and class_weight), tol=1e-8: the objective and model of L-BFGS."""
    X, y, sample_weight = _problem()
    params = dict(C=2.0, tol=1e-8, penalty=penalty, fit_intercept=fit_intercept,
                  class_weight={0: 1.0, 1: 3.0})
    dual = QuadraticLogisticRegression(**params, quadratic_C=None).fit(
        X, y, sample_weight=sample_weight)
    lbfgs = QuadraticLogisticRegression(solver="lbfgs", **params, quadratic_C=None).fit(
        X, y, sample_weight=sample_weight
    )
    assert (dual.solver_, lbfgs.solver_) == ("newton-dual", "lbfgs")
    assert dual.n_iter_[0] < 12 < lbfgs.n_iter_[0]
    cross_weight = 2.0 if penalty == "polynomial" else 1.0
    weights = sample_weight * np.where(y == 1, 3.0, 1.0)
    f_dual, g_dual = _objective_and_gradient(dual, X, y, weights, 2.0, cross_weight)
    f_lbfgs, _ = _objective_and_gradient(lbfgs, X, y, weights, 2.0, cross_weight)
    assert f_dual == pytest.approx(dual.loss_, rel=1e-12)
    assert f_dual <= f_lbfgs + 1e-14
    assert f_dual == pytest.approx(f_lbfgs, rel=1e-11)
    # the gradient test holds at the returned point (autograd, not the solver's numbers)
    assert g_dual <= 1e-8
    np.testing.assert_allclose(dual.Q_, lbfgs.Q_, atol=1e-5)
    np.testing.assert_allclose(dual.coef_, lbfgs.coef_, atol=1e-5)
    np.testing.assert_allclose(dual.intercept_, lbfgs.intercept_, atol=1e-5)
    if not fit_intercept:
        assert dual.intercept_[0] == 0.0


def test_dual_newton_is_the_pipeline():
    """``PolynomialFeatures(2) + LogisticRegression`` with the same weights: the same scores."""
    X, y, sample_weight = _problem()
    dual = QuadraticLogisticRegression(C=0.5, tol=1e-8, quadratic_C=None).fit(
        X, y, sample_weight=sample_weight)
    pipe = make_pipeline(
        PolynomialFeatures(2, include_bias=False), LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000)
    ).fit(X, y, logisticregression__sample_weight=sample_weight)
    np.testing.assert_allclose(dual.decision_function(X), pipe.decision_function(X), atol=1e-5)


def _spy(monkeypatch):
    calls = []
    solver = drivers.kernel_newton_logistic

    def spy(*args, **kwargs):
        calls.append(args[0].shape)
        return solver(*args, **kwargs)

    monkeypatch.setattr(drivers, "kernel_newton_logistic", spy)
    return calls


@pytest.mark.parametrize(
    "case, chosen",
    [
        ("binary", True),
        ("duplicated rows, 40 distinct", True),
        ("three classes", False),
        ("rank", False),
        ("sgd", False),
        ("solver lbfgs", False),
        ("Q_init identity", False),
        ("C inf", False),
        ("sparse", False),
        ("more rows than features", False),
        ("more than 300 rows", False),
    ],
)
def test_the_chooser_picks_the_dual_only_where_intended(monkeypatch, case, chosen):
    calls = _spy(monkeypatch)
    X, y, _ = _problem(n=40, d=8)  # 40 rows, 44 degree-2 features
    params = dict(max_iter=3)
    if case == "duplicated rows, 40 distinct":
        X, y = np.vstack([X, X]), np.concatenate([y, y])  # 80 rows, merged to 40
    elif case == "three classes":
        y = np.arange(40) % 3
    elif case == "rank":
        params.update(rank=2, random_state=0)
    elif case == "sgd":
        params.update(solver="sgd", random_state=0)
    elif case == "solver lbfgs":
        params.update(solver="lbfgs")
    elif case == "Q_init identity":
        params.update(Q_init="identity")
    elif case == "C inf":
        params.update(C=np.inf)
    elif case == "sparse":
        X = scipy.sparse.csr_matrix(X)
    elif case == "more rows than features":
        X, y, _ = _problem(n=45, d=8)
    elif case == "more than 300 rows":
        X, y, _ = _problem(n=301, d=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = QuadraticLogisticRegression(**params, quadratic_C=None).fit(X, y)
    assert bool(calls) == chosen
    expected = "newton-dual" if chosen else ("sgd" if case == "sgd" else "lbfgs")
    assert model.solver_ == expected


def test_warm_start_continues_with_lbfgs(monkeypatch):
    """A warm start continues the previous model (the dual starts at 0): L-BFGS, already converged."""
    X, y, _ = _problem()
    model = QuadraticLogisticRegression(warm_start=True, tol=1e-6, quadratic_C=None).fit(X, y)
    first = model.Q_.copy()
    calls = _spy(monkeypatch)
    model.fit(X, y)
    assert not calls and model.n_iter_[0] <= 2
    np.testing.assert_allclose(model.Q_, first, atol=1e-5)


def test_max_iter_verbose_and_callbacks_count_newton_steps(capsys):
    X, y, _ = _problem()
    with pytest.warns(ConvergenceWarning, match=r"(?s)after 2 iteration\(s\).*max_iter=2"):
        model = QuadraticLogisticRegression(max_iter=2, verbose=1).fit(X, y)
    assert model.n_iter_.tolist() == [2] and model.n_iter_.dtype == np.int32
    assert len(capsys.readouterr().out.strip().splitlines()) == 2
    with pytest.warns(ConvergenceWarning, match="max_iter=0"):
        zero = QuadraticLogisticRegression(max_iter=0).fit(X, y)
    assert zero.n_iter_[0] == 0 and not zero.Q_.any() and zero.intercept_[0] == 0.0
    # one subtask per step, and the last one begun and closed, as for L-BFGS
    callback = RecordingCallback()
    model = QuadraticLogisticRegression().set_callbacks(callback).fit(X, y)
    count = lambda name: sum(record["name"] == name for record in callback.record)
    assert count("on_fit_task_begin") == count("on_fit_task_end") == 1 + model.n_iter_[0] + 1


def test_float32_input():
    X, y, _ = _problem()
    single = QuadraticLogisticRegression(tol=1e-6).fit(X.astype(np.float32), y)
    double = QuadraticLogisticRegression(tol=1e-6).fit(X, y)
    # the training dtype, as the L-BFGS path's
    assert single.Q_.dtype == single.coef_.dtype == single.intercept_.dtype == np.float32
    np.testing.assert_allclose(single.Q_, double.Q_, atol=1e-5)
    np.testing.assert_allclose(single.coef_, double.coef_, atol=1e-5)
