"""SDPQuantizedClassifier's solve: native default, CVXPY reference, warm starts, messages."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning

import skquad.convex.relaxation as relaxation_module
from skquad import SDPQuantizedClassifier
from skquad.datasets import make_planted_quantized


@pytest.fixture(scope="module")
def planted():
    return make_planted_quantized(n_samples=120, n_features=5, n_planted=4, random_state=1)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return X[::2, :6], y[::2]


@pytest.mark.parametrize("dataset", ["planted", "wine"])
def test_native_default_brackets_clarabel_and_predicts_like_its_relaxation(dataset, request):
    X, y = request.getfixturevalue(dataset)
    params = {"loss": "logistic", "beta": 1e-2, "n_neurons": 50, "random_state": 0}
    native = SDPQuantizedClassifier(**params).fit(X, y)
    reference = SDPQuantizedClassifier(solver="CLARABEL", **params).fit(X, y)
    optimum = reference.relaxed_objective_
    assert native.solver_ == "native" and native.solver_status_ == "optimal"
    assert native.lower_bound_ <= optimum + 1e-7 <= native.relaxed_objective_ + 1e-6
    assert native.certified_gap_ == pytest.approx(native.relaxed_objective_ - native.lower_bound_)
    assert native.certified_gap_ <= 1e-4 * native.relaxed_objective_
    assert reference.lower_bound_ <= optimum
    # Same relaxed model up to the solvers' accuracy.
    agree = np.mean(native.relaxed_predict(X) == reference.relaxed_predict(X))
    assert agree >= 0.97
    p = native.n_lifted_features_
    for k, rho in enumerate(native.rho_):
        np.testing.assert_allclose(np.diag(native.Q_[k]), rho, rtol=1e-12)
        np.testing.assert_array_equal(native.Z_[k], native.Q_[k][:p, p:])


def test_warm_start_with_a_new_beta_starts_from_the_previous_factors(planted, monkeypatch):
    X, y = planted
    starts = []
    original = relaxation_module.solve_factored

    def recording(data, **kwargs):
        starts.append(kwargs.get("init"))
        return original(data, **kwargs)

    monkeypatch.setattr(relaxation_module, "solve_factored", recording)
    model = SDPQuantizedClassifier(loss="logistic", beta=2e-2, warm_start=True, random_state=0)
    model.fit(X, y)
    cold_iterations = model.n_iter_
    model.set_params(beta=1e-2).fit(X, y)
    assert starts[0] is None and starts[1] is not None
    assert starts[1].factors is not None and starts[1].rho[0] > 0
    fresh = SDPQuantizedClassifier(loss="logistic", beta=1e-2, random_state=0).fit(X, y)
    assert model.n_iter_ < fresh.n_iter_ or model.n_iter_ < cold_iterations
    np.testing.assert_allclose(model.relaxed_objective_, fresh.relaxed_objective_, rtol=2e-4)


def test_huge_beta_says_the_optimum_is_the_zero_network(planted):
    X, y = planted
    for solver in (None, "CLARABEL"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = SDPQuantizedClassifier(beta=1e6, solver=solver, random_state=0).fit(X, y)
        messages = [str(w.message) for w in caught]
        assert any("zero network" in m and "beta" in m for m in messages), messages
        assert not any(issubclass(w.category, ConvergenceWarning) for w in caught), messages
        assert model.lower_bound_ == pytest.approx(1.0, rel=1e-6)  # squared loss of f = 0


def test_stopping_short_warns_with_the_remedies(planted):
    X, y = planted
    with pytest.warns(ConvergenceWarning, match="max_iter") as caught:
        model = SDPQuantizedClassifier(loss="logistic", max_iter=3, random_state=0).fit(X, y)
    assert "tol=" in str(caught[0].message)
    assert model.solver_status_ == "max_iter" and model.lower_bound_ <= model.relaxed_objective_


def test_verbose_prints_the_solver_progress(planted, capsys):
    X, y = planted
    SDPQuantizedClassifier(loss="logistic", verbose=1, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines and all(line.startswith("Iteration ") for line in lines)
    assert all("lower bound = " in line and "gap = " in line and "rank = " in line for line in lines)


@pytest.mark.parametrize(
    "params, error, message",
    [
        ({"solver": "OSQP"}, ValueError, "cannot solve semidefinite programs"),
        ({"solver_options": {"bogus": 1}}, TypeError, "solver_options"),
        ({"solver": "CLARABEL", "solver_options": {"bogus": 1}}, TypeError, "solver_options"),
        ({"device": "tpu"}, ValueError, "device"),
    ],
)
def test_solver_parameter_errors_are_clear(planted, params, error, message):
    X, y = planted
    with pytest.raises(error, match=message):
        SDPQuantizedClassifier(**params).fit(X, y)
