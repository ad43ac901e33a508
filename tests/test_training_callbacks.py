"""scikit-learn's callback API through the training engine, on QuadraticLogisticRegression."""

import warnings

import numpy as np
import pytest
from sklearn.callback import ScoringMonitor
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticLogisticRegression


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    # string labels: the callbacks must see the user's labels, not class indices
    return StandardScaler().fit_transform(X), np.array(["setosa", "versicolor", "virginica"])[y]


class StopAfter:
    """A user's FitCallback that asks to stop after ``n`` subtasks and records them."""

    def __init__(self, n):
        self.n = n
        self.ended = []

    def setup(self, estimator, context):
        self.ended = []

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None, metadata=None,
                          fitted_estimator=None):
        pass

    def on_fit_task_end(self, estimator, context, *, X=None, y=None, metadata=None,
                        fitted_estimator=None):
        # scipy's L-BFGS leaves one begun, never-run iteration: ended empty
        if context.task_name in ("epoch", "lbfgs-iter") and fitted_estimator is not None:
            self.ended.append((context.task_name, context.task_id,
                               fitted_estimator.score(X, y)))
            return len(self.ended) >= self.n
        return False

    def teardown(self, estimator, context):
        pass


def test_scoring_monitor_scores_every_lbfgs_iteration(iris):
    X, y = iris
    monitor = ScoringMonitor(scoring="accuracy")
    clf = QuadraticLogisticRegression().set_callbacks(monitor).fit(X, y)
    rows = monitor.get_logs().data
    iterations = [row for row in rows if row["task_name"] == "lbfgs-iter"]
    assert [row["task_id"] for row in iterations] == list(range(clf.n_iter_[0]))
    # the first iteration is far from the optimum, the last one is the fitted model
    assert iterations[0]["accuracy"] < iterations[-1]["accuracy"]
    assert iterations[-1]["accuracy"] == pytest.approx(clf.score(X, y))
    root = [row for row in rows if row["task_name"] == "fit"]
    assert len(root) == 1 and root[0]["accuracy"] == clf.score(X, y)


def test_scoring_monitor_scores_every_sgd_epoch(iris):
    X, y = iris
    monitor = ScoringMonitor(scoring="accuracy")
    clf = QuadraticLogisticRegression(solver="sgd", learning_rate_init=0.1, max_iter=4,
                                      random_state=0).set_callbacks(monitor)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(4\\)"):
        clf.fit(X, y)
    epochs = [row for row in monitor.get_logs().data if row["task_name"] == "epoch"]
    assert [row["task_id"] for row in epochs] == [0, 1, 2, 3]
    assert epochs[-1]["accuracy"] == pytest.approx(clf.score(X, y))


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_a_user_callback_stops_training_without_a_convergence_warning(iris, solver):
    X, y = iris
    callback = StopAfter(3)
    clf = QuadraticLogisticRegression(solver=solver, random_state=0).set_callbacks(callback)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # asserts: none is emitted
        clf.fit(X, y)
    assert clf.n_iter_ == 3 and len(callback.ended) == 3
    # the fitted_estimator handed to the hook predicts with that iteration's parameters
    assert callback.ended[-1][2] == pytest.approx(clf.score(X, y))


def test_progress_bar_runs_on_lbfgs_and_sgd(iris, capsys):
    pytest.importorskip("rich")  # ProgressBar needs it (scikit-learn's optional dependency)
    from sklearn.callback import ProgressBar

    X, y = iris
    QuadraticLogisticRegression().set_callbacks(ProgressBar()).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        QuadraticLogisticRegression(solver="sgd", max_iter=3, random_state=0).set_callbacks(
            ProgressBar()
        ).fit(X, y)
    assert "QuadraticLogisticRegression" in capsys.readouterr().out


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_a_fit_without_callbacks_makes_no_subtasks(iris, solver, monkeypatch):
    """No callback set: no hook would read a subtask, so none is made (they cost 4 %
    of spambase's L-BFGS fit); with one, every iteration (epoch) is one."""
    from sklearn.callback._callback_context import CallbackContext

    made = []
    subcontext = CallbackContext.subcontext
    def counted(self, *args, **kwargs):
        made.append(1)
        return subcontext(self, *args, **kwargs)

    monkeypatch.setattr(CallbackContext, "subcontext", counted)
    X, y = iris
    params = dict(solver=solver, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        QuadraticLogisticRegression(**params).fit(X, y)
        assert not made
        QuadraticLogisticRegression(**params).set_callbacks(StopAfter(100)).fit(X, y)
    assert len(made) >= 5
