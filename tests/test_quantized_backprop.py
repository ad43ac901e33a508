"""BackpropQuantizedClassifier (skquad/quantized/_backprop.py)."""

import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import RidgeClassifierCV
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skquad import BackpropQuantizedClassifier
from skquad.convex import loss_value
from skquad.quantized._linear_term import RELATIVE_ALPHAS


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def test_backprop_quantization_uses_the_least_squares_scale(cancer):
    X_train, X_test, y_train, y_test = cancer
    # random_state=3: a fit that meets tol within max_iter (no ConvergenceWarning);
    # refit_output_layer=False, linear_term=False: the paper's baseline, one scale
    model = BackpropQuantizedClassifier(
        n_neurons=64, random_state=3, refit_output_layer=False, linear_term=False).fit(X_train, y_train)
    signs = model.U_.T.astype(float) @ model.V_
    real = model.U_float_.T @ model.V_float_ / 64
    best = np.linalg.lstsq(signs.reshape(-1, 1), real.ravel(), rcond=None)[0][0]
    np.testing.assert_allclose(model.scale_[0], best, rtol=1e-8)
    np.testing.assert_allclose(model.alpha_, best)
    np.testing.assert_array_equal(model.U_, np.where(model.U_float_ >= 0, 1, -1))
    # majority class: 0.63; the sign-quantized baseline scored 0.78-0.88 over
    # random_state 0-7 (the real-weight network 0.93-0.95), so 0.75 holds for any seed
    assert model.score(X_test, y_test) > 0.75
    assert np.mean(model.float_predict(X_test) == y_test) > 0.9
    targets = 2.0 * y_train - 1
    expected = loss_value(model.decision_function(X_train), targets, np.ones(len(y_train)), "squared")
    expected += model.beta_ * model.n_lifted_features_ * np.abs(model.alpha_).sum()
    np.testing.assert_allclose(model.objective_, expected, rtol=1e-9)


@pytest.mark.parametrize("load", [load_breast_cancer, load_wine])
def test_refit_output_layer_is_ridge_classifier_cv_on_the_neurons(load):
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = BackpropQuantizedClassifier(n_neurons=40, refit_output_layer=True, linear_term=False,
                                        random_state=0).fit(X, y)
    assert model.refit_loss_ == "squared"
    H = model._lifting().bilinear(X, model.U_, model.V_)  # the ±1 neurons' outputs
    reference = RidgeClassifierCV(alphas=np.sum(H**2) * RELATIVE_ALPHAS).fit(H, y)
    np.testing.assert_allclose(
        model.decision_function(X), reference.decision_function(H), rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(model.predict(X), reference.predict(H))
    np.testing.assert_allclose(model.intercept_, np.reshape(reference.intercept_, -1), rtol=1e-7)
    targets = 2.0 * y - 1 if len(model.classes_) == 2 else np.searchsorted(model.classes_, y)
    expected = loss_value(np.reshape(model.decision_function(X), (len(y), -1)), targets,
                          np.ones(len(y)), "squared", n_outputs=model.alpha_.shape[1])
    expected += model.beta_ * model.n_lifted_features_ * np.abs(model.alpha_).sum()
    np.testing.assert_allclose(model.objective_, expected, rtol=1e-9)


def test_auto_refit_keeps_the_ridge_where_held_out_rows_do_not_favour_the_logistic_one():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    common = dict(n_neurons=60, random_state=0)
    auto = BackpropQuantizedClassifier(**common).fit(X, y)
    ridge = BackpropQuantizedClassifier(refit_output_layer=True, **common).fit(X, y)
    assert auto.refit_loss_ == "squared"
    np.testing.assert_array_equal(auto.alpha_, ridge.alpha_)
    # binary problems refit the ridge under "auto"; no refit, no refit loss
    yb = (y > 0).astype(int)
    assert BackpropQuantizedClassifier(**common).fit(X, yb).refit_loss_ == "squared"
    unrefitted = BackpropQuantizedClassifier(refit_output_layer=False, **common).fit(X, yb)
    assert unrefitted.refit_loss_ is None


def test_refit_output_layer_predicts_better_than_the_single_scale(cancer):
    X_train, X_test, y_train, y_test = cancer
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the first layer's SGD at max_iter
        scores = {
            refit: np.mean([
                BackpropQuantizedClassifier(n_neurons=64, random_state=seed, refit_output_layer=refit,
                                            linear_term=False)
                .fit(X_train, y_train).score(X_test, y_test) for seed in range(3)])
            for refit in (False, True)
        }
    assert scores[True] > scores[False] + 0.02


def test_backprop_training_reduces_the_loss_and_is_deterministic(cancer):
    X_train, _, y_train, _ = cancer
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        first = BackpropQuantizedClassifier(n_neurons=32, max_iter=15, linear_term=False,
                                            random_state=1).fit(X_train, y_train)
    second = clone(first).set_params(max_iter=100).fit(X_train, y_train)
    third = clone(first).set_params(max_iter=100).fit(X_train, y_train)
    assert second.n_iter_ < 100  # stopped by the tolerance rule, no warning
    assert first.loss_curve_[-1] < 0.5 * first.loss_curve_[0]
    np.testing.assert_array_equal(second.U_float_, third.U_float_)
    np.testing.assert_array_equal(second.decision_function(X_train), third.decision_function(X_train))


def test_backprop_partial_fit_multiclass_and_pickle():
    X, y = load_wine(return_X_y=True)
    model = BackpropQuantizedClassifier(n_neurons=30, random_state=0)
    with pytest.raises(ValueError, match="classes must be passed"):
        model.partial_fit(X, y)
    for _ in range(20):
        model.partial_fit(X, y, classes=np.unique(y))
    # Different classes on a later call: scikit-learn's error.
    with pytest.raises(ValueError, match="not the same as on last call"):
        model.partial_fit(X, y, classes=[0, 1, 2, 3])
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


def test_backprop_defaults_train_ten_classes_without_diverging():
    # With a fixed step the default diverged on load_digits (rare pixels give
    # ||z||^2 ~ 40 p, and the bilinear network's curvature grows like ||z||^4).
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    model = BackpropQuantizedClassifier(n_neurons=300, max_iter=60, n_threads=1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X_train, y_train)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert not any("diverged" in message for message in messages)
    assert any("Maximum iterations (60)" in message for message in messages)
    assert model.loss_curve_[-1] < 0.5 * model.loss_curve_[0]
    assert np.mean(model.float_predict(X_test) == y_test) > 0.88  # chance: 0.1
    assert model.score(X_test, y_test) > 0.75


def test_learning_rate_names_follow_mlp(cancer):
    X_train, _, y_train, _ = cancer
    new = BackpropQuantizedClassifier(n_neurons=16, learning_rate_init=0.1, random_state=0)
    new.fit(X_train, y_train)
    old = BackpropQuantizedClassifier(n_neurons=16, learning_rate=0.1, random_state=0)
    with pytest.warns(FutureWarning, match="learning_rate_init"):
        old.fit(X_train, y_train)
    np.testing.assert_array_equal(old.U_float_, new.U_float_)
    with pytest.raises(ValueError, match="learning_rate"):
        BackpropQuantizedClassifier(learning_rate="sometimes").fit(X_train, y_train)
    assert new.loss_ == new.loss_curve_[-1]


def test_dtype_follows_the_input(cancer):
    X_train, _, y_train, _ = cancer
    common = {"n_neurons": 16, "random_state": 0}
    single = BackpropQuantizedClassifier(**common).fit(X_train.astype(np.float32), y_train)
    double = BackpropQuantizedClassifier(**common).fit(X_train, y_train)
    forced = BackpropQuantizedClassifier(dtype="float32", **common).fit(X_train, y_train)
    assert single._trainer.dtype == torch.float32 and forced._trainer.dtype == torch.float32
    assert double._trainer.dtype == torch.float64
    # Same training up to float32 rounding.
    np.testing.assert_allclose(single.U_float_, double.U_float_, rtol=1e-2, atol=1e-3)
    # float32 input and forced float32 differ only by the float32 rounding of X.
    np.testing.assert_allclose(single.U_float_, forced.U_float_, rtol=1e-3, atol=1e-5)


def test_divergence_advice_names_the_estimators_parameters(cancer):
    X_train, _, y_train, _ = cancer
    model = BackpropQuantizedClassifier(n_neurons=16, learning_rate_init=1e6, max_iter=5, random_state=0)
    with pytest.warns(ConvergenceWarning, match="diverged") as record:
        model.fit(X_train, y_train)
    message = " ".join(str(w.message) for w in record if "diverged" in str(w.message))
    assert "learning_rate_init" in message and "beta" in message and "batch_size" in message
    assert np.all(np.isfinite(model.U_float_))


def test_huge_width_is_refused_up_front():
    X, y = load_wine(return_X_y=True)
    with pytest.raises(MemoryError, match="n_neurons=1000000000"):
        BackpropQuantizedClassifier(n_neurons=10**9).fit(X, y)


@pytest.mark.parametrize("refit", [True, False])
def test_the_output_layer_refit_is_refused_before_training(monkeypatch, refit):
    from skquad._foundation import _memory
    from skquad.quantized import _backprop

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((2000, 5)), rng.integers(0, 2, 2000)
    training = _backprop._training_memory(50, 6, 200, 8)
    # room for training alone, not for the refit's (2000, 50) outputs and their copies
    monkeypatch.setattr(_memory, "available_memory", lambda: training + 1e5)
    model = BackpropQuantizedClassifier(n_neurons=50, max_iter=2, refit_output_layer=refit)
    if not refit:
        with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
            assert model.fit(X, y).n_iter_ == 2
        return

    def no_training(*args, **kwargs):
        raise AssertionError("trained before the refusal")

    monkeypatch.setattr(_backprop, "_bilinear_trainer", no_training)
    with pytest.raises(MemoryError, match="n_neurons=50 .*refit_output_layer=False"):
        model.fit(X, y)
    assert not hasattr(model, "U_")
