"""Secure persistence with skops.io (issue 22): every estimator, unfitted, fitted, mid-training.

The claim the user guide makes (doc/user_guide/persistence.rst): skquad's
fitted state is plain numpy (torch modules and tensors live only during a
fit), so ``skops.io`` needs to trust exactly the estimator's own class, plus
``skquad.convex.solution.SDPSolution`` for the SDP estimators (the stored
relaxed solution that ``resample`` and warm starts use), and nothing from
torch. Each test checks that list, loads with it, and compares the loaded
model's predictions (bit for bit: the same arrays) and, mid-training, its
continued training with the original's (QLR's SGD, the SDP's warm start, the
networks' partial_fit with their optimizer state, which travels as numpy).
"""

import io
import os
import pickle
import subprocess
import sys
import warnings

import joblib

import numpy as np
import pytest
import skops.io as sio
import torch
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

import skquad

from _estimator_configs import SMALL_CONFIGS

X_CLF, Y_CLF = make_classification(n_samples=60, n_features=4, n_informative=3, n_redundant=0,
                                   random_state=0)
X_REG, Y_REG = make_regression(n_samples=60, n_features=4, noise=1.0, random_state=0)
Y_REG = Y_REG / Y_REG.std()

# Small but real configurations of every public estimator.
CONFIGS = SMALL_CONFIGS
SDP_SOLUTION = "skquad.convex.solution.SDPSolution"
# what a Dask fit of the SDP estimators keeps for resample (tests/test_quantized_dask.py)
LIFTED_STATISTICS = "skquad.convex.statistics.LiftedStatistics"


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
    # The networks' optimizer state (Adam's moments, momentum buffers, the
    # shuffling generator) is saved as numpy: the loaded model continues as the live one.
    reference = estimator
    _continue(reference, X, y)
    _continue(loaded, X, y)
    _assert_same_predictions(reference, loaded, X)
    for attribute in ("n_iter_", "t_", "loss_curve_"):
        if hasattr(reference, attribute):
            np.testing.assert_array_equal(getattr(loaded, attribute), getattr(reference, attribute))


def _pickle_round_trip(estimator):
    return pickle.loads(pickle.dumps(estimator))


def _joblib_round_trip(estimator):
    buffer = io.BytesIO()
    joblib.dump(estimator, buffer)
    buffer.seek(0)
    return joblib.load(buffer)


def _skops_round_trip(estimator):
    data = sio.dumps(estimator)
    return sio.loads(data, trusted=sio.get_untrusted_types(data=data))


ROUND_TRIPS = {"pickle": _pickle_round_trip, "joblib": _joblib_round_trip, "skops": _skops_round_trip}

# The rules whose running state a continuation needs: Adam's moments and step
# count; SGD's Nesterov momentum under the invscaling schedule (its rate
# follows the samples seen). Batches of 16 and shuffling: several steps per
# epoch, and the shuffling generator's state matters too.
TWIN_SETTINGS = {
    "adam-float64": (dict(solver="adam"), np.float64),
    "adam-float32": (dict(solver="adam"), np.float32),
    "sgd-invscaling": (dict(solver="sgd", learning_rate="invscaling", learning_rate_init=0.1), np.float64),
}


# BackpropQuantized trains with SGD only (no solver parameter).
TWINS = [
    (name, setting)
    for name in ("QNNClassifier", "RPQNNRegressor", "BackpropQuantizedClassifier")
    for setting in sorted(TWIN_SETTINGS)
    if not (name.startswith("Backprop") and TWIN_SETTINGS[setting][0]["solver"] != "sgd")
]


# Every twin through skops (the secure format); pickle and joblib share
# __getstate__, so one twin each (the suite's time budget).
TWIN_CASES = [(name, setting, "skops") for name, setting in TWINS] + [
    ("QNNClassifier", "adam-float64", round_trip) for round_trip in ("pickle", "joblib")
]


@pytest.mark.parametrize(("name", "setting", "round_trip"), TWIN_CASES)
def test_partial_fit_after_round_trip_continues_exactly(name, setting, round_trip):
    """Twins: one saved and loaded between partial_fit calls, one never saved; the same outputs."""
    options, dtype = TWIN_SETTINGS[setting]
    if name.startswith("Backprop"):
        options = {key: value for key, value in options.items() if key != "solver"}
    twins = [_make(name).set_params(batch_size=16, **options) for _ in range(2)]
    X, y = _data(twins[0])
    X = X.astype(dtype)
    kwargs = {"classes": np.unique(y)} if is_classifier(twins[0]) else {}
    for twin in twins:
        for _ in range(2):
            _quiet_fit(twin.partial_fit, X, y, **kwargs)
    twins[1] = ROUND_TRIPS[round_trip](twins[1])
    for twin in twins:
        for _ in range(3):
            _quiet_fit(twin.partial_fit, X, y)
    kept, loaded = twins
    _assert_same_predictions(kept, loaded, X)
    for attribute in ("n_iter_", "t_", "loss_curve_"):
        if hasattr(kept, attribute):
            np.testing.assert_array_equal(getattr(loaded, attribute), getattr(kept, attribute))


def test_saved_optimizer_state_of_another_solver_is_not_used():
    """set_params(solver=...) after loading: partial_fit starts the new rule afresh, as a live model."""
    estimator = _make("QNNClassifier").set_params(batch_size=16)
    X, y = _data(estimator)
    _quiet_fit(estimator.partial_fit, X, y, classes=np.unique(y))
    loaded = _skops_round_trip(estimator).set_params(solver="sgd")
    assert loaded._training_state["solver"] == "adam"
    fresh = _skops_round_trip(estimator).set_params(solver="sgd")
    del fresh._training_state  # what a model saved without optimizer state does
    for model in (loaded, fresh):
        _quiet_fit(model.partial_fit, X, y)
    _assert_same_predictions(loaded, fresh, X)
    assert not hasattr(loaded, "_training_state")


_CPU_ONLY_LOAD = """
import sys
import numpy as np
import skops.io as sio
import torch
assert not torch.cuda.is_available()
path = sys.argv[1]
model = sio.load(path, trusted=sio.get_untrusted_types(file=path))
np.save(sys.argv[3], model.predict(np.load(sys.argv[2])))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cuda_fitted_model_loads_on_a_machine_without_cuda(name, tmp_path):
    # The fitted state is numpy (no CUDA tensors), so a skops file written on a
    # GPU machine loads where CUDA is absent: a child interpreter with
    # CUDA_VISIBLE_DEVICES="" stands for the CPU-only machine.
    estimator = _make(name)
    if "device" in estimator.get_params():
        estimator.set_params(device="cuda")
    if "solver_options" in estimator.get_params():
        # The SDP's small problems go to CPU interior-point methods whatever
        # the device (device_ says "cpu"): asking for the factor solver keeps
        # the solve on the GPU, which is the case this test is about.
        estimator.set_params(solver_options={"rank": 4})
    X, y = _data(estimator)
    _quiet_fit(estimator.fit, X, y)
    if hasattr(estimator, "device_"):
        assert str(estimator.device_).startswith("cuda")
    path, X_path, out = tmp_path / "model.skops", tmp_path / "X.npy", tmp_path / "pred.npy"
    sio.dump(estimator, path)
    np.save(X_path, X)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    subprocess.run([sys.executable, "-c", _CPU_ONLY_LOAD, str(path), str(X_path), str(out)],
                   check=True, env=env, timeout=300)
    np.testing.assert_allclose(np.load(out), estimator.predict(X), rtol=1e-6, atol=1e-9)


def test_trusted_types_lists_exactly_what_skquad_files_hold():
    """``skquad.persistence.trusted_types()``: every public estimator class,
    the SDP's stored solution and a Dask fit's lifted statistics, nothing else (issue 38, item 6); every file the
    round trips above make asks for a subset of it."""
    from skquad.persistence import trusted_types

    classes = [getattr(skquad, name) for name in skquad.__all__]
    expected = {f"{cls.__module__}.{cls.__qualname__}" for cls in classes}
    expected |= {SDP_SOLUTION, LIFTED_STATISTICS}
    assert set(trusted_types()) == expected
    for name in ("QuadraticRegression", "SDPQuantizedClassifier"):
        estimator = _make(name)
        _quiet_fit(estimator.fit, *_data(estimator))
        assert set(sio.get_untrusted_types(data=sio.dumps(estimator))) <= set(trusted_types())


def _crafted_file(monkeypatch):
    """A fitted model's skops file whose instance attribute ``_raw_scores``
    (a method's name) holds a skquad module function, replaced by a spy."""
    import skquad._foundation._memory

    calls = []

    def spy(*args, **kwargs):
        calls.append(args)
        return np.zeros((len(args[0]), 1)) if args else None

    spy.__module__, spy.__qualname__, spy.__name__ = "skquad._foundation._memory", "available_memory", "available_memory"
    monkeypatch.setattr(skquad._foundation._memory, "available_memory", spy)
    model = _make("QuadraticRegression")
    model.fit(X_REG, Y_REG)
    model.__dict__["_raw_scores"] = spy
    calls.clear()  # the fit's own memory check called it; only later calls count
    return sio.dumps(model), calls


def test_a_file_with_a_function_in_an_instance_attribute_is_refused(monkeypatch):
    """The user guide trusted every untrusted type whose name starts with
    "skquad.": a crafted file that put a skquad function in an instance
    attribute shadowing a method passed, and the function ran at predict
    (issue 38, item 6). The exact list refuses it, and so does loading."""
    from skquad.persistence import trusted_types

    data, calls = _crafted_file(monkeypatch)
    untrusted = sio.get_untrusted_types(data=data)
    assert "skquad._foundation._memory.available_memory" in untrusted
    assert not set(untrusted) <= set(trusted_types())
    # a user who trusts everything the file asks for is still protected
    with pytest.raises(ValueError, match="_raw_scores"):
        loaded = sio.loads(data, trusted=untrusted)
        loaded.predict(X_REG)
    assert not calls
