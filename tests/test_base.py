"""The shared scikit-learn plumbing, exercised through a minimal subclass."""

import numpy as np
import pytest
import torch

from skquad._base import BaseQuadraticClassifier
from skquad._torch_utils import make_generator, resolve_device, resolve_dtype


class _CentroidScorer(BaseQuadraticClassifier):
    """Scores are minus squared distances to weighted class centroids."""

    def __init__(self, class_weight=None):
        self.class_weight = class_weight

    def fit(self, X, y, sample_weight=None):
        X, y, sw = self._validate_training_data(X, y, sample_weight)
        self.weights_seen_ = sw
        self.centroids_ = np.stack(
            [np.average(X[y == k], axis=0, weights=sw[y == k]) for k in range(len(self.classes_))]
        )
        return self

    def _raw_scores(self, X):
        d = -((X[:, None, :] - self.centroids_[None]) ** 2).sum(-1)
        return d[:, 1:2] - d[:, :1] if len(self.classes_) == 2 else d


def test_string_labels_round_trip():
    X = np.array([[0.0], [0.1], [1.0], [1.1], [2.0], [2.1]])
    y = np.array(["a", "a", "b", "b", "c", "c"])
    clf = _CentroidScorer().fit(X, y)
    assert list(clf.classes_) == ["a", "b", "c"]
    assert list(clf.predict(X)) == list(y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X), atol=1e-12)


def test_binary_decision_function_is_log_odds_of_second_class():
    X = np.array([[0.0], [0.2], [1.0], [1.2]])
    y = np.array([3, 3, 7, 7])
    clf = _CentroidScorer().fit(X, y)
    scores = clf.decision_function(X)
    assert scores.shape == (4,)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-scores)))
    assert list(clf.predict(X)) == [3, 3, 7, 7]


def test_class_weight_multiplies_sample_weight():
    X = np.arange(6, dtype=float)[:, None]
    y = np.array([0, 0, 0, 0, 1, 1])
    clf = _CentroidScorer(class_weight="balanced").fit(X, y, sample_weight=np.full(6, 2.0))
    np.testing.assert_allclose(clf.weights_seen_, 2.0 * np.array([0.75] * 4 + [1.5] * 2))
    clf = _CentroidScorer(class_weight={1: 3.0}).fit(X, y)
    np.testing.assert_allclose(clf.weights_seen_, [1, 1, 1, 1, 3, 3])


def test_one_class_is_a_clear_error():
    X = np.ones((4, 2))
    with pytest.raises(ValueError, match="only one class"):
        _CentroidScorer().fit(X, np.zeros(4))
    with pytest.raises(ValueError, match="class"):
        _CentroidScorer().fit(np.arange(4.0)[:, None], [0, 0, 1, 1], sample_weight=[1, 1, 0, 0])


def test_bad_input_gets_sklearn_errors():
    X = np.array([[0.0, 1.0], [1.0, np.nan]])
    with pytest.raises(ValueError, match="NaN"):
        _CentroidScorer().fit(X, [0, 1])
    with pytest.raises(ValueError, match="infinity"):
        _CentroidScorer().fit(np.array([[0.0], [np.inf]]), [0, 1])
    clf = _CentroidScorer().fit(np.array([[0.0, 0.0], [1.0, 1.0]]), [0, 1])
    with pytest.raises(ValueError, match="features"):
        clf.predict(np.zeros((1, 3)))


def test_generator_is_local_and_deterministic():
    state = torch.random.get_rng_state()
    a = torch.rand(3, generator=make_generator(0))
    b = torch.rand(3, generator=make_generator(0))
    assert torch.equal(a, b)
    assert torch.equal(state, torch.random.get_rng_state())


def test_device_and_dtype_resolution():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type in ("cpu", "cuda")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu")
    assert resolve_dtype("float64") is torch.float64
    assert resolve_dtype(np.float32) is torch.float32
    with pytest.raises(ValueError, match="dtype"):
        resolve_dtype("int8")
