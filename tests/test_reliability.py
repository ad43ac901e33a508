"""A fitted model is never corrupted, and every failure is loud and clear (issue 10).

Atomic fit: a ``fit``, ``partial_fit`` or ``resample`` that raises or is
interrupted leaves the previous model exactly as it was. Failures are injected
in two ways that do not depend on how an estimator is written inside:

* the issue's reproducers, which fail for real (a solver that cannot solve
  the problem, a device that does not exist, invalid parameters);
* :class:`_InterruptHalfway`, a trace function that raises a given exception
  at the line of skquad's own code (outside the base) that runs halfway
  through the refit, measured by a first, counting run of the same fit. The
  refit uses data with other features and other classes, so at that point the
  validation has overwritten ``n_features_in_`` and ``classes_`` (checked),
  and only the base's rollback can bring the old model back.
"""

import copy
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

import skquad
from skquad import (
    BackpropQuantizedClassifier,
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
)

_SKQUAD_DIR = Path(skquad.__file__).resolve().parent
# The base's own lines (the wrapper's snapshot and restore) are not "training".
_NOT_TRAINING = {_SKQUAD_DIR / "_base.py", _SKQUAD_DIR / "_reporting.py"}

# Small, quick versions of the five estimators (the default constructors are
# exercised by the bad-input tests below).
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


def _quiet_fit(estimator, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y, **kwargs)


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
    _assert_same(estimator.__dict__, before_state)
    np.testing.assert_array_equal(estimator.predict_proba(X), before_proba)


class _InterruptHalfway:
    """Raise ``exception`` at the ``at``-th line executed in skquad's training code."""

    def __init__(self, estimator, at=None, exception=None):
        self.estimator = estimator
        self.at = at
        self.exception = exception
        self.count = 0
        self.n_features_when_fired = None
        self.working_n_features_when_fired = None

    def _is_training(self, frame):
        filename = frame.f_code.co_filename
        return (
            filename.startswith(str(_SKQUAD_DIR))
            and Path(filename) not in _NOT_TRAINING
        )

    def _global(self, frame, event, arg):
        return self._local if self._is_training(frame) else None

    def _local(self, frame, event, arg):
        if event == "line":
            self.count += 1
            if self.count == self.at:
                self.n_features_when_fired = getattr(
                    self.estimator, "n_features_in_", None
                )
                self.working_n_features_when_fired = self._working_n_features(frame)
                raise self.exception
        return self._local

    def _working_n_features(self, frame):
        """``n_features_in_`` of the working copy being fitted (the innermost ``self``)."""
        while frame is not None:
            candidate = frame.f_locals.get("self")
            if type(candidate) is type(self.estimator) and candidate is not self.estimator:
                return getattr(candidate, "n_features_in_", None)
            frame = frame.f_back
        return None

    def __enter__(self):
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc_info):
        sys.settrace(None)
        return False


def _lines_executed(call, estimator):
    with _InterruptHalfway(estimator) as counter:
        call(estimator)
    return counter.count


@pytest.mark.parametrize(
    "exception",
    [RuntimeError("injected failure"), KeyboardInterrupt()],
    ids=["failure", "interrupt"],
)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_refit_interrupted_halfway_leaves_the_model_as_it_was(
    name, exception, data, other_data
):
    X, y = data
    X2, y2 = other_data
    estimator = _quiet_fit(ESTIMATORS[name](), X, y)
    before_state, before_proba = _state(estimator), estimator.predict_proba(X)

    def refit(est):
        _quiet_fit(est, X2, y2)

    total = _lines_executed(refit, ESTIMATORS[name]())
    assert total > 100, "the refit should run skquad code worth interrupting"
    with (
        pytest.raises(type(exception)),
        _InterruptHalfway(estimator, at=total // 2, exception=exception) as injected,
    ):
        refit(estimator)
    # The interruption came after the validation had set the new state on
    # the working copy; the live estimator never saw it.
    assert injected.working_n_features_when_fired == X2.shape[1]
    assert injected.n_features_when_fired == X.shape[1]
    _assert_untouched(estimator, before_state, before_proba, X)
    # The restored model is a working model: it refits and predicts.
    assert _quiet_fit(estimator, X2, y2).predict(X2).shape == (X2.shape[0],)


@pytest.mark.parametrize(
    "exception",
    [RuntimeError("injected failure"), KeyboardInterrupt()],
    ids=["failure", "interrupt"],
)
@pytest.mark.parametrize("name", ["QLR", "QNN", "RPQNN", "BackpropQ"])
def test_partial_fit_interrupted_halfway_leaves_the_model_as_it_was(
    name, exception, data
):
    X, y = data
    make = ESTIMATORS[name]
    if name == "QLR":
        make = lambda: ESTIMATORS["QLR"]().set_params(solver="sgd", random_state=0)
    estimator = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.partial_fit(X, y, classes=np.unique(y))
        estimator.partial_fit(X, y)
    before_state, before_proba = _state(estimator), estimator.predict_proba(X)

    def step(est):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.partial_fit(X, y)

    uninterrupted = _twin(estimator)
    total = _lines_executed(step, _twin(estimator))
    with (
        pytest.raises(type(exception)),
        _InterruptHalfway(estimator, at=total // 2, exception=exception),
    ):
        step(estimator)
    _assert_untouched(estimator, before_state, before_proba, X)
    # The optimizer state came back too: the next step is the one it would have been.
    step(estimator)
    step(uninterrupted)
    np.testing.assert_array_equal(
        estimator.predict_proba(X), uninterrupted.predict_proba(X)
    )


def test_sdp_resample_interrupted_leaves_the_network_as_it_was(data):
    X, y = data
    estimator = _quiet_fit(ESTIMATORS["SDP"](), X, y)
    before_state, before_proba = _state(estimator), estimator.predict_proba(X)

    def resample(est):
        est.resample(n_neurons=60, random_state=3)

    total = _lines_executed(resample, _twin(estimator))
    with (
        pytest.raises(KeyboardInterrupt),
        _InterruptHalfway(estimator, at=total // 2, exception=KeyboardInterrupt()),
    ):
        resample(estimator)
    _assert_untouched(estimator, before_state, before_proba, X)


def test_failed_first_fit_leaves_no_fitted_attributes(data, other_data):
    X, y = data
    estimator = ESTIMATORS["QNN"]()
    total = _lines_executed(lambda est: _quiet_fit(est, X, y), ESTIMATORS["QNN"]())
    with (
        pytest.raises(KeyboardInterrupt),
        _InterruptHalfway(estimator, at=total // 2, exception=KeyboardInterrupt()),
    ):
        _quiet_fit(estimator, X, y)
    assert estimator.__dict__ == ESTIMATORS["QNN"]().__dict__
    with pytest.raises(NotFittedError):
        estimator.predict(X)


# ----------------------------------------------------------------- the issue's reproducers
@pytest.fixture(scope="module")
def issue_data():
    return make_classification(n_samples=200, n_features=5, random_state=0)


def test_sdp_refit_with_a_failing_solver_keeps_the_model(issue_data):
    X, y = issue_data
    clf = SDPQuantizedClassifier(n_neurons=200, random_state=0).fit(X, y)
    before_state, before_proba = _state(clf), clf.predict_proba(X)
    assert clf.score(X, y) > 0.9
    with pytest.raises(Exception, match="OSQP"):
        clf.set_params(solver="OSQP").fit(X * 100, y)
    clf.set_params(solver=None)
    _assert_untouched(clf, before_state, before_proba, X)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_backprop_refit_on_a_missing_device_keeps_the_model(issue_data):
    X, y = issue_data
    clf = BackpropQuantizedClassifier(max_iter=30, random_state=0)
    clf = _quiet_fit(clf, X, y)
    before_state, before_proba = _state(clf), clf.predict_proba(X)
    with pytest.raises(ValueError, match="CUDA is not available"):
        clf.set_params(device="cuda").fit(X, y)
    clf.set_params(device=BackpropQuantizedClassifier().device)
    _assert_untouched(clf, before_state, before_proba, X)


def test_sdp_keyboard_interrupt_during_the_refit_keeps_the_model(
    issue_data, other_data
):
    X, y = issue_data
    clf = SDPQuantizedClassifier(n_neurons=200, random_state=0).fit(X, y)
    before_state, before_proba = _state(clf), clf.predict_proba(X)
    X2, y2 = other_data
    refit = lambda est: est.fit(X2, y2)
    total = _lines_executed(
        refit, SDPQuantizedClassifier(n_neurons=200, random_state=0)
    )
    with (
        pytest.raises(KeyboardInterrupt),
        _InterruptHalfway(clf, at=total // 2, exception=KeyboardInterrupt()),
    ):
        refit(clf)
    _assert_untouched(clf, before_state, before_proba, X)


def test_qnn_warm_start_refit_on_other_classes_keeps_the_model(issue_data):
    X, y = issue_data
    X3, y3 = make_classification(
        n_samples=200, n_features=5, n_informative=3, n_classes=3, random_state=0
    )
    clf = _quiet_fit(QNNClassifier(max_iter=30, random_state=0, warm_start=True), X, y)
    before_state, before_proba = _state(clf), clf.predict_proba(X)
    with pytest.raises(ValueError, match="warm_start"):
        clf.fit(X3, y3)
    _assert_untouched(clf, before_state, before_proba, X)
    assert clf.classes_.tolist() == [0, 1]


def test_qnn_refit_with_an_empty_layer_keeps_the_model(issue_data):
    X, y = issue_data
    clf = _quiet_fit(QNNClassifier(max_iter=30, random_state=0), X, y)
    before_state, before_proba = _state(clf), clf.predict_proba(X)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        clf.set_params(hidden_layer_sizes=(0,)).fit(X, y)
    clf.set_params(hidden_layer_sizes=(100,))
    _assert_untouched(clf, before_state, before_proba, X)


# ----------------------------------------------------------------- callbacks
class _Recorder:
    """A FitCallback that records the root task's events."""

    def __init__(self):
        self.events = []

    def setup(self, estimator, context):
        self.events.append(("setup", context.task_name))

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None):
        if context.parent is None:
            self.events.append(("begin", context.task_name, context.max_subtasks, X, y))
            assert estimator._callback_fit_ctx is context

    def on_fit_task_end(
        self, estimator, context, *, X=None, y=None, fitted_estimator=None
    ):
        if context.parent is None:
            self.events.append(("end", context.task_name, X, y, fitted_estimator))

    def teardown(self, estimator, context):
        self.events.append(("teardown", context.task_name))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_root_callback_events_of_fit(name, data):
    X, y = data
    recorder = _Recorder()
    estimator = ESTIMATORS[name]().set_callbacks(recorder)
    _quiet_fit(estimator, X, y)
    assert [event[0] for event in recorder.events] == [
        "setup",
        "begin",
        "end",
        "teardown",
    ]
    _, task, max_subtasks, X_seen, y_seen = recorder.events[1]
    assert task == "fit" and X_seen is X and y_seen is y
    assert max_subtasks == estimator._callback_max_subtasks("fit")
    fitted = recorder.events[2][4]
    np.testing.assert_array_equal(fitted.predict(X), estimator.predict(X))
    assert not hasattr(estimator, "_callback_fit_ctx")
    # The callbacks survive cloning, as in scikit-learn.
    from sklearn.base import clone

    assert clone(estimator)._skl_callbacks == [recorder]


def test_callbacks_are_torn_down_when_the_fit_fails(issue_data):
    X, y = issue_data
    recorder = _Recorder()
    clf = QNNClassifier(hidden_layer_sizes=(0,)).set_callbacks(recorder)
    with pytest.raises(ValueError):
        clf.fit(X, y)
    assert [event[0] for event in recorder.events] == ["setup", "begin", "teardown"]
    assert not hasattr(clf, "_callback_fit_ctx")
    assert clf._skl_callbacks == [recorder]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_stock_scoring_monitor_logs_the_fit(name, data):
    from sklearn.callback import ScoringMonitor

    X, y = data
    monitor = ScoringMonitor(scoring="accuracy")
    estimator = _quiet_fit(ESTIMATORS[name]().set_callbacks(monitor), X, y)
    logs = monitor.get_logs().data
    root = [row for row in logs if len(row["task_id_path"]) == 1]
    assert len(root) == 1
    assert root[0]["accuracy"] == pytest.approx(estimator.score(X, y))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_stock_progress_bar_does_not_break_the_fit(name, data, capsys):
    pytest.importorskip("rich")
    from sklearn.callback import ProgressBar

    X, y = data
    estimator = _quiet_fit(ESTIMATORS[name]().set_callbacks(ProgressBar()), X, y)
    reference = _quiet_fit(ESTIMATORS[name](), X, y)
    np.testing.assert_array_equal(
        estimator.predict_proba(X), reference.predict_proba(X)
    )


# ----------------------------------------------------------------- weights
@pytest.mark.parametrize("name", DEFAULTS)
def test_class_weight_key_matching_no_class_is_an_error(name, data):
    X, y = data
    with pytest.raises(
        ValueError, match=r"The classes, \[1\], are not in class_weight"
    ):
        DEFAULTS[name](class_weight={0: 1.0, 7: 2.0}).fit(X, y)


@pytest.mark.parametrize("value", [np.inf, np.nan, -1.0, "heavy"])
@pytest.mark.parametrize("name", DEFAULTS)
def test_class_weight_values_must_be_finite_and_non_negative(name, value, data):
    X, y = data
    with pytest.raises(
        ValueError, match=r"class_weight values must be finite non-negative"
    ):
        DEFAULTS[name](class_weight={0: value, 1: 1.0}).fit(X, y)


@pytest.mark.parametrize("scale", [1e-300, 1e307])
@pytest.mark.parametrize("name", ["QLR", "QNN", "RPQNN", "BackpropQ"])
def test_weights_out_of_range_are_rejected_where_their_scale_matters(name, scale, data):
    X, y = data
    with pytest.raises(ValueError, match="sum of sample_weight"):
        ESTIMATORS[name]().fit(X, y, sample_weight=np.full(len(y), scale))


@pytest.mark.parametrize("scale", [1e-300, 1e307])
def test_sdp_rescales_weights_out_of_range_exactly(scale, data):
    """The SDP's objective is a weighted mean: only the weights' ratios matter.

    The rescaled weights equal the reference ones to rounding; the native solver
    stops on a certified gap (tol=1e-4), so rounding may move its stopping point
    and the models agree to the solver's tolerance, not to the last bit.
    """
    X, y = data
    ratios = np.random.RandomState(0).uniform(0.5, 2.0, len(y))
    reference = ESTIMATORS["SDP"]().fit(X, y, sample_weight=ratios)
    scaled = ESTIMATORS["SDP"]().fit(X, y, sample_weight=ratios * scale)
    np.testing.assert_allclose(scaled.lower_bound_, reference.lower_bound_, rtol=1e-4)
    np.testing.assert_allclose(
        scaled.predict_proba(X), reference.predict_proba(X), rtol=0, atol=1e-3
    )


@pytest.mark.parametrize("name", DEFAULTS)
def test_all_zero_weights_are_an_error(name, data):
    X, y = data
    with pytest.raises(ValueError, match="at least one non-zero"):
        DEFAULTS[name]().fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="zero for every sample"):
        DEFAULTS[name](class_weight={0: 0, 1: 0}).fit(X, y)


# ----------------------------------------------------------------- bad input, default constructors
def _bad_inputs(X, y):
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    Xinf = X.copy()
    Xinf[0, 0] = np.inf
    return {
        "nan": (Xnan, y, ValueError, "NaN"),
        "inf": (Xinf, y, ValueError, "infinity"),
        "empty": (X[:0], y[:0], ValueError, "0 sample"),
        "no_features": (X[:, :0], y, ValueError, "0 feature"),
        "one_class": (X, np.zeros_like(y), ValueError, "class"),
        "1d_X": (X[:, 0], y, ValueError, "2D array"),
        "3d_X": (X[:, :, None], y, ValueError, "dim 3"),
        "strings": (
            np.array([["a", "b"]] * len(y)),
            y,
            ValueError,
            "could not convert|dtype",
        ),
        "y_too_short": (X, y[:-1], ValueError, "inconsistent numbers of samples"),
        "continuous_y": (
            X,
            np.linspace(0, 1, len(y)),
            ValueError,
            "Unknown label type",
        ),
        "sample_weight_negative": (
            X,
            y,
            ValueError,
            "Negative values in data passed to `sample_weight`",
        ),
        "sample_weight_wrong_length": (
            X,
            y,
            ValueError,
            r"sample_weight.shape == \(\d+,\), expected",
        ),
        "sample_weight_nan": (X, y, ValueError, "NaN"),
    }


_BAD_WEIGHTS = {
    "sample_weight_negative": lambda n: np.r_[-1.0, np.ones(n - 1)],
    "sample_weight_wrong_length": lambda n: np.ones(n + 1),
    "sample_weight_nan": lambda n: np.r_[np.nan, np.ones(n - 1)],
}


@pytest.mark.parametrize(
    "case",
    list(_bad_inputs(np.zeros((4, 2)), np.array([0, 1, 0, 1]))),
)
@pytest.mark.parametrize("name", DEFAULTS)
def test_bad_input_at_fit_gets_a_clear_sklearn_error(name, case, data):
    X, y = data
    X_bad, y_bad, error, message = _bad_inputs(X, y)[case]
    kwargs = {}
    if case in _BAD_WEIGHTS:
        kwargs["sample_weight"] = _BAD_WEIGHTS[case](len(y))
    with pytest.raises(error, match=message):
        DEFAULTS[name]().fit(X_bad, y_bad, **kwargs)


@pytest.fixture(scope="module")
def fitted_defaults():
    X, y = make_classification(
        n_samples=60, n_features=4, n_informative=3, n_redundant=0, random_state=0
    )
    return {name: _quiet_fit(make(), X, y) for name, make in DEFAULTS.items()}, X


@pytest.mark.parametrize("name", DEFAULTS)
def test_bad_input_at_predict_gets_a_clear_sklearn_error(name, fitted_defaults):
    estimators, X = fitted_defaults
    estimator = estimators[name]
    with pytest.raises(
        ValueError, match="X has 3 features, but .* is expecting 4 features"
    ):
        estimator.predict(X[:, :3])
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        estimator.predict_proba(Xnan)
    with pytest.raises(ValueError, match="2D array"):
        estimator.predict(X[0])
    with pytest.raises(ValueError, match="could not convert"):
        estimator.decision_function(np.full(X.shape, "x"))
    with pytest.raises(NotFittedError):
        DEFAULTS[name]().predict(X)


@pytest.mark.parametrize("name", DEFAULTS)
def test_sparse_input_is_a_clear_error_where_not_supported(name, fitted_defaults):
    import scipy.sparse

    estimators, X = fitted_defaults
    estimator = estimators[name]
    if estimator._accept_sparse:
        pytest.skip(f"{name} takes sparse input")
    assert not estimator.__sklearn_tags__().input_tags.sparse
    with pytest.raises(TypeError, match="Sparse data was passed"):
        estimator.predict(scipy.sparse.csr_matrix(X))


# ----------------------------------------------------------------- devices and read-only input
@pytest.mark.parametrize("name", ESTIMATORS)
def test_predicting_on_read_only_data_emits_no_warning(
    name, data, tmp_path, monkeypatch
):
    X, y = data
    estimator = _quiet_fit(ESTIMATORS[name](), X, y)
    expected = estimator.predict_proba(X)
    memmap = np.memmap(tmp_path / "X.dat", dtype=X.dtype, mode="w+", shape=X.shape)
    memmap[:] = X
    memmap.flush()
    read_only = np.memmap(tmp_path / "X.dat", dtype=X.dtype, mode="r", shape=X.shape)
    frame = pd.DataFrame(X)
    # torch warns about a non-writable array only once per process, so the
    # entry points that make tensors from numpy arrays are watched as well.
    for function in ("as_tensor", "from_numpy", "tensor"):
        monkeypatch.setattr(
            torch, function, _refusing_read_only(getattr(torch, function))
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for inputs in (read_only, frame):
            np.testing.assert_array_equal(estimator.predict_proba(inputs), expected)


def _refusing_read_only(function):
    def watched(data, *args, **kwargs):
        if isinstance(data, np.ndarray) and not data.flags.writeable:
            raise AssertionError(f"torch.{function.__name__} got a read-only array")
        return function(data, *args, **kwargs)

    return watched


@pytest.mark.parametrize(
    "name",
    [
        name
        for name in ESTIMATORS
        if "device" in DEFAULTS[name]().get_params()
    ],
)
def test_a_model_fitted_on_a_gpu_predicts_after_unpickling_on_a_cpu_machine(name, data):
    X, y = data
    estimator = _quiet_fit(ESTIMATORS[name](), X, y)
    expected = estimator.predict_proba(X)
    estimator.device = "cuda"  # as if fitted on a GPU
    restored = pickle.loads(pickle.dumps(estimator))
    if not torch.cuda.is_available():
        np.testing.assert_allclose(
            restored.predict_proba(X), expected, rtol=1e-6, atol=1e-9
        )
    else:  # pragma: no cover - GPU machines compute in another order
        np.testing.assert_allclose(
            restored.predict_proba(X), expected, rtol=1e-4, atol=1e-5
        )


_TORCH_ESTIMATORS = [
    name for name in ESTIMATORS if "device" in DEFAULTS[name]().get_params()
]


@pytest.mark.parametrize("device", ["CPU", "auto", "cpu"])
@pytest.mark.parametrize("name", _TORCH_ESTIMATORS)
def test_device_spellings_are_accepted_at_fit(name, device, data):
    X, y = data
    reference = _quiet_fit(
        ESTIMATORS[name]().set_params(device="cpu"), X, y
    ).predict_proba(X)
    fitted = _quiet_fit(ESTIMATORS[name]().set_params(device=device), X, y)
    np.testing.assert_array_equal(fitted.predict_proba(X), reference)


@pytest.mark.parametrize(
    "name", _TORCH_ESTIMATORS
)
def test_a_torch_device_is_accepted_at_fit(name, data):
    X, y = data
    reference = _quiet_fit(
        ESTIMATORS[name]().set_params(device="cpu"), X, y
    ).predict_proba(X)
    fitted = _quiet_fit(ESTIMATORS[name]().set_params(device=torch.device("cpu")), X, y)
    np.testing.assert_array_equal(fitted.predict_proba(X), reference)


class _PropagatedRecorder(_Recorder):
    """An auto-propagated callback: a meta-estimator hands it to its sub-estimators."""

    max_propagation_depth = None

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None):
        self.events.append(
            ("begin", context.estimator_name, context.source_estimator_name)
        )

    def on_fit_task_end(
        self, estimator, context, *, X=None, y=None, fitted_estimator=None
    ):
        self.events.append(("end", context.estimator_name))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_callbacks_propagate_from_a_pipeline_into_the_estimators_fit(name, data):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = data
    recorder = _PropagatedRecorder()
    estimator = ESTIMATORS[name]()
    pipeline = make_pipeline(StandardScaler(), estimator).set_callbacks(recorder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipeline.fit(X, y)
    class_name = type(estimator).__name__
    # The estimator's root task is merged with the pipeline's step task.
    assert ("begin", class_name, "Pipeline") in recorder.events
    assert ("end", class_name) in recorder.events
    kinds = [event[0] for event in recorder.events]
    assert kinds.count("setup") == kinds.count("teardown") == 1  # by the pipeline only
    assert not hasattr(estimator, "_parent_callback_ctx")
    assert not hasattr(estimator, "_skl_callbacks")  # handed back after the fit
