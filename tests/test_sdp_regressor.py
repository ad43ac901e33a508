"""SDPQuantizedRegressor: the squared-loss SDP as a regressor, certified against CLARABEL."""

import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skquad import SDPQuantizedRegressor


def _data(n_outputs=None, n=80, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 3))
    y = X[:, 0] * X[:, 1] + 0.5 * X[:, 2] + 0.1 * rng.standard_normal(n)
    if n_outputs is not None:
        y = np.column_stack([y] + [X[:, k % 3] ** 2 for k in range(n_outputs - 1)])
    return X, y


@pytest.mark.parametrize("n_outputs", [None, 2])
@pytest.mark.parametrize("beta", [1e-3, 1e-1])
def test_certificate_brackets_the_clarabel_optimum(n_outputs, beta):
    X, y = _data(n_outputs)
    w = np.random.RandomState(1).uniform(0.5, 2.0, len(X))
    native = SDPQuantizedRegressor(n_neurons=60, beta=beta, random_state=0).fit(X, y, sample_weight=w)
    reference = SDPQuantizedRegressor(
        n_neurons=60, beta=beta, solver="CLARABEL", random_state=0
    ).fit(X, y, sample_weight=w)
    # CLARABEL's relaxed value is accurate to ~1e-8 relative; the native
    # bound is a proof and its value a feasible point's objective.
    optimum = reference.relaxed_objective_
    assert native.lower_bound_ <= optimum + 1e-7 * max(1.0, optimum)
    assert optimum <= native.relaxed_objective_ + 1e-7 * max(1.0, optimum)
    assert native.certified_gap_ <= 1e-4 * native.relaxed_objective_
    # No binary network beats the bound; the refit never rises above the sample.
    assert native.lower_bound_ <= native.objective_ <= native.sampled_objective_ + 1e-12


@pytest.mark.parametrize("n_outputs", [None, 1, 3])
def test_predictions_have_the_fitted_shape(n_outputs):
    X, y = _data(n_outputs)
    if n_outputs == 1:
        y = y[:, :1]
    model = SDPQuantizedRegressor(n_neurons=90, random_state=0).fit(X, y)
    assert model.predict(X).shape == y.shape
    assert model.relaxed_predict(X).shape == y.shape
    assert model.alpha_.shape == (90, model.n_outputs_)
    assert model.score(X, y) > 0.8


def test_resample_and_export_reproduce_predict():
    X, y = _data()
    model = SDPQuantizedRegressor(n_neurons=50, random_state=0).fit(X, y)
    network = model.export_quadratic_network()
    np.testing.assert_allclose(network.scores(X)[:, 0], model.predict(X), rtol=1e-9, atol=1e-9)
    model.resample(120, random_state=1)
    assert model.n_neurons_ == 120 and model.U_.shape[0] == 120
    assert model.lower_bound_ <= model.objective_


def test_bad_targets_leave_the_previous_model():
    X, y = _data()
    model = SDPQuantizedRegressor(n_neurons=30, random_state=0).fit(X, y)
    alpha = model.alpha_.copy()
    with pytest.raises(ValueError, match="NaN"):
        model.fit(X, np.where(np.arange(len(y)) == 0, np.nan, y))
    with pytest.raises(ValueError, match="must be numeric"):
        model.fit(X, np.array(["a", "b"] * (len(y) // 2)))
    np.testing.assert_array_equal(model.alpha_, alpha)


DATA = Path(os.environ.get("SKQUAD_DATA", "missing")).parent / "regression"


@pytest.mark.skipif(not (DATA / "concrete.csv").exists(), reason="the shared regression data is not beside the checkout")
def test_concrete_certified_and_at_least_as_accurate_as_ridge():
    import pandas as pd

    frame = pd.read_csv(DATA / "concrete.csv")
    y = frame.pop("compressive_strength").to_numpy()
    X = frame.to_numpy(dtype=np.float64)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    scaler = StandardScaler().fit(X_train)
    mean, scale = y_train.mean(), y_train.std()
    model = SDPQuantizedRegressor(random_state=0).fit(scaler.transform(X_train), (y_train - mean) / scale)
    assert model.certified_gap_ <= 1e-3 * model.relaxed_objective_
    r2 = 1 - np.mean((model.predict(scaler.transform(X_test)) * scale + mean - y_test) ** 2) / np.var(y_test)
    ridge = Ridge().fit(scaler.transform(X_train), y_train).score(scaler.transform(X_test), y_test)
    assert r2 >= ridge


def test_a_solver_failure_on_badly_scaled_targets_says_to_standardize_y(monkeypatch):
    # Issue 19 (found by tests/test_properties.py): at |y| ~ 1e8 Clarabel
    # reported the compact SDP dual infeasible, in the solver's words only.
    # The solver's failure is simulated: whether a solver fails at a given
    # scale depends on its rounding, the explanation must not.
    import skquad.quantized._sdp as sdp_module
    from skquad.convex.solution import SolverFailedError

    def failing_solver(*args, **kwargs):
        raise SolverFailedError("Clarabel ended with status DualInfeasible")

    monkeypatch.setattr(sdp_module, "solve_relaxation", failing_solver)
    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    y = X[:, 0] * X[:, 1] + 0.1 * rng.randn(30)
    with pytest.raises(ValueError, match=r"magnitude up to 4.31e\+08.*DualInfeasible.*standardize y"):
        SDPQuantizedRegressor(n_neurons=20, random_state=0).fit(X, y * 1e8)
    # Targets of order 1: the solver's own error, nothing to explain.
    with pytest.raises(SolverFailedError, match="DualInfeasible"):
        SDPQuantizedRegressor(n_neurons=20, random_state=0).fit(X, y)
