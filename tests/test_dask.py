"""GridSearchCV over skquad estimators under joblib's Dask backend.

Runs the search on a local ``dask.distributed`` cluster of two worker
processes (one thread each), so that every candidate estimator is pickled to
another process, fitted there and pickled back, and checks that the results
are those of the same search run locally, to the last bit.
"""

import os

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticLogisticRegression, RPQNNClassifier

distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")


def _search():
    pipeline = Pipeline(
        [("scale", StandardScaler()), ("classifier", QuadraticLogisticRegression())]
    )
    param_grid = [
        {"classifier": [QuadraticLogisticRegression()], "classifier__C": [0.01, 1.0]},
        {
            "classifier": [
                RPQNNClassifier(hidden_layer_sizes=(4,), max_iter=20, random_state=0)
            ],
            "classifier__alpha": [1e-4, 1e-1],
        },
    ]
    return GridSearchCV(
        pipeline,
        param_grid,
        cv=StratifiedKFold(n_splits=3, shuffle=True, random_state=0),
        n_jobs=-1,
    )


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.RandomState(0)
    rows = rng.choice(len(X), size=240, replace=False)
    return X[rows, :8], y[rows]


def test_grid_search_on_a_dask_cluster_matches_the_local_search(data):
    X, y = data
    # RPQNN's 20 epochs stop before convergence: the warning is expected
    # (here; the cluster's fits warn in their own processes).
    with pytest.warns(ConvergenceWarning):
        local = _search().set_params(n_jobs=1).fit(X, y)

    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        # The workers are other processes that import this checkout of skquad.
        worker_pids = set(client.run(os.getpid).values())
        assert len(worker_pids) == 2 and os.getpid() not in worker_pids
        with (
            distributed.get_task_stream(client) as task_stream,
            joblib.parallel_backend("dask"),
        ):
            remote = _search().fit(X, y)
        workers = {task["worker"] for task in task_stream.data}

    # The fits ran on the cluster, on both workers.
    n_candidates = len(local.cv_results_["params"])
    assert len(task_stream.data) >= n_candidates
    assert len(workers) == 2

    # Same candidates in the same order, same scores, same winner.
    assert [repr(p) for p in remote.cv_results_["params"]] == [
        repr(p) for p in local.cv_results_["params"]
    ]
    for fold in range(3):
        key = f"split{fold}_test_score"
        np.testing.assert_array_equal(remote.cv_results_[key], local.cv_results_[key])
    assert remote.best_index_ == local.best_index_
    np.testing.assert_allclose(
        remote.best_estimator_.predict_proba(X),
        local.best_estimator_.predict_proba(X),
        rtol=1e-6,
        atol=1e-8,
    )
