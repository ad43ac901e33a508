"""clip_inputs (skquad/_foundation/_input_range.py and its use in skquad/_base.py): every estimator
clips its inputs to the training range at predict time, by default."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone, is_regressor
from sklearn.exceptions import ConvergenceWarning

import skquad
from skquad._foundation._input_range import clip_rows, clip_to_range, feature_range
from _estimator_configs import SMALL_CONFIGS

ALL = sorted(skquad.__all__)
# The default constructor is too slow for a unit test only where it runs many SDP solves.
_DEFAULT_OVERRIDES = {
    "SDPQuantizedClassifierCV": dict(betas=[1e-2, 1e-3], cv=2),
    "SDPQuantizedRegressorCV": dict(betas=[1e-2, 1e-3], cv=2),
}
_PARTIAL_FIT = [
    "QuadraticLogisticRegression", "QNNClassifier", "QNNRegressor", "RPQNNClassifier",
    "RPQNNRegressor", "BackpropQuantizedClassifier", "BackpropQuantizedRegressor",
]


def _data(name, n=80, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    y = X[:, 0] ** 2 + X[:, 1] - X[:, 1] * X[:, 2]
    if is_regressor(getattr(skquad, name)()):
        return X, y
    return X, (y > np.median(y)).astype(int)


def _fit(estimator, X, y, **kwargs):
    with _quiet():
        return estimator.fit(X, y, **kwargs)


class _quiet:
    """Short fits stop at max_iter: ConvergenceWarning only, nothing else filtered."""

    def __enter__(self):
        import warnings

        self._context = warnings.catch_warnings()
        self._context.__enter__()
        warnings.simplefilter("ignore", ConvergenceWarning)

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)


def _small(name, **params):
    return getattr(skquad, name)(**{**SMALL_CONFIGS[name], **params})


def _prediction_methods(estimator):
    names = ["predict", "decision_function", "predict_proba", "relaxed_decision_function",
             "relaxed_predict", "float_decision_function", "float_predict"]
    return [getattr(estimator, name) for name in names if hasattr(estimator, name)]


@pytest.mark.parametrize("name", ALL)
def test_training_predictions_are_the_same_with_clipping_on_and_off(name):
    X, y = _data(name)
    model = getattr(skquad, name)(**_DEFAULT_OVERRIDES.get(name, {}))
    if "random_state" in model.get_params():
        model.set_params(random_state=0)  # the refit below must be the same model
    model = _fit(model, X, y)
    assert model.clip_inputs is True
    np.testing.assert_array_equal(model.data_min_, X.min(axis=0))
    np.testing.assert_array_equal(model.data_max_, X.max(axis=0))
    clipped = [method(X) for method in _prediction_methods(model)]
    model.set_params(clip_inputs=False)  # read at predict time
    for before, method in zip(clipped, _prediction_methods(model)):
        np.testing.assert_array_equal(before, method(X))
    # ... and a model fitted with clipping off is the same model
    other = _fit(clone(model), X, y)
    np.testing.assert_array_equal(other.predict(X), clipped[0])


@pytest.mark.parametrize("name", ALL)
def test_a_row_far_outside_the_range_is_clipped(name):
    X, y = _data(name)
    model = _fit(_small(name), X, y)
    far = np.array([[1e4, -1e4, 1e4]])
    inside = np.clip(far, model.data_min_, model.data_max_)
    for method in _prediction_methods(model):
        np.testing.assert_array_equal(method(far), method(inside))
    unclipped = clone(model).set_params(clip_inputs=False)
    if "clip_outputs" in model.get_params():
        unclipped.set_params(clip_outputs=False)
    unclipped = _fit(unclipped, X, y)
    if is_regressor(model):
        spread = np.ptp(y)
        assert np.abs(model.predict(far) - y.mean()).max() < 10 * spread
        assert np.abs(unclipped.predict(far) - y.mean()).max() > 10 * spread
    else:
        bounded = np.abs(model.decision_function(far)).max()
        assert np.abs(unclipped.decision_function(far)).max() > 10 * max(bounded, 1.0)


@pytest.mark.parametrize("name", ALL)
def test_rows_of_zero_weight_do_not_widen_the_range(name):
    X, y = _data(name)
    X_far = np.vstack([X, [[50.0, -50.0, 50.0]]])
    y_far = np.concatenate([y, y[:1]])
    weight = np.ones(len(y_far))
    weight[-1] = 0.0
    model = _fit(_small(name), X_far, y_far, sample_weight=weight)
    np.testing.assert_array_equal(model.data_min_, X.min(axis=0))
    np.testing.assert_array_equal(model.data_max_, X.max(axis=0))


@pytest.mark.parametrize("name", _PARTIAL_FIT)
def test_partial_fit_widens_the_range_and_fit_resets_it(name):
    X, y = _data(name)
    params = {"solver": "sgd"} if name == "QuadraticLogisticRegression" else {}
    model = _small(name, **params)
    kwargs = {} if is_regressor(model) else {"classes": np.unique(y)}
    with _quiet():
        model.partial_fit(X[:40], y[:40], **kwargs)
        np.testing.assert_array_equal(model.data_max_, X[:40].max(axis=0))
        model.partial_fit(3 * X[40:], y[40:])
    np.testing.assert_array_equal(model.data_min_, np.minimum(X[:40].min(0), 3 * X[40:].min(0)))
    np.testing.assert_array_equal(model.data_max_, np.maximum(X[:40].max(0), 3 * X[40:].max(0)))
    if "warm_start" in model.get_params():
        _fit(model.set_params(warm_start=True), X[:40], y[:40])
        np.testing.assert_array_equal(model.data_max_, X[:40].max(axis=0))


def test_float32_input_stays_float32_and_is_copied_only_when_clipped():
    X = np.random.RandomState(0).randn(30, 2).astype(np.float32)
    low, high = feature_range(X)
    assert clip_to_range(X, low, high) is X  # nothing outside: no copy
    Z = X.copy()
    Z[0, 0] = 100.0
    clipped = clip_to_range(Z, low, high)
    assert clipped.dtype == np.float32 and clipped is not Z and Z[0, 0] == 100.0
    assert clipped[0, 0] == X[:, 0].max()
    np.testing.assert_array_equal(clipped[1:], Z[1:])


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_range_counts_implicit_zeros_and_clipping_keeps_them(fmt):
    dense = np.array([[1.0, 0.0, 2.0], [3.0, -1.0, 0.0], [2.0, 0.0, 4.0]])
    X = sp.csr_matrix(dense).asformat(fmt)
    low, high = feature_range(X)
    np.testing.assert_array_equal(low, [1.0, -1.0, 0.0])  # column 2's implicit zero counts
    np.testing.assert_array_equal(high, [3.0, 0.0, 4.0])
    assert clip_to_range(X, low, high) is X
    test = sp.csr_matrix(np.array([[9.0, 0.0, -5.0], [0.0, 7.0, 1.0]])).asformat(fmt)
    clipped = clip_to_range(test, low, high)
    # stored values clipped; the implicit zero of column 0 (outside [1, 3]) stays zero
    np.testing.assert_array_equal(clipped.toarray(), [[3.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert test.toarray()[0, 0] == 9.0  # the caller's matrix is not written
    rows = clip_rows(test, [1], low, high)
    np.testing.assert_array_equal(rows.toarray(), [[9.0, 0.0, -5.0], [0.0, 0.0, 1.0]])


def test_sparse_and_dense_fits_clip_alike():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    X[X < -0.5] = 0.0
    y = X[:, 0] * X[:, 1] + X[:, 2]
    dense = skquad.QuadraticRegression().fit(X, y)
    sparse = skquad.QuadraticRegression().fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.data_min_, sparse.data_min_)
    far = np.array([[10.0, 4.0, -20.0]])
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(far)), dense.predict(far), rtol=1e-10)


def test_early_stopping_scores_validation_rows_clipped_to_the_training_part(monkeypatch):
    from skquad._training._trainer import Trainer

    splits = []
    split = Trainer._split_validation

    def recording(self, X, y, sample_weight):
        result = split(self, X, y, sample_weight)
        splits.append(result)
        return result

    monkeypatch.setattr(Trainer, "_split_validation", recording)
    rng = np.random.RandomState(0)
    X = rng.randn(100, 2)
    X[::7] *= 20.0  # rows far out, some in each part
    y = X[:, 0] - X[:, 1]
    for clip in (True, False):
        _fit(skquad.QNNRegressor((3,), early_stopping=True, max_iter=3, random_state=0, clip_inputs=clip), X, y)
    (train, validation), (_, unclipped) = splits
    low, high = train[0].min(axis=0), train[0].max(axis=0)
    assert np.all((validation[0] >= low) & (validation[0] <= high))
    assert not np.all((unclipped[0] >= low) & (unclipped[0] <= high))


def test_dask_fits_reduce_the_same_range():
    da = pytest.importorskip("dask.array")
    rng = np.random.RandomState(0)
    X = rng.randn(200, 3)
    y = X[:, 0] ** 2 + X[:, 1]
    weight = rng.rand(200)
    weight[X[:, 0] > 1.5] = 0.0  # the largest rows of column 0 don't count
    for model, target in ((skquad.QuadraticRegression(), y),
                          (skquad.QuadraticLogisticRegression(), (y > 1).astype(int))):
        memory = clone(model).fit(X, target, sample_weight=weight)
        blocks = clone(model).fit(da.from_array(X, chunks=(45, 3)), da.from_array(target, chunks=45),
                                  sample_weight=da.from_array(weight, chunks=45))
        np.testing.assert_array_equal(blocks.data_min_, memory.data_min_)
        np.testing.assert_array_equal(blocks.data_max_, memory.data_max_)
        assert memory.data_max_[0] < X[:, 0].max()


def test_clip_inputs_is_validated():
    X, y = _data("QuadraticRegression")
    with pytest.raises(ValueError, match="clip_inputs"):
        skquad.QuadraticRegression(clip_inputs="yes").fit(X, y)


def test_the_default_quadratic_regression_fits_dask_collections():
    """alpha='auto' on Dask: the selection on every k-th row of each block (here all
    rows, as in memory), the normal equations over the blocks: the in-memory model."""
    da = pytest.importorskip("dask.array")
    rng = np.random.RandomState(0)
    X = rng.randn(600, 4)
    y = X[:, 0] * X[:, 1] + X[:, 2] + 0.1 * rng.randn(600)
    memory = skquad.QuadraticRegression().fit(X, y)
    blocks = skquad.QuadraticRegression().fit(da.from_array(X, chunks=(150, 4)), da.from_array(y, chunks=150))
    assert (blocks.alpha_, blocks.quadratic_alpha_) == (memory.alpha_, memory.quadratic_alpha_)
    np.testing.assert_allclose(np.asarray(blocks.predict(X)), memory.predict(X), rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------ clip_outputs
REGRESSORS = [name for name in ALL if is_regressor(getattr(skquad, name)())]


@pytest.mark.parametrize("name", REGRESSORS)
def test_clip_outputs_bounds_predictions_to_the_training_targets(name):
    X, y = _data(name)
    model = _fit(_small(name, clip_outputs=True), X, y)
    np.testing.assert_array_equal(model.target_min_, [y.min()])
    np.testing.assert_array_equal(model.target_max_, [y.max()])
    far = 30 * np.random.RandomState(1).randn(50, 3)
    bounded = model.predict(far)
    assert bounded.min() >= y.min() and bounded.max() <= y.max()
    # no training row's squared error grows: the range holds every training target
    clipped = model.predict(X)
    model.set_params(clip_outputs=False)  # read at predict time
    free = model.predict(X)
    assert np.all((clipped - y) ** 2 <= (free - y) ** 2)
    # the unbounded model on unclipped inputs leaves the range
    assert np.any(model.set_params(clip_inputs=False).predict(far) != bounded)
    assert getattr(skquad, name)().clip_outputs is True  # every regressor's default


@pytest.mark.parametrize("cls", [skquad.QuadraticRegression, skquad.QuadraticRegressionCV])
def test_default_bounds_an_unseen_combination_of_inputs_inside_their_ranges(cls):
    # No row has both features high (or both low): the corner (max, max) lies inside each
    # column's range, so clip_inputs leaves it, but the interaction extrapolates there.
    # The default clips the prediction to the training targets (what a held-out set showed).
    rng = np.random.RandomState(0)
    X = rng.uniform(-1.0, 1.0, (600, 2))
    X = X[~(np.all(X > 0.5, axis=1) | np.all(X < -0.5, axis=1))]
    y = X[:, 0] - 6.0 * X[:, 0] * X[:, 1] + 0.1 * rng.randn(X.shape[0])
    model = cls().fit(X, y)
    corner = X.max(axis=0)[None, :]
    assert y.min() <= model.predict(corner)[0] <= y.max()
    unbounded = model.set_params(clip_outputs=False).predict(corner)[0]
    assert unbounded < y.min() - 0.5  # about 1 - 6 = -5, where every row is above -3.6


@pytest.mark.parametrize("name", [name for name in REGRESSORS if name in _PARTIAL_FIT])
def test_target_range_skips_zero_weights_and_partial_fit_widens_it(name):
    X, y = _data(name, n=60)
    weight = np.ones(60)
    weight[np.argmax(y)] = 0.0
    model = _small(name)
    with _quiet():
        model.partial_fit(X, y, sample_weight=weight)
        assert model.target_max_[0] < y.max()
        model.partial_fit(X, y + 10.0)
    np.testing.assert_array_equal(model.target_max_, [y.max() + 10.0])
    np.testing.assert_array_equal(model.target_min_, [y.min()])


def test_exports_clip_outputs_as_predict_does():
    pytest.importorskip("torch")
    import torch

    X, y = _data("QNNRegressor")
    model = _fit(_small("QNNRegressor"), X, y)
    far = 30 * np.random.RandomState(1).randn(50, 3)
    module = model.to_torch()
    exported = module(torch.as_tensor(far)).detach().numpy()
    np.testing.assert_allclose(exported, model.predict(far), rtol=1e-6, atol=1e-9)
    assert exported.max() <= y.max() and exported.min() >= y.min()


def test_dask_fits_reduce_the_same_target_range():
    da = pytest.importorskip("dask.array")
    X, y = _data("QuadraticRegression", n=200)
    weight = np.random.RandomState(0).rand(200)
    weight[np.argmin(y)] = 0.0
    memory = skquad.QuadraticRegression().fit(X, y, sample_weight=weight)
    blocks = skquad.QuadraticRegression().fit(da.from_array(X, chunks=(45, 3)), da.from_array(y, chunks=45),
                                              sample_weight=da.from_array(weight, chunks=45))
    np.testing.assert_array_equal(blocks.target_min_, memory.target_min_)
    np.testing.assert_array_equal(blocks.target_max_, memory.target_max_)
    assert memory.target_min_[0] > y.min()


@pytest.mark.parametrize("n", [1, 31, 32, 100, 1000])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_range_is_numpys_column_extremes(n, order, dtype):
    # C-ordered rows are reduced in groups of 32 (and the rest alone): the same extremes
    rng = np.random.default_rng(n)
    X = np.asarray(rng.standard_normal((n, 23)) * rng.uniform(0.1, 10.0, 23), dtype=dtype, order=order)
    X[-1, 3], X[0, 4] = 1e6, -1e6  # far extremes in the last row (of the remainder) and the first
    low, high = feature_range(X)
    np.testing.assert_array_equal(low, X.min(axis=0))
    np.testing.assert_array_equal(high, X.max(axis=0))
    assert low.dtype == high.dtype == np.float64
