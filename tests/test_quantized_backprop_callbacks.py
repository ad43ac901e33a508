"""scikit-learn's callback API on BackpropQuantizedClassifier and BackpropQuantizedRegressor.

Every epoch is a subtask, as for QuadraticLogisticRegression and the networks
(tests/test_training_callbacks.py): issue 22 measured a ScoringMonitor on
BackpropQ logging only ``['fit']``.
"""

import warnings

import numpy as np
import pytest
from sklearn.callback import ScoringMonitor
from sklearn.datasets import load_iris, make_regression
from sklearn.exceptions import ConvergenceWarning

from skquad import BackpropQuantizedClassifier, BackpropQuantizedRegressor


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    # string labels: the callbacks must see the user's labels, not class indices
    return X, np.array(["setosa", "versicolor", "virginica"])[y]


class StopAfter:
    """A user's FitCallback that asks to stop after ``n`` epochs and records their scores."""

    def __init__(self, n):
        self.n = n
        self.ended = []

    def setup(self, estimator, context):
        self.ended = []

    def on_fit_task_begin(self, estimator, context, **kwargs):
        pass

    def on_fit_task_end(self, estimator, context, *, X=None, y=None, metadata=None,
                        fitted_estimator=None):
        if context.task_name == "epoch":
            self.ended.append((context.task_id, fitted_estimator.score(X, y)))
            return len(self.ended) >= self.n
        return False

    def teardown(self, estimator, context):
        pass


def test_scoring_monitor_scores_every_epoch_of_the_quantized_network(iris):
    X, y = iris
    monitor = ScoringMonitor(scoring="accuracy")
    # the epochs' snapshots quantize as the paper does; the refit follows the last one
    clf = BackpropQuantizedClassifier(
        n_neurons=30, max_iter=5, random_state=0, refit_output_layer=False).set_callbacks(monitor)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(5\\)"):
        clf.fit(X, y)
    rows = monitor.get_logs().data
    epochs = [row for row in rows if row["task_name"] == "epoch"]
    assert [row["task_id"] for row in epochs] == list(range(clf.n_iter_)) == [0, 1, 2, 3, 4]
    # the last epoch's fitted estimator is the fitted (quantized) model
    assert epochs[-1]["accuracy"] == pytest.approx(clf.score(X, y))
    assert [row["task_name"] for row in rows].count("fit") == 1


def test_a_user_callback_stops_training_without_a_convergence_warning(iris):
    X, y = iris
    callback = StopAfter(3)
    clf = BackpropQuantizedClassifier(
        n_neurons=30, random_state=0, refit_output_layer=False).set_callbacks(callback)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # asserts: none is emitted
        clf.fit(X, y)
    assert clf.n_iter_ == 3 and [task for task, _ in callback.ended] == [0, 1, 2]
    # the fitted_estimator handed to the hook predicts with that epoch's quantized weights
    assert callback.ended[-1][1] == pytest.approx(clf.score(X, y))


def test_partial_fit_reports_its_epoch(iris):
    X, y = iris
    monitor = ScoringMonitor(scoring="accuracy")
    clf = BackpropQuantizedClassifier(
        n_neurons=30, random_state=0, refit_output_layer=False).set_callbacks(monitor)
    clf.partial_fit(X, y, classes=np.unique(y))
    epochs = [row for row in monitor.get_logs().data if row["task_name"] == "epoch"]
    assert len(epochs) == 1 and epochs[0]["accuracy"] == pytest.approx(clf.score(X, y))
    assert not hasattr(clf._trainer, "_callback_options") or clf._trainer.callback_context is None


def test_regressor_reports_epochs_with_r2():
    X, y = make_regression(n_samples=120, n_features=4, noise=1.0, random_state=0)
    y = y / y.std()  # targets of unit scale, as the baseline's step assumes
    monitor = ScoringMonitor(scoring="r2")
    # the epochs' snapshots quantize as the paper does; the refit follows the last one
    reg = BackpropQuantizedRegressor(
        n_neurons=40, max_iter=4, random_state=0, refit_output_layer=False).set_callbacks(monitor)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(4\\)"):
        reg.fit(X, y)
    epochs = [row for row in monitor.get_logs().data if row["task_name"] == "epoch"]
    assert [row["task_id"] for row in epochs] == [0, 1, 2, 3]
    assert epochs[-1]["r2"] == pytest.approx(reg.score(X, y))
