"""SDPQuantizedClassifier and BackpropQuantizedClassifier."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

import skquad.quantized._sdp as quantized_module
from skquad import BackpropQuantizedClassifier, SDPQuantizedClassifier
from skquad.convex import SolverFailedError, loss_value
from skquad.datasets import make_planted_quantized
from skquad.nn.bilinear import bilinear_curvature as _bilinear_curvature


@pytest.fixture(scope="module")
def planted():
    X, y = make_planted_quantized(n_samples=100, n_features=8, n_planted=5, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def planted_model(planted):
    X, y = planted
    return SDPQuantizedClassifier(
        n_neurons=10, loss="hinge", beta=1e-3, solver="CLARABEL", random_state=0
    ).fit(X, y)


def test_sampled_objective_approaches_the_bound_and_never_falls_below(planted_model):
    model = planted_model
    gaps = {}
    for m in (10, 100, 1000, 10000):
        objectives = [model.resample(m, random_state=seed).objective_ for seed in range(5)]
        assert min(objectives) >= model.lower_bound_ - 1e-7
        gaps[m] = np.mean(objectives) - model.lower_bound_
    assert gaps[10] > gaps[100] > gaps[1000] > gaps[10000]
    # Theorem 3: the gap shrinks like 1/sqrt(m); with 10000 neurons it is a
    # small fraction of the bound.
    assert gaps[10000] < 0.25 * model.lower_bound_ + 0.02
    # The relaxed solution itself fits the planted labels; so does the network.
    X, y = make_planted_quantized(n_samples=100, n_features=8, n_planted=5, random_state=0)
    model.resample(10000, random_state=0)
    assert model.score(X, y) > 0.9
    assert np.mean(model.relaxed_predict(X) == y) > 0.9


def test_resample_and_warm_start_do_not_solve_again(planted, monkeypatch):
    X, y = planted
    calls = []
    original = quantized_module.solve_relaxation

    def counting_solve(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(quantized_module, "solve_relaxation", counting_solve)
    model = SDPQuantizedClassifier(n_neurons=50, warm_start=True, random_state=0).fit(X, y)
    bound = model.lower_bound_
    model.set_params(n_neurons=500).fit(X, y)
    assert model.U_.shape[0] == 500 and model.solve_time_ == 0.0
    model.resample(20, random_state=1)
    assert model.n_neurons_ == 20 and model.U_.shape[0] == 20 and model.n_neurons == 500
    assert len(calls) == 1 and model.lower_bound_ == bound
    # New data or new SDP parameters do solve again.
    model.fit(X[:80], y[:80])
    model.set_params(beta=0.05).fit(X[:80], y[:80])
    assert len(calls) == 3
    # The covariance step is redone without a new SDP solve.
    krivine = model.covariance_.copy()
    model.set_params(covariance="sdp").fit(X[:80], y[:80])
    assert len(calls) == 3 and not np.array_equal(model.covariance_, krivine)
    p = model.n_lifted_features_
    np.testing.assert_allclose(model.covariance_[0][:p, p:], krivine[0][:p, p:], atol=1e-2)


def test_same_random_state_same_model(planted):
    X, y = planted
    first = SDPQuantizedClassifier(n_neurons=30, random_state=3).fit(X, y)
    second = SDPQuantizedClassifier(n_neurons=30, random_state=3).fit(X, y)
    third = SDPQuantizedClassifier(n_neurons=30, random_state=4).fit(X, y)
    np.testing.assert_array_equal(first.U_, second.U_)
    np.testing.assert_array_equal(first.V_, second.V_)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    assert not np.array_equal(first.U_, third.U_)
    assert first.lower_bound_ == third.lower_bound_


def test_attributes_and_probabilities(planted_model, planted):
    X, y = planted
    model = planted_model.resample(100, random_state=0)
    p = model.n_lifted_features_
    assert p == X.shape[1] + 1
    assert model.U_.dtype == np.int8 and set(np.unique(model.U_)) == {-1, 1}
    assert SDPQuantizedClassifier(n_neurons=5, loss="logistic").fit(X, y).solver_ == "native"
    assert model.Q_.shape == (1, 2 * p, 2 * p) and model.Z_.shape == (1, p, p)
    np.testing.assert_allclose(model.alpha_, model.alpha_[0, 0])  # one shared weight
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    # objective_ is the network's own objective, recomputed here from scratch
    Xs = (X - model.feature_mean_) / model.feature_scale_
    Z = np.hstack([Xs, np.ones((len(X), 1))])
    scores = ((Z @ model.U_.T) * (Z @ model.V_.T)) @ model.alpha_
    np.testing.assert_allclose(scores[:, 0], model.decision_function(X))
    expected = np.mean(np.maximum(0, 1 - y * scores[:, 0])) + 1e-3 * p * np.abs(model.alpha_).sum()
    np.testing.assert_allclose(model.objective_, expected, rtol=1e-10)


def test_multiclass_vector_output_on_wine():
    X, y = load_wine(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    model = SDPQuantizedClassifier(n_neurons=3000, loss="squared", beta=1e-2, random_state=0)
    model.fit(X_train, y_train)
    assert model.alpha_.shape == (3000, 3) and model.Q_.shape[0] == 3
    assert np.all(np.bincount(model.neuron_class_) == 1000)
    assert np.mean(model.relaxed_predict(X_test) == y_test) > 0.9
    assert model.score(X_test, y_test) > 0.9
    assert model.objective_ >= model.lower_bound_ - 1e-4


@pytest.mark.parametrize("levels", [2, 3])
def test_multilevel_weights_equivalence(planted, levels):
    X, y = planted
    model = SDPQuantizedClassifier(
        n_neurons=40, weight_levels=levels, standardize=False, random_state=0
    ).fit(X, y)
    assert model.n_lifted_features_ == (X.shape[1] + 1) * levels
    weights = model.integer_weights()
    allowed = set(range(-levels, levels + 1, 2))
    assert set(np.unique(weights["U"])) <= allowed and set(np.unique(weights["U_bias"])) <= allowed
    t_u = X @ weights["U"].T + weights["U_bias"]
    t_v = X @ weights["V"].T + weights["V_bias"]
    np.testing.assert_allclose((t_u * t_v) @ model.alpha_[:, 0], model.decision_function(X), rtol=1e-9)

    # The multi-level model is the binary model on replicated inputs.
    replicated = np.repeat(np.hstack([X, np.ones((len(X), 1))]), levels, axis=1)
    binary = SDPQuantizedClassifier(
        n_neurons=40, fit_intercept=False, standardize=False, random_state=0
    ).fit(replicated, y)
    np.testing.assert_allclose(binary.lower_bound_, model.lower_bound_, rtol=1e-6)
    np.testing.assert_allclose(
        binary.decision_function(replicated), model.decision_function(X), rtol=1e-6, atol=1e-8
    )


def test_polynomial_activation_equivalence(planted):
    X, y = planted
    a, b, c = 0.5, 1.0, 0.2
    model = SDPQuantizedClassifier(n_neurons=60, activation=(a, b, c), random_state=0).fit(X, y)
    assert model.n_lifted_features_ == X.shape[1] + 2
    w = model.integer_weights()
    Xs = (X - model.feature_mean_) / model.feature_scale_
    t_u = Xs @ w["U"].T + w["U_bias"]
    t_v = Xs @ w["V"].T + w["V_bias"]
    neurons = a * t_u * t_v + 0.5 * b * (w["V_lift"] * t_u + w["U_lift"] * t_v) + c * w["U_lift"] * w["V_lift"]
    np.testing.assert_allclose(neurons @ model.alpha_[:, 0], model.decision_function(X), rtol=1e-9)
    # Neurons with u = v compute the polynomial activation itself.
    sigma = a * t_u**2 + b * t_u * w["U_lift"] + c
    same = np.all(model.U_ == model.V_, axis=1)
    np.testing.assert_allclose(neurons[:, same], sigma[:, same])
    assert model.lower_bound_ <= model.objective_


def test_export_equivalence(planted):
    X, y = planted
    for kwargs in ({}, {"weight_levels": 2}, {"activation": (1.0, 0.5, 0.0)}):
        model = SDPQuantizedClassifier(n_neurons=25, random_state=0, **kwargs).fit(X, y)
        network = model.export_quadratic_network()
        assert network.weights.shape[0] == 75
        np.testing.assert_allclose(network.scores(X)[:, 0], model.decision_function(X), rtol=1e-9, atol=1e-9)


def test_covariance_by_sdp_option_gives_same_distribution(planted):
    X, y = planted
    krivine = SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X, y)
    by_sdp = SDPQuantizedClassifier(n_neurons=20, covariance="sdp", random_state=0).fit(X, y)
    p = krivine.n_lifted_features_
    np.testing.assert_allclose(krivine.covariance_[0][:p, p:], by_sdp.covariance_[0][:p, p:], atol=1e-2)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"activation": (1.0, 2.0)}, "three finite numbers"),
        ({"activation": (0.0, 0.0, 1.0)}, "constant"),
        ({"solver": "NOT_A_SOLVER"}, "not an installed CVXPY solver"),
        ({"n_neurons": 2}, "smaller than the number of classes"),
        ({"beta": -1.0}, "beta"),
        ({"loss": "absolute"}, "loss"),
    ],
)
def test_bad_parameters(params, message):
    X, y = load_wine(return_X_y=True)
    if "n_neurons" not in params:
        X, y = X[:60], y[:60]
    with pytest.raises(ValueError, match=message):
        SDPQuantizedClassifier(**params).fit(X, y)


def test_bad_input(planted):
    X, y = planted
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SDPQuantizedClassifier().fit(X_nan, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        SDPQuantizedClassifier().fit(X, y + 0.5)
    model = SDPQuantizedClassifier(n_neurons=10).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="n_neurons"):
        model.resample(0)


def test_solver_failure_through_the_estimator(planted):
    X, y = planted
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            SDPQuantizedClassifier(loss="logistic", solver="SCS", solver_options={"max_iters": 2}).fit(X, y)
        except SolverFailedError as exc:
            assert "CLARABEL" in str(exc)
            return
    assert any(
        issubclass(w.category, ConvergenceWarning) and "CLARABEL" in str(w.message) for w in caught
    )


# ------------------------------------------------------------------ backprop
@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def test_backprop_quantization_uses_the_least_squares_scale(cancer):
    X_train, X_test, y_train, y_test = cancer
    model = BackpropQuantizedClassifier(n_neurons=64, max_iter=30, random_state=0).fit(X_train, y_train)
    signs = model.U_.T.astype(float) @ model.V_
    real = model.U_float_.T @ model.V_float_ / 64
    best = np.linalg.lstsq(signs.reshape(-1, 1), real.ravel(), rcond=None)[0][0]
    np.testing.assert_allclose(model.scale_[0], best, rtol=1e-8)
    np.testing.assert_allclose(model.alpha_, best)
    np.testing.assert_array_equal(model.U_, np.where(model.U_float_ >= 0, 1, -1))
    assert model.score(X_test, y_test) > 0.75  # majority class: 0.63
    assert np.mean(model.float_predict(X_test) == y_test) > 0.9
    targets = 2.0 * y_train - 1
    expected = loss_value(model.decision_function(X_train), targets, np.ones(len(y_train)), "squared")
    expected += model.beta * model.n_lifted_features_ * np.abs(model.alpha_).sum()
    np.testing.assert_allclose(model.objective_, expected, rtol=1e-9)


def test_backprop_training_reduces_the_loss_and_is_deterministic(cancer):
    X_train, _, y_train, _ = cancer
    first = BackpropQuantizedClassifier(n_neurons=32, max_iter=15, random_state=1).fit(X_train, y_train)
    second = BackpropQuantizedClassifier(n_neurons=32, max_iter=15, random_state=1).fit(X_train, y_train)
    assert first.loss_curve_[-1] < 0.5 * first.loss_curve_[0]
    np.testing.assert_array_equal(first.U_float_, second.U_float_)
    np.testing.assert_array_equal(first.decision_function(X_train), second.decision_function(X_train))


def test_backprop_partial_fit_multiclass_and_pickle():
    X, y = load_wine(return_X_y=True)
    model = BackpropQuantizedClassifier(n_neurons=30, random_state=0)
    with pytest.raises(ValueError, match="classes must be passed"):
        model.partial_fit(X, y)
    for _ in range(20):
        model.partial_fit(X, y, classes=np.unique(y))
    assert model.n_iter_ == 20 and model.alpha_.shape == (30, 3)
    assert model.score(X, y) > 0.8
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))
    restored.partial_fit(X, y)
    assert restored.n_iter_ == 21


def test_backprop_bad_device():
    X, y = load_wine(return_X_y=True)
    with pytest.raises(ValueError, match="device"):
        BackpropQuantizedClassifier(device="tpu").fit(X, y)


def test_backprop_curvature_matches_the_dense_kernel_eigenvalue():
    rng = np.random.default_rng(0)
    Z = np.hstack([rng.standard_normal((60, 5)) * [1, 1, 2, 3, 0.5], np.ones((60, 1))])
    weight = rng.uniform(0.5, 2.0, 60)
    normalized = weight / weight.sum()
    kernel = (Z @ Z.T) ** 2 / Z.shape[1]
    dense = np.linalg.eigvalsh(np.sqrt(normalized)[:, None] * kernel * np.sqrt(normalized)[None, :])[-1]
    # A batch holding everything: the full-data eigenvalue dominates.
    np.testing.assert_allclose(_bilinear_curvature(Z, weight, 60, n_power_iterations=200), dense, rtol=1e-6)
    # One huge sample in a batch of 1: its ||z||^4 / p term dominates.
    Z[0] *= 30
    assert _bilinear_curvature(Z, weight, 1) == pytest.approx(np.sum(Z[0] ** 2) ** 2 / Z.shape[1])


def test_backprop_defaults_train_ten_classes_without_diverging():
    # With a fixed step the default diverged on load_digits (rare pixels give
    # ||z||^2 ~ 40 p, and the bilinear network's curvature grows like ||z||^4).
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*diverged")
        model = BackpropQuantizedClassifier(n_neurons=300, max_iter=60, n_threads=1, random_state=0)
        model.fit(X_train, y_train)
    assert model.loss_curve_[-1] < 0.5 * model.loss_curve_[0]
    assert np.mean(model.float_predict(X_test) == y_test) > 0.88  # chance: 0.1
    assert model.score(X_test, y_test) > 0.75
