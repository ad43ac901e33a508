"""The five classifiers, small and quick, and the state comparisons shared by the tests of the base.

Used by the test modules of ``skquad/_base.py`` (atomic fit, callbacks,
sample weights, input validation) and of ``skquad/_foundation/_torch_utils.py`` (devices).
"""

import contextlib
import copy
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from skquad import (
    BackpropQuantizedClassifier,
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
)

# Small, quick versions of the five estimators (the default constructors are
# exercised by the bad-input tests).
ESTIMATORS = {
    "QLR": lambda: QuadraticLogisticRegression(max_iter=30),
    "QNN": lambda: QNNClassifier(hidden_layer_sizes=(6,), max_iter=15, random_state=0),
    "RPQNN": lambda: RPQNNClassifier(
        hidden_layer_sizes=(6,), max_iter=15, random_state=0
    ),
    "SDP": lambda: SDPQuantizedClassifier(n_neurons=40, random_state=0),
    "BackpropQ": lambda: BackpropQuantizedClassifier(
        n_neurons=20, max_iter=15, random_state=0
    ),
}
DEFAULTS = {
    "QLR": QuadraticLogisticRegression,
    "QNN": QNNClassifier,
    "RPQNN": RPQNNClassifier,
    "SDP": SDPQuantizedClassifier,
    "BackpropQ": BackpropQuantizedClassifier,
}


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=120, n_features=5, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def other_data():
    """Different features and classes, so that a refit's validation changes the state."""
    X, y = make_classification(
        n_samples=90,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        n_classes=3,
        random_state=1,
    )
    return X, np.array(["a", "b", "c"])[y]


@pytest.fixture(scope="module")
def issue_data():
    """The data of the issue's reproducers (issue 10)."""
    return make_classification(n_samples=200, n_features=5, random_state=0)


def fit_allowing_convergence_warning(estimator, X, y, **kwargs):
    """``estimator.fit(X, y)``; its only allowed warning is ConvergenceWarning.

    The estimators here are small and short (a few epochs), so stopping at
    ``max_iter`` is expected; any other warning fails the test.
    """
    with only_convergence_warnings():
        return estimator.fit(X, y, **kwargs)


@contextlib.contextmanager
def only_convergence_warnings():
    """Record the warnings of the block and fail on any but ConvergenceWarning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    unexpected = [
        f"{w.category.__name__}: {w.message}" for w in caught
        if not issubclass(w.category, ConvergenceWarning)
    ]
    assert not unexpected, f"unexpected warnings: {unexpected}"


def _state(estimator):
    """A deep copy of the instance's __dict__, compared with :func:`_assert_same`."""
    return copy.deepcopy(estimator.__dict__)


def _assert_same(a, b, path="estimator", seen=None):
    """Exact, structural equality of two fitted states (arrays bit for bit)."""
    seen = set() if seen is None else seen
    if (id(a), id(b)) in seen:
        return
    seen.add((id(a), id(b)))
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        np.testing.assert_array_equal(
            a.detach().cpu().numpy(), b.detach().cpu().numpy(), err_msg=path
        )
    elif isinstance(a, torch.nn.Module):
        _assert_same(a.state_dict(), b.state_dict(), f"{path}.state_dict()", seen)
        _assert_same(
            vars(a).get("training"), vars(b).get("training"), f"{path}.training", seen
        )
    elif isinstance(a, torch.optim.Optimizer):
        _assert_same(a.state_dict(), b.state_dict(), f"{path}.state_dict()", seen)
    elif isinstance(a, torch.Generator):
        assert torch.equal(a.get_state(), b.get_state()), path
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for key in a:
            _assert_same(a[key], b[key], f"{path}[{key!r}]", seen)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, z) in enumerate(zip(a, b)):
            _assert_same(x, z, f"{path}[{i}]", seen)
    elif (
        callable(a) and not hasattr(a, "__dict__") or isinstance(a, type(_assert_same))
    ):
        assert getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None), (
            path
        )
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        _assert_same(vars(a), vars(b), path, seen)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _twin(estimator):
    """An independent instance with a deep copy of the same __dict__.

    Not ``copy.deepcopy(estimator)``: that goes through ``__getstate__``, which
    leaves out what does not survive pickling (the networks' optimizer state).
    """
    twin = object.__new__(type(estimator))
    twin.__dict__.update(copy.deepcopy(estimator.__dict__))
    return twin


def _assert_untouched(estimator, before_state, before_proba, X):
    # Both sides as deep copies: a copy drops what an object's __getstate__ calls
    # a cache (the Adam step's views of its flat buffers), which is not state.
    _assert_same(_state(estimator), before_state)
    np.testing.assert_array_equal(estimator.predict_proba(X), before_proba)


_TORCH_ESTIMATORS = [name for name in ESTIMATORS if "device" in DEFAULTS[name]().get_params()]
