"""The SDP estimators' squared-loss fit on Dask collections (skquad/quantized/_dask.py).

The fit reads the rows only through their lifted statistics, summed over the
blocks in float64, and solves, certifies and refits from them as the
in-memory compact route does from the same sums over all rows: the relaxed
optimum and the certificate agree to rounding (the brief's bound: 1e-6
relative). One in-process cluster of two workers serves the module.
"""

import warnings

import numpy as np
import pytest

from sklearn.model_selection import PredefinedSplit

from skquad import (
    SDPQuantizedClassifier,
    SDPQuantizedClassifierCV,
    SDPQuantizedRegressor,
    SDPQuantizedRegressorCV,
)
from skquad._foundation._rows import row_folds as _fold_of
from skquad.convex.path import auto_beta

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
        client.as_current(),
    ):
        yield client


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) * [1.0, 2.0, 0.5] + [0.0, 1.0, 5.0]
    y = X[:, 0] * X[:, 1] - (X[:, 2] - 5.0) ** 2 + 0.1 * rng.standard_normal(n) + 10.0
    return X, y


def _assert_same_relaxation(memory, blocks):
    assert memory.solver_ == blocks.solver_ == "compact"
    assert blocks.beta_ == pytest.approx(memory.beta_, rel=1e-9)
    assert blocks.relaxed_objective_ == pytest.approx(memory.relaxed_objective_, rel=1e-6)
    assert blocks.lower_bound_ == pytest.approx(memory.lower_bound_, rel=1e-6)
    # The certificate holds: the bound is below the relaxed point and the network.
    assert blocks.lower_bound_ <= blocks.relaxed_objective_
    # The refit's free output intercept can gain at most its squared distance from the
    # certified class's fixed offset (the centred targets' mean).
    gain = float(np.sum((blocks.intercept_ - blocks._target_offset_) ** 2))
    assert blocks.lower_bound_ <= blocks.objective_ * (1 + 1e-9) + gain
    assert blocks.certified_gap_ <= blocks.tol * abs(blocks.relaxed_objective_)
    np.testing.assert_allclose(blocks.feature_mean_, memory.feature_mean_, rtol=1e-10)
    np.testing.assert_allclose(blocks.data_max_, memory.data_max_)


def test_the_regressor_on_dask_arrays_fits_as_in_memory(client):
    X, y = _data()
    weight = np.linspace(0.5, 2.0, len(y))
    model = SDPQuantizedRegressor(n_neurons=100, random_state=0)
    memory = model.fit(X, y, sample_weight=weight)
    relaxed = memory.relaxed_predict(X)
    # At the same beta: in memory "auto" is checked on a held-out fifth of the rows,
    # which the statistics of a Dask fit do not hold.
    blocks = SDPQuantizedRegressor(n_neurons=100, beta=memory.beta_, random_state=0).fit(
        da.from_array(X, chunks=150), da.from_array(y, chunks=150),
        sample_weight=da.from_array(weight, chunks=150),
    )
    _assert_same_relaxation(memory, blocks)
    np.testing.assert_allclose(blocks.relaxed_predict(X), relaxed, rtol=1e-5, atol=1e-5)
    # The same draw, refitted from the statistics: the same network to the lasso's tolerance.
    assert blocks.objective_ == pytest.approx(memory.objective_, rel=1e-4)
    assert blocks.score(X, y) == pytest.approx(memory.score(X, y), abs=1e-4)
    # A skops file of the model holds only the types skquad lists; resample works from it.
    sio = pytest.importorskip("skops.io")
    from skquad.persistence import trusted_types

    data = sio.dumps(blocks)
    assert set(sio.get_untrusted_types(data=data)) <= set(trusted_types())
    loaded = sio.loads(data, trusted=sio.get_untrusted_types(data=data))
    wider = loaded.resample(200, random_state=1)
    assert wider.n_neurons_ == 200 and wider.lower_bound_ <= wider.objective_


def test_the_classifier_on_a_dask_dataframe_fits_as_in_memory(client):
    X, y = _data(seed=1)
    labels = np.digitize(y, np.quantile(y, [0.3, 0.6]))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    params = dict(n_neurons=150, class_weight="balanced", random_state=0)
    blocks = SDPQuantizedClassifier(**params).fit(
        dd.from_pandas(frame, npartitions=4), dd.from_pandas(pd.Series(labels), npartitions=4)
    )
    # On Dask beta="auto" is the (p / n)^2 rule (in memory it is chosen on held-out rows);
    # a Dask fit refits in the SDP's loss ("auto" chooses the logistic refit only in memory).
    assert blocks.beta_ == pytest.approx(auto_beta(blocks.beta_max_, "squared", 4, len(labels)), rel=1e-12)
    memory = SDPQuantizedClassifier(refit_output_layer=True, beta=blocks.beta_, **params).fit(frame, labels)
    _assert_same_relaxation(memory, blocks)
    assert blocks.refit_loss_ == "squared"
    assert list(blocks.feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(blocks.classes_, memory.classes_)
    assert abs(blocks.score(frame, labels) - memory.score(frame, labels)) <= 0.01


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_regressor_search_on_dask_scores_its_folds_as_in_memory(client, fit_intercept):
    # The Dask search's folds (a hash of each row) given to the in-memory search.
    X, y = _data(n=600, seed=2)
    # The blocks' folds are scored from statistics: of the model that clips neither its
    # inputs nor its outputs (a clipped prediction is not linear in the lifted inputs).
    params = dict(n_neurons=40, betas=3, random_state=0, clip_inputs=False, clip_outputs=False,
                  fit_intercept=fit_intercept)
    with warnings.catch_warnings():  # the path starts at beta_max: the zero network
        warnings.filterwarnings("ignore", message=".*zero network", category=UserWarning)
        memory = SDPQuantizedRegressorCV(cv=PredefinedSplit(_fold_of(X, 3)), **params).fit(X, y)
        blocks = SDPQuantizedRegressorCV(cv=3, **params).fit(
            da.from_array(X, chunks=200), da.from_array(y, chunks=200)
        )
    np.testing.assert_allclose(blocks.betas_, memory.betas_, rtol=1e-9)
    # The same fold models (their refits to the lasso's tolerance): the same R² to 1e-3.
    np.testing.assert_allclose(blocks.scores_, memory.scores_, atol=1e-3)
    assert blocks.beta_ == pytest.approx(memory.beta_, rel=1e-9)
    _assert_same_relaxation(memory, blocks)
    # the refitted model at beta_: the same relaxed predictions, the same network to the lasso's tolerance
    np.testing.assert_allclose(blocks.relaxed_predict(X), memory.relaxed_predict(X), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(blocks.predict(X), memory.predict(X), rtol=1e-3, atol=1e-3 * np.std(y))


def test_the_classifier_search_on_dask_scores_its_folds_as_in_memory(client):
    # Accuracy of the held-out rows with their sample_weight (the fits carry the class
    # weights too), every input clipped to its fold's training range: one pass on the rows.
    X, y = _data(n=600, seed=3)
    labels = np.digitize(y, np.quantile(y, [0.3, 0.6]))
    X[:8] = 3.0 * X[:8] - 2.0 * X.mean(axis=0)  # rows far outside their folds' training range
    weight = np.linspace(0.5, 2.0, len(y))
    params = dict(n_neurons=60, betas=4, class_weight={0: 1.0, 1: 3.0, 2: 0.5}, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        memory = SDPQuantizedClassifierCV(cv=PredefinedSplit(_fold_of(X, 3)), **params,
                                          refit_output_layer=True).fit(
            X, labels, sample_weight=weight)
        blocks = SDPQuantizedClassifierCV(cv=3, **params).fit(
            da.from_array(X, chunks=150), da.from_array(labels, chunks=150),
            sample_weight=da.from_array(weight, chunks=150),
        )
    # the path starts at beta_max, the zero network, by design: no warning says so
    assert not [w for w in caught if "zero network" in str(w.message)]
    np.testing.assert_allclose(blocks.betas_, memory.betas_, rtol=1e-9)
    np.testing.assert_allclose(blocks.scores_, memory.scores_, atol=1e-12)
    assert blocks.beta_ == pytest.approx(memory.beta_, rel=1e-9)
    _assert_same_relaxation(memory, blocks)
    np.testing.assert_array_equal(blocks.predict(X), memory.predict(X))


def test_the_binary_classifier_linear_term_on_dask_fits_as_in_memory(client):
    # linear_term="auto" on two classes: the ridge on the ±1 labels from the lifted
    # statistics, the network on its residuals, as in memory (at a fixed beta: on Dask
    # "auto" is the rule).
    X, y = _data(n=600, seed=4)
    labels = (X[:, 0] + 0.5 * X[:, 0] * X[:, 1] > 0.2).astype(int)
    params = dict(n_neurons=100, beta=0.01, random_state=0, refit_output_layer=True)
    memory = SDPQuantizedClassifier(**params).fit(X, labels)
    blocks = SDPQuantizedClassifier(**params).fit(da.from_array(X, chunks=150), da.from_array(labels, chunks=150))
    assert memory.linear_coef_.shape == blocks.linear_coef_.shape == (1, 3)
    np.testing.assert_allclose(blocks.linear_coef_, memory.linear_coef_, rtol=1e-9)
    np.testing.assert_allclose(blocks.linear_alpha_, memory.linear_alpha_, rtol=1e-12)
    _assert_same_relaxation(memory, blocks)
    assert abs(blocks.score(X, labels) - memory.score(X, labels)) <= 0.01


@pytest.mark.parametrize(
    "estimator, match",
    [
        (SDPQuantizedClassifier(loss="hinge"), "loss='squared'"),
        (SDPQuantizedClassifier(solver="SCS"), "solver=None"),
        (SDPQuantizedClassifier(refit_output_layer="logistic"), "refit_output_layer='auto' or True"),
        (SDPQuantizedClassifierCV(scoring="roc_auc"), "scoring=None"),
        (SDPQuantizedClassifierCV(class_weight={0: 0.0, 1: 1.0, 2: 1.0}), "class weights > 0"),
        (SDPQuantizedRegressorCV(cv=PredefinedSplit([0, 1])), "cv=None or an int"),
    ],
)
def test_what_the_statistics_cannot_fit_is_refused_by_name(client, estimator, match):
    X, y = _data(n=100)
    with pytest.raises((ValueError, TypeError), match=match):
        estimator.fit(da.from_array(X, chunks=50), da.from_array(np.digitize(y, [5, 10]), chunks=50))
    assert not hasattr(estimator, "classes_")
