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

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

import skquad
from skquad import BackpropQuantizedClassifier, QNNClassifier, SDPQuantizedClassifier

from _estimator_cases import (
    ESTIMATORS,
    data,
    issue_data,
    other_data,
    fit_allowing_convergence_warning,
    only_convergence_warnings,
    _state,
    _twin,
    _assert_untouched,
)


_SKQUAD_DIR = Path(skquad.__file__).resolve().parent
# The base's own lines (the wrapper's snapshot and restore) are not "training",
# nor the thread bookkeeping's: an exception injected into limit_threads'
# ``finally`` cuts its restore short and leaves the process's thread limits
# set for every later test (a window of a few lines for a real interrupt; the
# SDP's refit landed its halfway line there after the solver changed).
_NOT_TRAINING = {
    _SKQUAD_DIR / "_base.py", _SKQUAD_DIR / "_foundation" / "_reporting.py", _SKQUAD_DIR / "_foundation" / "_threads.py",
}


class _InterruptHalfway:
    """Raise ``exception`` at the ``at``-th line executed in skquad's training code."""

    def __init__(self, estimator, at=None, exception=None):
        self.estimator = estimator
        self.at = at
        self.exception = exception
        self.count = 0
        self.n_features_when_fired = None
        self.working_n_features_when_fired = None

    def _working_n_features(self, frame):
        """``n_features_in_`` of the working copy being fitted (the innermost ``self``)."""
        while frame is not None:
            candidate = frame.f_locals.get("self")
            if type(candidate) is type(self.estimator) and candidate is not self.estimator:
                return getattr(candidate, "n_features_in_", None)
            frame = frame.f_back
        return None

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
    estimator = fit_allowing_convergence_warning(ESTIMATORS[name](), X, y)
    before_state, before_proba = _state(estimator), estimator.predict_proba(X)

    def refit(est):
        fit_allowing_convergence_warning(est, X2, y2)

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
    assert fit_allowing_convergence_warning(estimator, X2, y2).predict(X2).shape == (X2.shape[0],)


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
    with only_convergence_warnings():
        estimator.partial_fit(X, y, classes=np.unique(y))
        estimator.partial_fit(X, y)
    before_state, before_proba = _state(estimator), estimator.predict_proba(X)

    def step(est):
        with only_convergence_warnings():
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
    estimator = fit_allowing_convergence_warning(ESTIMATORS["SDP"](), X, y)
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
    total = _lines_executed(lambda est: fit_allowing_convergence_warning(est, X, y), ESTIMATORS["QNN"]())
    with (
        pytest.raises(KeyboardInterrupt),
        _InterruptHalfway(estimator, at=total // 2, exception=KeyboardInterrupt()),
    ):
        fit_allowing_convergence_warning(estimator, X, y)
    assert estimator.__dict__ == ESTIMATORS["QNN"]().__dict__
    with pytest.raises(NotFittedError):
        estimator.predict(X)


# ----------------------------------------------------------------- the issue's reproducers


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
    clf = fit_allowing_convergence_warning(clf, X, y)
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
    clf = fit_allowing_convergence_warning(QNNClassifier(max_iter=30, random_state=0, warm_start=True), X, y)
    before_state, before_proba = _state(clf), clf.predict_proba(X)
    with pytest.raises(ValueError, match="warm_start"):
        clf.fit(X3, y3)
    _assert_untouched(clf, before_state, before_proba, X)
    assert clf.classes_.tolist() == [0, 1]


def test_qnn_refit_with_an_empty_layer_keeps_the_model(issue_data):
    X, y = issue_data
    clf = fit_allowing_convergence_warning(QNNClassifier(max_iter=30, random_state=0), X, y)
    before_state, before_proba = _state(clf), clf.predict_proba(X)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        clf.set_params(hidden_layer_sizes=(0,)).fit(X, y)
    clf.set_params(hidden_layer_sizes=(100,))
    _assert_untouched(clf, before_state, before_proba, X)


