"""Secure persistence with skops.io (issue 22): every estimator, unfitted, fitted, mid-training.

The claim the user guide makes (doc/user_guide/persistence.rst): skquad's
fitted state is plain numpy (torch modules and tensors live only during a
fit), so ``skops.io`` needs to trust exactly the estimator's own class, plus
``skquad.convex.solution.SDPSolution`` for the SDP estimators (the stored
relaxed solution that ``resample`` and warm starts use), and nothing from
torch. Each test checks that list, loads with it, and compares the loaded
model's predictions (bit for bit: the same arrays) and, mid-training, its
continued training with the original's (QLR's SGD, the SDP's warm start) or,
for the networks, whose optimizer state is not saved, with a pickle-loaded
copy's.
"""

import pickle
import warnings

import numpy as np
import pytest
import skops.io as sio
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

import skquad

X_CLF, Y_CLF = make_classification(n_samples=60, n_features=4, n_informative=3, n_redundant=0,
                                   random_state=0)
X_REG, Y_REG = make_regression(n_samples=60, n_features=4, noise=1.0, random_state=0)
Y_REG = Y_REG / Y_REG.std()

# Small but real configurations of every public estimator.
CONFIGS = {
    "BackpropQuantizedClassifier": dict(n_neurons=20, max_iter=5, random_state=0),
    "BackpropQuantizedRegressor": dict(n_neurons=20, max_iter=5, random_state=0),
    "QNNClassifier": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "QNNRegressor": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "QuadraticLogisticRegression": dict(solver="sgd", max_iter=5, random_state=0),
    "QuadraticRegression": dict(),
    "QuadraticRegressionCV": dict(),
    "RPQNNClassifier": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "RPQNNRegressor": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "SDPQuantizedClassifier": dict(n_neurons=20, random_state=0),
    "SDPQuantizedClassifierCV": dict(n_neurons=20, betas=[1e-1, 1e-2], cv=2, random_state=0),
    "SDPQuantizedRegressor": dict(n_neurons=20, random_state=0),
    "SDPQuantizedRegressorCV": dict(n_neurons=20, betas=[1e-1, 1e-2], cv=2, random_state=0),
}
SDP_SOLUTION = "skquad.convex.solution.SDPSolution"


def test_every_public_estimator_is_covered():
    assert set(CONFIGS) == set(skquad.__all__)


def _make(name):
    return getattr(skquad, name)(**CONFIGS[name])


def _data(estimator):
    return (X_REG, Y_REG) if is_regressor(estimator) else (X_CLF, Y_CLF)


def _quiet_fit(method, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a few epochs: the subject is persistence
        return method(*args, **kwargs)


def _expected_untrusted(estimator, fitted):
    cls = type(estimator)
    expected = {f"{cls.__module__}.{cls.__qualname__}"}
    if fitted and hasattr(estimator, "rho_"):
        expected.add(SDP_SOLUTION)
    return expected


def _round_trip(estimator, fitted):
    data = sio.dumps(estimator)
    untrusted = set(sio.get_untrusted_types(data=data))
    # Only skquad's own types, and only those the user guide lists.
    assert untrusted == _expected_untrusted(estimator, fitted)
    return sio.loads(data, trusted=sorted(untrusted))


def _assert_same_predictions(a, b, X):
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    if is_classifier(a):
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def _no_torch_objects(value, path="estimator", seen=None):
    """Walk the state; every object must be built-in, numpy, scikit-learn or skquad."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    module = type(value).__module__ or ""
    assert not module.startswith("torch"), f"{path} is a {type(value)}"
    if isinstance(value, dict):
        for key, item in value.items():
            _no_torch_objects(item, f"{path}[{key!r}]", seen)
    elif isinstance(value, (list, tuple, set)):
        for index, item in enumerate(value):
            _no_torch_objects(item, f"{path}[{index}]", seen)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        for key, item in vars(value).items():
            _no_torch_objects(item, f"{path}.{key}", seen)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_unfitted_round_trip(name):
    estimator = _make(name)
    loaded = _round_trip(estimator, fitted=False)
    assert type(loaded) is type(estimator)
    assert loaded.get_params() == estimator.get_params()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_fitted_round_trip_is_plain_numpy(name):
    estimator = _make(name)
    X, y = _data(estimator)
    _quiet_fit(estimator.fit, X, y)
    _no_torch_objects(estimator.__getstate__())
    assert b"torch" not in pickle.dumps(estimator)
    loaded = _round_trip(estimator, fitted=True)
    _assert_same_predictions(estimator, loaded, X)
    # A loaded model refits like a fresh one.
    refitted = _quiet_fit(clone(loaded).fit, X, y)
    _assert_same_predictions(_quiet_fit(clone(estimator).fit, X, y), refitted, X)


def _continue(estimator, X, y):
    """One more step of training: partial_fit where there is one, else a warm fit at a new beta."""
    if hasattr(estimator, "partial_fit"):
        kwargs = {"classes": np.unique(y)} if is_classifier(estimator) else {}
        return _quiet_fit(estimator.partial_fit, X, y, **kwargs)
    # beta_: the value the fit used (beta may be "auto").
    return _quiet_fit(estimator.set_params(beta=estimator.beta_ / 10).fit, X, y)


_OPTIMIZER_STATE_NOT_SAVED = {
    "BackpropQuantizedClassifier", "BackpropQuantizedRegressor", "QNNClassifier", "QNNRegressor",
    "RPQNNClassifier", "RPQNNRegressor",
}

MID_TRAINING = [
    name for name in sorted(CONFIGS)
    if hasattr(getattr(skquad, name), "partial_fit") or name in ("QuadraticLogisticRegression",)
] + ["SDPQuantizedClassifier", "SDPQuantizedRegressor"]


@pytest.mark.parametrize("name", MID_TRAINING)
def test_mid_training_round_trip_continues_identically(name):
    estimator = _make(name)
    if name.startswith("SDP"):
        estimator.set_params(warm_start=True)  # the stored solution starts the next fit
    X, y = _data(estimator)
    if hasattr(estimator, "partial_fit"):
        kwargs = {"classes": np.unique(y)} if is_classifier(estimator) else {}
        for _ in range(2):
            _quiet_fit(estimator.partial_fit, X, y, **kwargs)
    else:
        _quiet_fit(estimator.fit, X, y)
    _no_torch_objects(estimator.__getstate__())
    loaded = _round_trip(estimator, fitted=True)
    _assert_same_predictions(estimator, loaded, X)
    # The networks' optimizer state (adam's moments, momentum buffers) lives
    # in the torch trainer, which is not saved: their continuation is that of
    # a pickle-loaded copy, not of the live model (doc/user_guide/persistence.rst).
    reference = pickle.loads(pickle.dumps(estimator)) if name in _OPTIMIZER_STATE_NOT_SAVED else estimator
    _continue(reference, X, y)
    _continue(loaded, X, y)
    _assert_same_predictions(reference, loaded, X)
    for attribute in ("n_iter_", "t_", "loss_curve_"):
        if hasattr(reference, attribute):
            np.testing.assert_array_equal(getattr(loaded, attribute), getattr(reference, attribute))
