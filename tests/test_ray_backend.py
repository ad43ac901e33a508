"""GridSearchCV over skquad estimators on Ray's joblib backend (``ray.util.joblib``).

Ray is optional (the ``ray`` extra): without it the module is skipped. A
local Ray instance of two CPUs runs the search's fits in its worker
processes: every candidate is pickled there, fitted and pickled back, and
the search's ``cv_results_`` are those of the sequential search, to the bit.
"""

import os
import sys

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QNNClassifier, QuadraticLogisticRegression

ray = pytest.importorskip("ray")
joblib = pytest.importorskip("joblib")


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray instance whose workers import this checkout of skquad."""
    with pytest.MonkeyPatch.context() as patch:
        # Ray's processes, started here, inherit the environment (a runtime_env
        # with the same variable builds a per-job environment: minutes)
        patch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def _search():
    pipeline = Pipeline([("scale", StandardScaler()), ("classifier", QuadraticLogisticRegression())])
    grid = [
        {"classifier": [QuadraticLogisticRegression()], "classifier__C": [0.01, 1.0]},
        {"classifier": [QNNClassifier(hidden_layer_sizes=(3,), solver="lbfgs", max_iter=15,
                                      random_state=0)],
         "classifier__alpha": [1e-4, 1e-1]},
    ]
    return GridSearchCV(pipeline, grid, cv=StratifiedKFold(3, shuffle=True, random_state=0),
                        n_jobs=2)


def test_grid_search_on_rays_backend_equals_the_sequential_search(ray_cluster):
    from ray.util.joblib import register_ray

    X, y = load_breast_cancer(return_X_y=True)
    rows = np.random.RandomState(0).choice(len(X), size=180, replace=False)
    X, y = X[rows, :6], y[rows]
    # The QNN candidates stop at max_iter on both sides (the warning is raised
    # where they are fitted, so in this process for the sequential search).
    with pytest.warns(ConvergenceWarning):
        local = _search().set_params(n_jobs=1).fit(X, y)
    register_ray()
    with joblib.parallel_backend("ray"), pytest.warns(ConvergenceWarning):
        # (the refit of the best candidate, a QNN, runs here)
        remote = _search().fit(X, y)
        # the backend runs its tasks in Ray's worker processes
        pids = joblib.Parallel(n_jobs=2)(joblib.delayed(os.getpid)() for _ in range(4))
    assert os.getpid() not in pids

    assert [repr(p) for p in remote.cv_results_["params"]] == [
        repr(p) for p in local.cv_results_["params"]
    ]
    for fold in range(3):
        key = f"split{fold}_test_score"
        np.testing.assert_array_equal(remote.cv_results_[key], local.cv_results_[key])
    np.testing.assert_array_equal(remote.cv_results_["rank_test_score"],
                                  local.cv_results_["rank_test_score"])
    assert remote.best_index_ == local.best_index_
    np.testing.assert_array_equal(remote.best_estimator_.predict_proba(X),
                                  local.best_estimator_.predict_proba(X))
