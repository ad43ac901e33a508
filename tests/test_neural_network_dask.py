"""The quadratic networks' solver="lbfgs" on Dask collections (skquad/neural_network/_dask.py).

The data-parallel fit runs the in-memory fit's L-BFGS on the loss and
gradient summed over the blocks, so after the same iterations it has the
same loss (float64: to rounding; the bound is the brief's 1e-6 relative).
One in-process cluster of two workers with two threads each serves the
module (two evaluations run at once on each worker's copy of the model).
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

from skquad import QNNClassifier, QNNRegressor, RPQNNClassifier, RPQNNRegressor

distributed = pytest.importorskip("distributed")
# The local clusters' tests share one pytest-xdist worker (the README runs the
# suite with --dist loadgroup): two clusters at once would oversubscribe the cores.
pytestmark = pytest.mark.xdist_group("dask-cluster")
dask = pytest.importorskip("dask")
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


def _classification(n_classes=3):
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, n_redundant=0,
                               n_classes=n_classes, random_state=0)
    return X, y


def _regression(n_targets=2):
    X, y = make_regression(n_samples=300, n_features=5, n_targets=n_targets, noise=0.5,
                           random_state=0)
    return X, y / np.std(y)


def _fit_quietly(estimator, *args, **kwargs):
    # max_iter below convergence: the ConvergenceWarning is expected on both sides
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        return estimator.fit(*args, **kwargs)


_CASES = [
    (QNNClassifier(hidden_layer_sizes=(4,), class_weight="balanced"), _classification),
    (QNNClassifier(hidden_layer_sizes=(3,), quadratic_layers="all"),
     lambda: _classification(n_classes=2)),
    (RPQNNClassifier(hidden_layer_sizes=(4,), quadratic_l1=1e-3), _classification),
    (QNNRegressor(hidden_layer_sizes=(4,)), _regression),
    (RPQNNRegressor(hidden_layer_sizes=(4,), backward="autograd"), lambda: _regression(1)),
]


@pytest.mark.parametrize("estimator, make_data", _CASES, ids=lambda v: getattr(v, "__name__", type(v).__name__))
def test_lbfgs_on_dask_equals_the_in_memory_fit(client, estimator, make_data):
    X, y = make_data()
    weight = np.linspace(0.5, 2.0, len(X))
    # alpha large enough that a penalty applied per block (4 blocks) would show
    model = clone(estimator).set_params(solver="lbfgs", max_iter=12, alpha=1e-2, random_state=0,
                                        dtype="float64")
    local = _fit_quietly(clone(model), X, y, sample_weight=weight)
    with client.as_current():
        remote = _fit_quietly(clone(model), da.from_array(X, chunks=75),
                              da.from_array(y, chunks=75), sample_weight=weight)
    assert remote.n_iter_ == local.n_iter_ == 12
    np.testing.assert_allclose(remote.loss_curve_, local.loss_curve_, rtol=1e-6)
    assert remote.loss_ == pytest.approx(local.loss_, rel=1e-6)
    np.testing.assert_allclose(remote.predict(X), local.predict(X), rtol=1e-5, atol=1e-6)
    assert remote.n_features_in_ == 5 and remote.device_ == "cpu"


def test_float32_data_trains_in_float32_like_the_in_memory_fit():
    X, y = _classification()
    X = X.astype(np.float32)
    model = QNNClassifier(hidden_layer_sizes=(4,), solver="lbfgs", max_iter=10, random_state=0)
    local = _fit_quietly(clone(model), X, y)
    with dask.config.set(scheduler="sync"):
        remote = _fit_quietly(clone(model), da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    assert remote.layers_[0]["weight"].dtype == local.layers_[0]["weight"].dtype == np.float32
    # the same L-BFGS on float32 sums taken in another order: float32's rounding
    assert remote.loss_ == pytest.approx(local.loss_, rel=1e-4)


def test_dataframe_labels_names_and_warm_start():
    X, y = _classification(n_classes=2)
    labels = np.where(y == 1, "yes", "no")
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcde")), npartitions=3)
    with dask.config.set({"dataframe.convert-string": False}):  # object labels, as in pandas
        target = dd.from_pandas(pd.Series(labels, dtype=object), npartitions=3)
    # alpha given: a fit in memory would check "auto" on held-out rows, a Dask fit takes 1e-4
    model = QNNClassifier(hidden_layer_sizes=(3,), solver="lbfgs", max_iter=5, random_state=0,
                          warm_start=True, dtype="float64", alpha=1e-4)
    local = _fit_quietly(clone(model), pd.DataFrame(X, columns=list("abcde")), labels)
    with dask.config.set(scheduler="sync"):
        remote = _fit_quietly(clone(model), frame, target)
        assert list(remote.classes_) == ["no", "yes"]
        assert list(remote.feature_names_in_) == list("abcde")
        # warm start continues the fitted network, as in memory
        _fit_quietly(remote, frame, target)
        with pytest.raises(ValueError, match="same classes"):
            remote.fit(frame, target.map(lambda v: v + "!", meta=("x", "object")))
    _fit_quietly(local, pd.DataFrame(X, columns=list("abcde")), labels)
    assert remote.loss_ == pytest.approx(local.loss_, rel=1e-6)
    assert len(remote.loss_curve_) == len(local.loss_curve_) == 10


def test_weight_transfer_trains_the_twin_on_the_blocks_too():
    X, y = _regression(1)
    model = QNNRegressor(hidden_layer_sizes=(3,), solver="lbfgs", max_iter=8, weight_transfer=True,
                         random_state=0, dtype="float64")
    local = _fit_quietly(clone(model), X, y)
    with dask.config.set(scheduler="sync"):
        remote = _fit_quietly(clone(model), da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    assert remote.weight_transfer_n_iter_ == local.weight_transfer_n_iter_
    assert remote.loss_ == pytest.approx(local.loss_, rel=1e-6)


def test_options_that_cannot_be_data_parallel_are_refused_clearly():
    X, y = _classification()
    X_da, y_da = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match=r"solver='lbfgs'.*Incremental\(QNNClassifier"):
        QNNClassifier().fit(X_da, y_da)
    with pytest.raises(ValueError, match="device='cpu'"):
        QNNRegressor(solver="lbfgs", device="cuda").fit(X_da, y_da)
    with pytest.raises(TypeError, match="partial_fit does not take Dask"):
        QNNClassifier().partial_fit(X_da, y_da, classes=[0, 1, 2])
    indicator = np.column_stack([y == 0, y == 1]).astype(int)
    with dask.config.set(scheduler="sync"):
        with pytest.raises(ValueError, match="multilabel"):
            QNNClassifier(solver="lbfgs").fit(X_da, da.from_array(indicator, chunks=100))
        with pytest.raises(ValueError, match="non-negative y"):
            QNNRegressor(solver="lbfgs", loss="poisson").fit(X_da, X_da[:, 0])
    model = _fit_quietly(QNNRegressor(hidden_layer_sizes=(2,), solver="lbfgs", max_iter=3), X, X[:, 0])
    before = [layer["weight"].copy() for layer in model.layers_]
    broken = X.copy()
    broken[250, 2] = np.inf
    with dask.config.set(scheduler="sync"), pytest.raises(ValueError, match="infinity"):
        model.fit(da.from_array(broken, chunks=100), X[:, 0])
    for layer, weight in zip(model.layers_, before):
        np.testing.assert_array_equal(layer["weight"], weight)  # atomic: the model is kept


def test_the_workers_copy_of_the_trainer_survives_pickling():
    from skquad.neural_network._dask import _block_objective, _Evaluator

    X, y = _classification()
    model = _fit_quietly(QNNClassifier(hidden_layer_sizes=(3,), solver="lbfgs", max_iter=2,
                                       random_state=0), X, y)
    evaluator = _Evaluator(model._trainer, "auto")
    theta = np.linspace(-0.2, 0.2, model._trainer.n_parameters)
    block = (X, y, np.ones(len(y)))
    here = _block_objective(block, theta, evaluator, float(len(y)))
    there = _block_objective(block, theta, pickle.loads(pickle.dumps(evaluator)), float(len(y)))
    assert here[0] == there[0]
    np.testing.assert_array_equal(here[1], there[1])
    assert np.any(here[1] != 0)
