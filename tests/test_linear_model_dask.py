"""QuadraticLogisticRegression and QuadraticRegression fitted on dask arrays and dataframes
(skquad/linear_model/_dask.py) against the in-memory fits."""

import warnings

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from _dask_cases import qlr_reference_tolerances

from skquad import QuadraticLogisticRegression, QuadraticRegression


@pytest.mark.parametrize("n_classes", [2, 3])
def test_qlr_fit_on_dask_array_matches_the_in_memory_fit(n_classes):
    X, y = make_classification(
        n_samples=1500, n_features=5, n_informative=4, n_redundant=0,
        n_classes=n_classes, random_state=0,
    )
    weight = np.random.RandomState(1).uniform(0.5, 2.0, size=len(y))
    params = dict(C=1.0, tol=1e-8, class_weight="balanced")
    with dask.config.set(scheduler="sync"):
        remote = QuadraticLogisticRegression(**params, quadratic_C=None).fit(
            da.from_array(X, chunks=(400, 2)),  # column chunks are joined
            da.from_array(y, chunks=300),  # misaligned with X's rows on purpose
            sample_weight=da.from_array(weight, chunks=500),
        )
    local = QuadraticLogisticRegression(**params, quadratic_C=None).fit(X, y, sample_weight=weight)
    total = float((weight * local._class_weights("balanced", np.searchsorted(local.classes_, y))).sum())
    parameters, loss = qlr_reference_tolerances(local, total, 1.0, 1e-8)
    np.testing.assert_array_equal(remote.classes_, local.classes_)
    assert abs(remote.loss_ - local.loss_) <= loss
    for name in ("Q_", "coef_", "intercept_"):
        np.testing.assert_allclose(getattr(remote, name), getattr(local, name), rtol=0, atol=parameters)
    assert remote.n_features_in_ == 5 and remote.n_iter_ >= 1 and not remote.diverged_


@pytest.mark.parametrize("rank", [None, 2])
def test_qlr_dask_fit_takes_the_in_memory_fits_steps(rank):
    """The blocks sum the in-memory objective (packed Q, or the low-rank factors) and
    the driver runs its L-BFGS (20 correction pairs): 30 iterations later, on a
    non-converged fit, the models agree to rounding (they differed by 4e-3 in Q on
    the unpacked problem with 10 pairs). A full Q's 30 iterations are all float32
    evaluations (the float32 twin's phase, see minimize_lbfgs), whose sums over 100-row
    blocks and over all rows round differently: float32's rounding, grown by 30 steps
    (measured 4e-6 in the parameters, 5e-9 relative in the loss)."""
    rng = np.random.RandomState(0)
    X = rng.randn(300, 6)
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    params = dict(rank=rank, max_iter=30, random_state=0)
    with dask.config.set(scheduler="sync"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        remote = QuadraticLogisticRegression(**params, quadratic_C=None).fit(
            da.from_array(X, chunks=(100, 6)), da.from_array(y, chunks=100)
        )
        local = QuadraticLogisticRegression(**params, quadratic_C=None).fit(X, y)
    assert remote.n_iter_ == local.n_iter_ == 30
    float32_phase = rank is None
    assert remote.loss_ == pytest.approx(local.loss_, rel=1e-7 if float32_phase else 1e-12)
    for name in ("Q_", "coef_", "intercept_"):
        np.testing.assert_allclose(getattr(remote, name), getattr(local, name), rtol=0,
                                   atol=5e-5 if float32_phase else 1e-9)


def test_qlr_fit_on_dask_dataframe_keeps_feature_names_and_string_labels():
    X, y = make_classification(n_samples=600, n_features=4, random_state=1)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    labels = np.array(["no", "yes"])[y]
    X_dd = dd.from_pandas(frame, npartitions=3)
    y_dd = dd.from_pandas(pd.Series(labels), npartitions=3)
    with dask.config.set(scheduler="sync"):
        remote = QuadraticLogisticRegression(tol=1e-8, quadratic_C=None).fit(X_dd, y_dd)
        proba = remote.predict_proba(X_dd)
        predicted = remote.predict(X_dd).compute()
    local = QuadraticLogisticRegression(tol=1e-8, quadratic_C=None).fit(frame, labels)
    np.testing.assert_array_equal(remote.feature_names_in_, ["a", "b", "c", "d"])
    np.testing.assert_array_equal(remote.classes_, ["no", "yes"])
    parameters, loss = qlr_reference_tolerances(local, 600, 1.0, 1e-8)
    assert abs(remote.loss_ - local.loss_) <= loss
    assert isinstance(proba, da.Array)
    # probabilities are Lipschitz in the parameters: |d p / d theta| <= |phi(x)| / 4
    scale = float(np.abs(X).max()) ** 2 * (local.Q_.size + local.coef_.size + 1)
    np.testing.assert_allclose(proba.compute(), local.predict_proba(frame), atol=parameters * scale)
    assert set(predicted) <= {"no", "yes"}
    with pytest.raises(ValueError, match="feature names"):
        remote.predict(dd.from_pandas(frame.rename(columns={"a": "z"}), npartitions=2)).compute()


def test_quadratic_regression_on_dask_matches_the_exact_in_memory_solve():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(2000, 4))
    Y = np.column_stack([X[:, 0] * X[:, 1] - X[:, 2] ** 2, X[:, 3]]) + 0.1 * rng.normal(size=(2000, 2))
    weight = rng.uniform(0.5, 2.0, size=2000)
    local = QuadraticRegression(alpha=0.5).fit(X, Y, sample_weight=weight)
    with dask.config.set(scheduler="sync"):
        remote = QuadraticRegression(alpha=0.5).fit(
            da.from_array(X, chunks=(300, 4)), da.from_array(Y, chunks=(700, 2)),
            sample_weight=weight,  # in memory, cut along X's blocks
        )
        remote_1d = QuadraticRegression(alpha=0.5).fit(da.from_array(X, chunks=500), Y[:, 0])
    # One exact solve of the same normal equations, summed in another order:
    # cond(G) (about 1e2 here) * n * eps bounds the difference well below 1e-9.
    for name in ("Q_", "coef_", "intercept_"):
        np.testing.assert_allclose(getattr(remote, name), getattr(local, name), rtol=1e-9, atol=1e-10)
    local_1d = QuadraticRegression(alpha=0.5).fit(X, Y[:, 0])
    np.testing.assert_allclose(remote_1d.Q_, local_1d.Q_, rtol=1e-9, atol=1e-10)
    assert remote_1d.Q_.shape == (4, 4) and np.ndim(remote_1d.intercept_) == 0
    assert remote.solver_ == "cholesky"
    with dask.config.set(scheduler="sync"):
        score = remote.score(da.from_array(X, chunks=700), da.from_array(Y, chunks=(700, 2)),
                             sample_weight=weight)
        prediction = remote_1d.predict(da.from_array(X, chunks=700))
    assert score == pytest.approx(local.score(X, Y, sample_weight=weight), rel=1e-12)
    assert isinstance(prediction, da.Array) and prediction.ndim == 1
    np.testing.assert_allclose(prediction.compute(), local_1d.predict(X), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="solver='cholesky'"):
        QuadraticRegression(solver="kernel").fit(da.from_array(X, chunks=500), Y[:, 0])


def test_quadratic_regression_on_dask_reads_the_graph_once_and_stays_exact_off_centre():
    # The blocks' statistics are merged about their own means (Chan et al.'s
    # pairwise update): one pass over the user's graph, and no cancellation
    # when the features sit far from zero (here |x| about 1e2, |phi| about 1e4).
    rng = np.random.RandomState(1)
    X = 100.0 + rng.normal(size=(900, 3))
    y = (X[:, 0] - 100.0) * (X[:, 1] - 100.0) + 0.01 * rng.normal(size=900)
    weight = rng.uniform(0.5, 2.0, size=900)
    weight[:300] = 0.0  # the first block carries no weight
    reads = []

    def read_block(block):
        reads.append(block.shape[0])
        return block

    X_graph = da.from_array(X, chunks=(300, 3)).map_blocks(read_block, dtype=X.dtype)
    local = QuadraticRegression(alpha=1e-3).fit(X, y, sample_weight=weight)
    with dask.config.set(scheduler="sync"):
        remote = QuadraticRegression(alpha=1e-3).fit(X_graph, y, sample_weight=weight)
    assert sorted(r for r in reads if r) == [300, 300, 300]  # (0: dask's meta probe)
    # Same normal equations summed in another order: cond(G) * eps-level
    # differences. Summing uncentred moments and centring at the end (one pass,
    # without the pairwise update) is off by 2.8e-6 here: this bound fails it.
    np.testing.assert_allclose(remote.predict(X), local.predict(X), rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(remote.intercept_, local.intercept_, rtol=1e-7)
