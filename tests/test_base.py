"""The shared scikit-learn plumbing, exercised through a minimal subclass."""

import copy
import threading
from numbers import Integral
from typing import ClassVar

import numpy as np
import pytest
import scipy.sparse
from sklearn.base import _fit_context, clone
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, InvalidParameterError

from skquad._foundation._atomic import atomic_fit, copy_fitted_state
from skquad._base import BaseQuadraticClassifier


class _CentroidScorer(BaseQuadraticClassifier):
    """Scores are minus squared distances to weighted class centroids."""

    def __init__(self, class_weight=None, clip_inputs=True):
        self.class_weight = class_weight
        self.clip_inputs = clip_inputs

    def fit(self, X, y, sample_weight=None):
        X, y, sw = self._validate_training_data(X, y, sample_weight)
        self.weights_seen_ = sw
        self.centroids_ = np.stack(
            [
                np.average(X[y == k], axis=0, weights=sw[y == k])
                for k in range(len(self.classes_))
            ]
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
    clf = _CentroidScorer(class_weight="balanced").fit(
        X, y, sample_weight=np.full(6, 2.0)
    )
    np.testing.assert_allclose(
        clf.weights_seen_, 2.0 * np.array([0.75] * 4 + [1.5] * 2)
    )
    clf = _CentroidScorer(class_weight={1: 3.0}).fit(X, y)
    np.testing.assert_allclose(clf.weights_seen_, [1, 1, 1, 1, 3, 3])


def test_one_class_is_a_clear_error():
    X = np.ones((4, 2))
    with pytest.raises(ValueError, match="only one class"):
        _CentroidScorer().fit(X, np.zeros(4))
    with pytest.raises(ValueError, match="class"):
        _CentroidScorer().fit(
            np.arange(4.0)[:, None], [0, 0, 1, 1], sample_weight=[1, 1, 0, 0]
        )


def test_bad_input_gets_sklearn_errors():
    X = np.array([[0.0, 1.0], [1.0, np.nan]])
    with pytest.raises(ValueError, match="NaN"):
        _CentroidScorer().fit(X, [0, 1])
    with pytest.raises(ValueError, match="infinity"):
        _CentroidScorer().fit(np.array([[0.0], [np.inf]]), [0, 1])
    clf = _CentroidScorer().fit(np.array([[0.0, 0.0], [1.0, 1.0]]), [0, 1])
    with pytest.raises(ValueError, match="features"):
        clf.predict(np.zeros((1, 3)))


class _Iterative(BaseQuadraticClassifier):
    """A toy iterative estimator that exercises the fit wrapper.

    ``fit`` runs ``max_iter`` steps of ``partial_fit``'s update (a shared
    private helper, as decorated methods don't call each other), ``fail_at``
    makes the given step raise after it changed the state.
    """

    _parameter_constraints: ClassVar[dict] = {
        "max_iter": [Interval(Integral, 1, None, closed="left")]
    }

    def __init__(self, max_iter=3, fail_at=None, stochastic=True, clip_inputs=True):
        self.max_iter = max_iter
        self.fail_at = fail_at
        self.stochastic = stochastic
        self.clip_inputs = clip_inputs

    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        self.contexts_seen_ = []
        X, y, _ = self._validate_training_data(X, y, sample_weight)
        self.means_ = np.zeros((len(self.classes_), X.shape[1]))
        self.steps_ = 0
        for _ in range(self.max_iter):
            self._step(X, y)
        return self

    def _stochastic(self):
        return self.stochastic

    @available_if(_stochastic)
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        self.contexts_seen_ = getattr(self, "contexts_seen_", [])
        first = not hasattr(self, "classes_")
        X, y, _ = self._validate_training_data(
            X, y, sample_weight, reset=first, classes=classes if first else None
        )
        if first:
            self.means_ = np.zeros((len(self.classes_), X.shape[1]))
            self.steps_ = 0
        return self._step(X, y)

    def _step(self, X, y):
        self.contexts_seen_.append(self.__dict__.get("_callback_fit_ctx"))
        self.steps_ += 1
        for k in range(len(self.classes_)):
            self.means_[k] += X[y == k].mean(axis=0) / self.max_iter
        if self.fail_at == self.steps_:
            raise KeyboardInterrupt
        return self

    def _raw_scores(self, X):
        d = -((X[:, None, :] - self.means_[None]) ** 2).sum(-1)
        return d[:, 1:2] - d[:, :1] if len(self.classes_) == 2 else d


class _Recorder:
    def __init__(self):
        self.events = []

    def setup(self, estimator, context):
        self.events.append("setup")

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None):
        self.events.append(("begin", context.task_name, context.max_subtasks))

    def on_fit_task_end(self, estimator, context, *, X=None, y=None):
        self.events.append(("end", context.task_name))

    def teardown(self, estimator, context):
        self.events.append("teardown")


@pytest.fixture
def blobs():
    rng = np.random.RandomState(0)
    X = np.r_[rng.normal(-1, 1, (20, 2)), rng.normal(1, 1, (20, 2))]
    return X, np.repeat([0, 1], 20)


def test_callback_root_context_exists_during_fit_and_every_step_sees_it(blobs):
    X, y = blobs
    recorder = _Recorder()
    clf = _Iterative(max_iter=3).set_callbacks(recorder).fit(X, y)
    contexts = clf.contexts_seen_
    assert len(contexts) == 3 and contexts[0] is not None
    assert all(
        context is contexts[0] for context in contexts
    )  # one root for the whole fit
    assert contexts[0].task_name == "fit" and contexts[0].max_subtasks == 3
    assert recorder.events == ["setup", ("begin", "fit", 3), ("end", "fit"), "teardown"]
    assert not hasattr(clf, "_callback_fit_ctx")
    assert not hasattr(clf, "_skl_callbacks_to_teardown")


def test_partial_fit_gets_its_own_root_context_with_unknown_length(blobs):
    X, y = blobs
    recorder = _Recorder()
    _Iterative().set_callbacks(recorder).partial_fit(X, y, classes=[0, 1])
    assert recorder.events == [
        "setup",
        ("begin", "partial_fit", None),
        ("end", "partial_fit"),
        "teardown",
    ]


def test_failed_refit_restores_everything_and_tears_callbacks_down(blobs):
    X, y = blobs
    recorder = _Recorder()
    clf = _Iterative(max_iter=4).set_callbacks(recorder).fit(X, y)
    before = copy.deepcopy(
        {k: v for k, v in clf.__dict__.items() if k != "_skl_callbacks"}
    )
    proba = clf.predict_proba(X)
    recorder.events.clear()
    X3 = np.c_[X, X[:, :1]]
    with pytest.raises(KeyboardInterrupt):
        clf.set_params(fail_at=2).fit(X3, np.repeat(["a", "b"], 20))
    clf.set_params(fail_at=None)
    assert recorder.events == ["setup", ("begin", "fit", 4), "teardown"]
    assert (
        clf._skl_callbacks[0] is recorder
    )  # callbacks by reference, never rolled back
    assert set(clf.__dict__) == set(before) | {"_skl_callbacks"}
    for key, value in before.items():
        np.testing.assert_array_equal(clf.__dict__[key], value) if isinstance(
            value, np.ndarray
        ) else None
    assert (
        clf.n_features_in_ == 2 and clf.classes_.tolist() == [0, 1] and clf.steps_ == 4
    )
    np.testing.assert_array_equal(clf.predict_proba(X), proba)


def test_failed_first_fit_leaves_an_unfitted_estimator(blobs):
    X, y = blobs
    clf = _Iterative(fail_at=1)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X, y)
    assert clf.__dict__ == _Iterative(fail_at=1).__dict__


def test_snapshot_is_empty_before_the_first_fit():
    clf = _Iterative()
    assert copy_fitted_state(clf) == {}


def test_parameters_are_validated_once_by_the_wrapper(blobs, monkeypatch):
    X, y = blobs
    with pytest.raises(InvalidParameterError, match="max_iter"):
        _Iterative(max_iter=0).fit(X, y)
    calls = []
    original = _Iterative._validate_params
    monkeypatch.setattr(
        _Iterative, "_validate_params", lambda self: calls.append(1) or original(self)
    )
    _Iterative(max_iter=3).fit(X, y)
    assert len(calls) == 1


def test_available_if_still_hides_partial_fit(blobs):
    X, y = blobs
    assert not hasattr(_Iterative(stochastic=False), "partial_fit")
    clf = _Iterative(fail_at=1)
    with pytest.raises(KeyboardInterrupt):
        clf.partial_fit(X, y, classes=[0, 1])
    assert not hasattr(clf, "classes_")


def test_subclass_overriding_fit_with_super_has_one_root_context(blobs):
    class Child(_Iterative):
        def fit(self, X, y, sample_weight=None):
            super().fit(X, y, sample_weight)
            self.child_ran_ = True
            return self

    X, y = blobs
    recorder = _Recorder()
    clf = Child().set_callbacks(recorder).fit(X, y)
    assert clf.child_ran_
    assert recorder.events == ["setup", ("begin", "fit", 3), ("end", "fit"), "teardown"]
    assert "sample_weight" in clf.get_metadata_routing().fit.requests


def test_fits_of_different_instances_in_threads_are_independent(blobs):
    X, y = blobs
    estimators = [_Iterative(max_iter=2 + i) for i in range(4)]
    threads = [threading.Thread(target=e.fit, args=(X, y)) for e in estimators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.steps_ for e in estimators] == [2, 3, 4, 5]


def test_fitted_state_that_cannot_be_copied_is_named():
    clf = _Iterative()
    clf.lock_ = threading.Lock()
    with pytest.raises(TypeError, match=r"_Iterative.lock_ cannot be deep-copied"):
        copy_fitted_state(clf)


def test_clone_keeps_callbacks_and_drops_fitted_state(blobs):
    X, y = blobs
    recorder = _Recorder()
    clf = _Iterative().set_callbacks(recorder).fit(X, y)
    copy_ = clone(clf)
    assert copy_._skl_callbacks == [recorder]
    assert not hasattr(copy_, "classes_")


# ------------------------------------------------------------------ weights and sparse input
def test_class_weight_dict_follows_compute_class_weight():
    X = np.arange(6, dtype=float)[:, None]
    y = np.array([0, 0, 0, 0, 1, 1])
    with pytest.raises(
        ValueError, match=r"The classes, \[1\], are not in class_weight"
    ):
        _CentroidScorer(class_weight={0: 2.0, 5: 1.0}).fit(X, y)
    # every class weighted: extra keys are allowed, as in scikit-learn
    clf = _CentroidScorer(class_weight={0: 2.0, 1: 1.0, 5: 1.0}).fit(X, y)
    np.testing.assert_allclose(clf.weights_seen_, [2, 2, 2, 2, 1, 1])
    for bad in (np.inf, np.nan, -0.5, None):
        with pytest.raises(
            ValueError, match=r"class_weight values must be finite non-negative"
        ):
            _CentroidScorer(class_weight={0: bad, 1: 1.0}).fit(X, y)


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_ratio_estimators_get_weights_rescaled_exactly(scale):
    class Ratio(_CentroidScorer):
        _sample_weight_scale = "ratio"

    X = np.arange(6, dtype=float)[:, None]
    y = np.array([0, 0, 0, 1, 1, 1])
    weights = np.array([1.0, 2.0, 3.0, 1.0, 0.5, 0.25])
    clf = Ratio().fit(X, y, sample_weight=weights * scale)
    seen = clf.weights_seen_
    assert np.isfinite(seen.sum()) and 0.5 <= seen.max() < 1.0
    np.testing.assert_array_equal(
        seen / seen[0], (weights * scale) / (weights[0] * scale)
    )
    # weights in range are left alone, bit for bit
    np.testing.assert_array_equal(
        Ratio().fit(X, y, sample_weight=weights).weights_seen_, weights
    )


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_absolute_estimators_reject_weights_out_of_range(scale):
    X = np.arange(6, dtype=float)[:, None]
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.raises(
        ValueError, match="sum of sample_weight .* rescale sample_weight"
    ):
        _CentroidScorer().fit(X, y, sample_weight=np.full(6, scale))


def test_sparse_input_follows_accept_sparse():
    class Sparse(_CentroidScorer):
        _accept_sparse = True

        def fit(self, X, y, sample_weight=None):
            X, y, _ = self._validate_training_data(X, y, sample_weight)
            self.format_ = X.format
            self.centroids_ = np.stack(
                [np.asarray(X[y == k].mean(axis=0)).ravel() for k in range(2)]
            )
            return self

        def _raw_scores(self, X):
            return super()._raw_scores(X.toarray())

    X = np.arange(8, dtype=float).reshape(4, 2)
    y = [0, 0, 1, 1]
    for fmt in ("csr", "csc"):
        clf = Sparse().fit(scipy.sparse.csr_matrix(X).asformat(fmt), y)
        assert clf.format_ == fmt
        assert clf.__sklearn_tags__().input_tags.sparse
        np.testing.assert_array_equal(clf.predict(scipy.sparse.csr_matrix(X)), y)
    assert not _CentroidScorer().__sklearn_tags__().input_tags.sparse
    with pytest.raises(TypeError, match="Sparse data"):
        _CentroidScorer().fit(scipy.sparse.csr_matrix(X), y)


# ----------------------------------------------------------------- regressors
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from skquad._base import BaseQuadraticRegressor  # noqa: E402


class _WeightedLeastSquares(BaseQuadraticRegressor):
    """Ordinary weighted least squares with an intercept, through the regressor base."""

    def __init__(self, clip_inputs=True):
        self.clip_inputs = clip_inputs

    def fit(self, X, y, sample_weight=None):
        X, Y, sw = self._validate_training_data(X, y, sample_weight)
        design = np.column_stack([X, np.ones(X.shape[0])]) * np.sqrt(sw)[:, None]
        self.coef_ = np.linalg.lstsq(design, Y * np.sqrt(sw)[:, None], rcond=None)[0]
        return self

    def partial_fit(self, X, y, sample_weight=None):
        first = not hasattr(self, "coef_")
        self._validate_training_data(X, y, sample_weight, reset=first)
        return self if not first else self.fit(X, y, sample_weight)

    def _raw_scores(self, X):
        return X @ self.coef_[:-1] + self.coef_[-1]


def test_regressor_base_passes_check_estimator():
    check_estimator(_WeightedLeastSquares())


@pytest.mark.parametrize("n_outputs", [None, 1, 3])
def test_regressor_predicts_the_fitted_shape_and_matches_least_squares(n_outputs):
    rng = np.random.RandomState(0)
    X = rng.randn(30, 4)
    y = rng.randn(30) if n_outputs is None else rng.randn(30, n_outputs)
    sw = rng.uniform(0.5, 2.0, size=30)
    model = _WeightedLeastSquares().fit(X, y, sample_weight=sw)
    reference = LinearRegression().fit(X, y, sample_weight=sw)
    assert model.predict(X).shape == y.shape
    assert model.n_outputs_ == (1 if n_outputs is None else n_outputs)
    # Both solve the same well-conditioned least-squares problem in float64.
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=1e-8, atol=1e-10)
    assert model.score(X, y) == pytest.approx(reference.score(X, y), rel=1e-8)


def test_regressor_refuses_bad_targets_and_keeps_the_previous_model():
    rng = np.random.RandomState(0)
    X, y = rng.randn(20, 2), rng.randn(20)
    model = _WeightedLeastSquares().fit(X, y)
    before = model.coef_.copy()
    with pytest.raises(ValueError, match="must be numeric"):
        model.fit(X, np.array(["a", "b"] * 10))
    with pytest.raises(ValueError, match="NaN"):
        model.fit(X, np.where(np.arange(20) == 3, np.nan, y))
    with pytest.raises(ValueError, match="infinity"):
        model.fit(X, np.where(np.arange(20) == 3, np.inf, y))
    with pytest.raises(ValueError, match="fitted on a 1-D y"):
        model.partial_fit(X, y[:, None])
    np.testing.assert_array_equal(model.coef_, before)


def test_parameter_names_are_read_once_per_class_and_follow_each_constructor():
    from skquad.linear_model import QuadraticRegression

    class WithExtra(QuadraticRegression):
        def __init__(self, alpha="auto", *, extra=0):
            super().__init__(alpha=alpha)
            self.extra = extra

    names = sorted(QuadraticRegression().get_params())
    assert WithExtra(extra=3).get_params() == {"alpha": "auto", "extra": 3}
    assert sorted(QuadraticRegression().get_params()) == names
    assert "extra" not in names and "clip_outputs" in names
    # the list handed out is the caller's: changing it leaves the class's names alone
    WithExtra._get_param_names().append("changed")
    assert WithExtra._get_param_names() == ["alpha", "extra"]
    assert clone(WithExtra(alpha=2.0, extra=5)).get_params() == {"alpha": 2.0, "extra": 5}
