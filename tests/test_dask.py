"""skquad on Dask: hyper-parameter search, data-parallel fits, block-wise predictions.

* GridSearchCV under joblib's Dask backend, on a local ``dask.distributed``
  cluster of two worker processes (one thread each): every candidate is
  pickled to another process, fitted there and pickled back; the results
  are those of the same search run locally, to the last bit.
* the CI's small version of the data-parallel scaling target on the
  two-process cluster (4e4 rows generated on the workers); the fits
  themselves against the in-memory fits: tests/test_linear_model_dask.py.
* predict / predict_proba / decision_function / score on Dask collections,
  for every estimator, against the in-memory results.
* dask-ml's Incremental streaming blocks through partial_fit.
"""

import os
import warnings

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
# The local clusters' tests share one pytest-xdist worker (the README runs the
# suite with --dist loadgroup): two clusters at once would oversubscribe the cores.
pytestmark = pytest.mark.xdist_group("dask-cluster")


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
def cluster_client():
    """A local cluster of two worker processes with one thread each, and its client."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        # The workers are other processes that import this checkout of skquad.
        worker_pids = set(client.run(os.getpid).values())
        assert len(worker_pids) == 2 and os.getpid() not in worker_pids
        yield client


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.RandomState(0)
    rows = rng.choice(len(X), size=240, replace=False)
    return X[rows, :8], y[rows]


def test_grid_search_on_a_dask_cluster_matches_the_local_search(data, cluster_client):
    X, y = data
    # RPQNN's 20 epochs stop before convergence: the warning is expected
    # (here; the cluster's fits warn in their own processes).
    with pytest.warns(ConvergenceWarning):
        local = _search().set_params(n_jobs=1).fit(X, y)

    client = cluster_client
    with (
        client.as_current(),
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


# ---------------------------------------------------------------------------
# Block-wise predictions and the block machinery (skquad/_dask.py)
# ---------------------------------------------------------------------------
import dask  # noqa: E402
import dask.callbacks  # noqa: E402
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402

from skquad import (  # noqa: E402
    BackpropQuantizedClassifier,
    BackpropQuantizedRegressor,
    QNNClassifier,
    QNNRegressor,
    QuadraticLogisticRegressionCV,
    QuadraticRegression,
    QuadraticRegressionCV,
    RPQNNClassifier,
    RPQNNRegressor,
    SDPQuantizedClassifier,
    SDPQuantizedClassifierCV,
    SDPQuantizedRegressor,
    SDPQuantizedRegressorCV,
)

# dask-ml is in the test extra: a missing one fails here instead of skipping.
import dask_ml.preprocessing  # noqa: E402
import dask_ml.wrappers  # noqa: E402
from _dask_cases import qlr_reference_tolerances  # noqa: E402


def _fitted(estimator, classifier):
    if classifier:
        X, y = make_classification(n_samples=60, n_features=3, n_informative=2,
                                   n_redundant=0, n_classes=3, n_clusters_per_class=1,
                                   random_state=0)
    else:
        X, y = make_regression(n_samples=60, n_features=3, n_targets=2, random_state=0)
        y = y / np.std(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clone(estimator).fit(X, y), X, y


_PREDICTORS = [
    (QuadraticLogisticRegression(), True),
    (QNNClassifier(hidden_layer_sizes=(3,), max_iter=30, random_state=0), True),
    (BackpropQuantizedClassifier(max_iter=5, random_state=0), True),
    (SDPQuantizedClassifier(n_neurons=8, random_state=0), True),
    (QuadraticRegression(), False),
    (QNNRegressor(hidden_layer_sizes=(3,), max_iter=30, random_state=0), False),
    (RPQNNRegressor(hidden_layer_sizes=(3,), max_iter=30, random_state=0), False),
    (BackpropQuantizedRegressor(max_iter=5, random_state=0), False),
    # every other public estimator: its score too is reduced block by block
    (RPQNNClassifier(hidden_layer_sizes=(3,), max_iter=30, random_state=0), True),
    (QuadraticLogisticRegressionCV(Cs=2, cv=2), True),
    (SDPQuantizedClassifierCV(n_neurons=8, betas=[1e-2], cv=2, random_state=0), True),
    (QuadraticRegressionCV(cv=2), False),
    (SDPQuantizedRegressor(n_neurons=8, random_state=0), False),
    (SDPQuantizedRegressorCV(n_neurons=8, betas=[1e-2], cv=2, random_state=0), False),
]


class _LargestTaskResult(dask.callbacks.Callback):
    """The most rows any task of a local computation returned."""

    rows = 0

    def _posttask(self, key, result, dsk, state, worker_id):
        for item in result if isinstance(result, (tuple, list)) else (result,):
            shape = getattr(item, "shape", ())
            self.rows = max(self.rows, shape[0] if len(shape) else 0)


def _assert_same_predictions(actual, expected):
    # The same function on each block; only the BLAS's blocking of a 25-row
    # block against a 60-row array may change the last bits of a float.
    if np.asarray(expected).dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize(
    "estimator, classifier", _PREDICTORS, ids=[type(e).__name__ for e, _ in _PREDICTORS]
)
def test_predictions_on_dask_collections_are_lazy_block_by_block(estimator, classifier):
    model, X, y = _fitted(estimator, classifier)
    X_da = da.from_array(X, chunks=(25, 3))
    weight = np.linspace(0.5, 1.5, len(X))
    methods = ["predict"] + [
        m for m in ("predict_proba", "predict_log_proba", "decision_function") if hasattr(model, m)
    ]
    with dask.config.set(scheduler="sync"):
        for method in methods:
            lazy = getattr(model, method)(X_da)
            assert isinstance(lazy, da.Array), method
            assert lazy.numblocks[0] == X_da.numblocks[0]  # one task per block
            _assert_same_predictions(lazy.compute(), getattr(model, method)(X))
        frame = dd.from_pandas(pd.DataFrame(X), npartitions=2)
        _assert_same_predictions(model.predict(frame).compute(), model.predict(X))
        with _LargestTaskResult() as largest:
            score = model.score(X_da, da.from_array(y, chunks=25), sample_weight=weight)
    # No task gathered the rows: at most one block's (25) came out of any.
    assert largest.rows <= 25
    assert isinstance(score, float)
    assert score == pytest.approx(model.score(X, y, sample_weight=weight), rel=1e-12, abs=1e-12)


def test_fits_that_would_gather_the_data_refuse_dask_collections():
    X_da = da.from_array(np.zeros((20, 3)), chunks=10)
    y_da = da.from_array(np.arange(20) % 2, chunks=10)
    with pytest.raises(TypeError, match="dask_ml.wrappers.Incremental"):
        BackpropQuantizedClassifier().fit(X_da, y_da)
    # the searches name the single estimator that fits Dask collections with their choice
    with pytest.raises(TypeError, match=r"sample that fits.*QuadraticLogisticRegression\(C=search.C_\)"):
        QuadraticLogisticRegressionCV().fit(X_da, y_da)
    with pytest.raises(TypeError, match=r"then fit QuadraticRegression\(alpha=search.alpha_\)"):
        QuadraticRegressionCV().fit(X_da, y_da)
    with pytest.raises(ValueError, match="loss='squared' only"):
        SDPQuantizedClassifier(loss="hinge").fit(X_da, y_da)
    with pytest.raises(TypeError, match="partial_fit does not take Dask"):
        QuadraticLogisticRegression(solver="sgd").partial_fit(X_da, y_da, classes=[0, 1])
    with pytest.raises(ValueError, match="solver='auto' or 'lbfgs'"):
        QuadraticLogisticRegression(solver="sgd").fit(X_da, y_da)


def test_bad_dask_input_fails_clearly_and_leaves_the_fitted_model():
    X, y = make_classification(n_samples=200, n_features=3, n_informative=2,
                               n_redundant=0, random_state=0)
    model = QuadraticLogisticRegression().fit(X, y)
    Q = model.Q_.copy()
    broken = X.copy()
    broken[150, 1] = np.nan  # in the last block only: a worker finds it
    with dask.config.set(scheduler="sync"):
        with pytest.raises(ValueError, match="NaN"):
            model.fit(da.from_array(broken, chunks=50), da.from_array(y, chunks=50))
        with pytest.raises(ValueError, match="inconsistent numbers of samples"):
            model.fit(da.from_array(X, chunks=50), y[:-1])
        with pytest.raises(ValueError, match="2 classes"):
            model.fit(da.from_array(X, chunks=50), np.zeros(200))
    np.testing.assert_array_equal(model.Q_, Q)


def test_dask_ml_scaler_pipeline_equals_the_in_memory_pipeline():
    from sklearn.pipeline import make_pipeline

    X, y = make_classification(n_samples=500, n_features=4, random_state=2)
    X = X * [1.0, 10.0, 100.0, 0.1] + 3.0
    with dask.config.set(scheduler="sync"):
        remote = make_pipeline(
            dask_ml.preprocessing.StandardScaler(),
            QuadraticLogisticRegression(tol=1e-8, quadratic_C=None),
        ).fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
        proba = remote.predict_proba(da.from_array(X, chunks=100)).compute()
    local = make_pipeline(StandardScaler(),
                          QuadraticLogisticRegression(tol=1e-8, quadratic_C=None)).fit(X, y)
    parameters, loss = qlr_reference_tolerances(local[-1], 500, 1.0, 1e-8)
    assert abs(remote[-1].loss_ - local[-1].loss_) <= loss
    np.testing.assert_allclose(proba, local.predict_proba(X), atol=1e-4)


@pytest.mark.parametrize(
    "estimator, classifier",
    [
        (QNNClassifier(hidden_layer_sizes=(4,), random_state=0), True),
        (QNNRegressor(hidden_layer_sizes=(4,), random_state=0), False),
        (BackpropQuantizedClassifier(random_state=0), True),
        (QuadraticLogisticRegression(solver="sgd", random_state=0), True),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, bool) else "",
)
def test_incremental_streams_blocks_through_partial_fit(estimator, classifier):
    if classifier:
        X, y = make_classification(n_samples=400, n_features=4, random_state=0)
    else:
        X, y = make_regression(n_samples=400, n_features=4, random_state=0)
        y = y / np.std(y)
    extra = {"classes": [0, 1]} if classifier else {}
    with dask.config.set(scheduler="sync"):
        streamed = dask_ml.wrappers.Incremental(clone(estimator), shuffle_blocks=False).fit(
            da.from_array(X, chunks=100), da.from_array(y, chunks=100), **extra
        )
        prediction = streamed.predict(da.from_array(X, chunks=100)).compute()
    # The same partial_fit calls on the same blocks in the same order: the same model.
    reference = clone(estimator)
    for start in range(0, 400, 100):
        reference.partial_fit(X[start : start + 100], y[start : start + 100], **extra)
    np.testing.assert_array_equal(prediction, reference.predict(X))
    assert streamed.estimator_.t_ == reference.t_ == 400 if hasattr(reference, "t_") else True


def test_ci_scale_fit_on_a_two_process_cluster(cluster_client):
    """The CI's small version of the scaling target: 4e4 rows generated on the workers."""
    state = da.random.RandomState(0)
    X = state.normal(size=(40_000, 6), chunks=(10_000, 6))
    noise = state.logistic(size=40_000, chunks=10_000)
    y = (X[:, 0] * X[:, 1] - 0.5 * X[:, 2] ** 2 + X[:, 3] + noise > 0).astype(int)
    with cluster_client.as_current():
        with distributed.get_task_stream(cluster_client) as stream:
            remote = QuadraticLogisticRegression(tol=1e-7).fit(X, y)
        accuracy = remote.score(X, y)
    evaluations = [task for task in stream.data if "_reduce_group" in str(task["key"])]
    # one task per worker thread per evaluation, and the blocks on both workers
    assert {task["worker"] for task in evaluations} == set(cluster_client.nthreads())
    assert len(evaluations) >= 2 * remote.n_iter_[0]
    # the user's graph ran once per block (persisted, not regenerated per pass)
    assert sum(str(task["key"]).startswith("('normal-") or str(task["key"]).startswith("normal-")
               for task in stream.data) == X.numblocks[0]
    X_local, y_local = dask.compute(X, y, scheduler=cluster_client.get)
    local = QuadraticLogisticRegression(tol=1e-7).fit(X_local, y_local)
    parameters, loss = qlr_reference_tolerances(local, 40_000, 1.0, 1e-7)
    assert abs(remote.loss_ - local.loss_) <= loss
    assert accuracy == pytest.approx(local.score(X_local, y_local), abs=1e-4)


def test_cluster_fit_raises_a_block_error_with_its_message(cluster_client):
    X = np.random.RandomState(0).normal(size=(400, 3))
    X[350, 1] = np.nan  # in the last block only: a worker finds it
    y = np.arange(400) % 2
    with cluster_client.as_current(), pytest.raises(ValueError, match="NaN"):
        QuadraticLogisticRegression().fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))


def test_blocks_are_balanced_over_workers_by_rows_per_thread():
    from skquad._dask import _balanced_owners, _split_rows

    # 4 of 6 equal blocks on one worker: one moves
    owners = _balanced_owners([10] * 6, ["a"] * 4 + ["b"] * 2, {"a": 1, "b": 1})
    assert owners.count("a") == owners.count("b") == 3 and owners[4:] == ["b", "b"]
    # everything on one worker, the other with 3 threads: 1 : 3 by rows
    owners = _balanced_owners([10] * 8, ["a"] * 8, {"a": 1, "b": 3})
    assert owners.count("a") == 2 and owners.count("b") == 6
    # a balanced placement is kept, and a holder that left is replaced
    assert _balanced_owners([5, 7, 12], ["a", "a", "b"], {"a": 1, "b": 1}) == ["a", "a", "b"]
    assert _balanced_owners([5, 5], ["gone", "b"], {"a": 1, "b": 1}) == ["a", "b"]
    # one worker's blocks in as many groups as it has threads, nearly equal sums
    groups = _split_rows([9, 1, 5, 5, 4, 6], 3)
    assert sorted(sorted(g) for g in groups) == sorted(groups)
    assert sorted(sum([9, 1, 5, 5, 4, 6][i] for i in g) for g in groups) == [10, 10, 10]
    assert _split_rows([3, 4], 8) == [[1], [0]]


def test_a_block_of_zero_rows_is_skipped_by_fit_predict_and_score():
    """A Dask chunk of zero rows broke QR's fit and QLR's and QR's predict and
    score (issue 38, item 9): the same results as without it."""
    from skquad import QuadraticLogisticRegression, QuadraticRegression

    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = X[:, 0] * X[:, 1] + X[:, 2]
    labels = (y > 0).astype(int)
    with_empty = da.from_array(X, chunks=((20, 0, 20), (3,)))
    without = da.from_array(X, chunks=((20, 20), (3,)))
    regression = QuadraticRegression(alpha=1.0).fit(with_empty, da.from_array(y, chunks=((20, 0, 20),)))
    reference = QuadraticRegression(alpha=1.0).fit(without, da.from_array(y, chunks=((20, 20),)))
    np.testing.assert_allclose(regression.coef_, reference.coef_)
    classifier = QuadraticLogisticRegression(random_state=0).fit(X, labels)
    for model, target in ((regression, y), (classifier, labels)):
        np.testing.assert_array_equal(model.predict(with_empty).compute(), model.predict(X))
        score = model.score(with_empty, da.from_array(target, chunks=((20, 0, 20),)))
        assert score == pytest.approx(model.score(X, target))


@pytest.mark.parametrize("container", ["filtered dataframe", "masked array"])
def test_empty_partitions_of_unknown_size_fit_predict_and_score(container):
    """Empty partitions whose sizes Dask does not know (a filter's): QR, QLR
    and the networks' data-parallel fit, predict and score as on the kept rows
    (issue 38, item 9: predicting an empty partition raised scikit-learn's
    'Found array with 0 sample(s)')."""
    import pandas as pd
    from sklearn.base import clone

    dd = pytest.importorskip("dask.dataframe")
    from skquad import QNNRegressor, QuadraticRegression

    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    y = X[:, 0] * X[:, 1] + X[:, 2]
    keep = np.repeat([False, True, True], 20)  # the first partition is emptied
    if container == "masked array":
        Xd, mask = da.from_array(X, chunks=20), da.from_array(keep, chunks=20)
        Xd, target = Xd[mask], lambda t: da.from_array(t, chunks=20)[mask]
    else:
        columns = pd.DataFrame(X, columns=list("abc")).assign(keep=keep, y=y, labels=y > 0)
        kept = dd.from_pandas(columns, npartitions=3, sort=False).query("keep")
        Xd, target = kept[list("abc")], lambda t: kept["y" if t.dtype.kind == "f" else "labels"].astype(t.dtype)
    assert np.isnan(Xd.shape[0]) if container == "masked array" else True
    for model, t in [
        (QuadraticRegression(alpha=1.0), y),
        (QuadraticLogisticRegression(random_state=0), (y > 0).astype(int)),
        (QNNRegressor(hidden_layer_sizes=(3,), solver="lbfgs", max_iter=5, random_state=0), y),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            remote, local = clone(model).fit(Xd, target(t)), clone(model).fit(X[keep], t[keep])
        np.testing.assert_allclose(remote.predict(Xd).compute(), local.predict(X[keep]), rtol=1e-5, atol=1e-8)
        assert remote.score(Xd, target(t)) == pytest.approx(local.score(X[keep], t[keep]), rel=1e-6)
