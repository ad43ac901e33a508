"""The base's callback support: every estimator's fit reports its root task, and a Pipeline's callbacks reach it."""

import numpy as np
import pytest

from skquad import QNNClassifier

from _estimator_cases import (
    ESTIMATORS,
    data,
    issue_data,
    fit_allowing_convergence_warning,
    only_convergence_warnings,
)


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
    fit_allowing_convergence_warning(estimator, X, y)
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
    estimator = fit_allowing_convergence_warning(ESTIMATORS[name]().set_callbacks(monitor), X, y)
    logs = monitor.get_logs().data
    root = [row for row in logs if len(row["task_id_path"]) == 1]
    assert len(root) == 1
    assert root[0]["accuracy"] == pytest.approx(estimator.score(X, y))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_stock_progress_bar_does_not_break_the_fit(name, data, capsys):
    pytest.importorskip("rich")
    from sklearn.callback import ProgressBar

    X, y = data
    estimator = fit_allowing_convergence_warning(ESTIMATORS[name]().set_callbacks(ProgressBar()), X, y)
    reference = fit_allowing_convergence_warning(ESTIMATORS[name](), X, y)
    np.testing.assert_array_equal(
        estimator.predict_proba(X), reference.predict_proba(X)
    )


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
    with only_convergence_warnings():
        pipeline.fit(X, y)
    class_name = type(estimator).__name__
    # The estimator's root task is merged with the pipeline's step task.
    assert ("begin", class_name, "Pipeline") in recorder.events
    assert ("end", class_name) in recorder.events
    kinds = [event[0] for event in recorder.events]
    assert kinds.count("setup") == kinds.count("teardown") == 1  # by the pipeline only
    assert not hasattr(estimator, "_parent_callback_ctx")
    assert not hasattr(estimator, "_skl_callbacks")  # handed back after the fit


@pytest.mark.parametrize("name", ["QuadraticLogisticRegression", "QNNRegressor", "SDPQuantizedClassifier",
                                  "SDPQuantizedRegressor"])
def test_a_held_out_search_inside_fit_calls_no_callback(name):
    """The defaults' held-out searches (quadratic_C, alpha, beta) fit candidates: the user's
    callbacks see the one fit they asked for (skquad._foundation._held_out.search_candidate)."""
    import skquad
    from sklearn.base import is_classifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 4))
    score = X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(150)
    estimator = getattr(skquad, name)()
    params = {"n_neurons": 50} if name.startswith("SDP") else {}
    estimator.set_params(random_state=0, **params)
    recorder = _Recorder()
    y = (score > 0).astype(int) if is_classifier(estimator) else score
    fit_allowing_convergence_warning(estimator.set_callbacks(recorder), X, y)
    assert [event[0] for event in recorder.events] == ["setup", "begin", "end", "teardown"]
