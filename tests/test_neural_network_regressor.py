"""QNNRegressor and RPQNNRegressor: MLPRegressor's losses and habits on the quadratic networks."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge
from sklearn.neural_network import MLPRegressor

from skquad import QNNRegressor, RPQNNRegressor
from skquad.nn.fused import regression_loss

REGRESSORS = [QNNRegressor, RPQNNRegressor]


def _data(n_outputs=None, n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    y = X[:, 0] * X[:, 1] + 0.2 * X[:, 2]
    if n_outputs is not None:
        y = np.column_stack([y] + [X[:, k % 3] ** 2 for k in range(n_outputs - 1)])
    return X, y


def test_regression_losses_and_their_gradients_against_autograd():
    rng = np.random.RandomState(0)
    scores = torch.tensor(rng.randn(7, 3), dtype=torch.float64, requires_grad=True)
    y = torch.tensor(rng.uniform(0.0, 3.0, size=(7, 3)), dtype=torch.float64)
    for loss in ("squared_error", "poisson"):
        per_sample, delta = regression_loss(loss, scores.detach().clone(), y, with_delta=True)
        value = regression_loss(loss, scores, y).sum()
        (gradient,) = torch.autograd.grad(value, scores)
        torch.testing.assert_close(delta, gradient)
    # MLPRegressor's squared loss: the mean over outputs, halved.
    expected = ((scores.detach() - y) ** 2).mean(1) / 2
    torch.testing.assert_close(regression_loss("squared_error", scores.detach(), y), expected)


@pytest.mark.parametrize("Estimator", REGRESSORS)
@pytest.mark.parametrize("loss", ["squared_error", "poisson"])
def test_fused_and_autograd_backward_train_the_same_network(Estimator, loss):
    X, y = _data(2)
    y = np.abs(y) if loss == "poisson" else y
    common = dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0, loss=loss, shuffle=False)
    with pytest.warns(ConvergenceWarning):
        fused = Estimator(backward="fused", **common).fit(X, y)
    with pytest.warns(ConvergenceWarning):
        autograd = Estimator(backward="autograd", **common).fit(X, y)
    # Same float64 arithmetic in another order: agreement to rounding.
    np.testing.assert_allclose(fused.loss_curve_, autograd.loss_curve_, rtol=1e-9)


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_accepts_mlpregressor_parameters_and_predicts_the_fitted_shape(Estimator):
    X, y = _data(2)
    model = Estimator(**MLPRegressor(max_iter=300, random_state=0).get_params())
    model.fit(X, y)
    assert model.predict(X).shape == y.shape and model.out_activation_ == "identity"
    assert model.score(X, y) > 0.9


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_early_stopping_scores_r2(Estimator):
    X, y = _data()
    # tol=1e-3: stops on the validation score well before max_iter, whatever the split
    model = Estimator(early_stopping=True, tol=1e-3, random_state=0).fit(X, y)
    assert model.validation_scores_ and max(model.validation_scores_) == model.best_validation_score_
    assert 0.5 < model.best_validation_score_ <= 1.0


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_bad_targets_are_refused_clearly(Estimator):
    X, y = _data()
    with pytest.raises(ValueError, match="non-negative y"):
        Estimator(loss="poisson").fit(X, y - 5.0)
    with pytest.raises(ValueError, match="must be numeric"):
        Estimator().fit(X, np.array(["a", "b"] * 100))
    model = Estimator(max_iter=2, random_state=0)
    model.partial_fit(X, y)
    with pytest.raises(ValueError, match="fitted on a 1-D y"):
        model.partial_fit(X, np.column_stack([y, y]))
    assert model.n_iter_ == 1
    warm = Estimator(warm_start=True, max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning):
        warm.fit(X, y)
    with pytest.raises(ValueError, match="previous fit's 1 output"):
        warm.fit(X, np.column_stack([y, y]))


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_poisson_predictions_are_positive(Estimator):
    X, y = _data()
    counts = np.random.RandomState(1).poisson(np.exp(X[:, 0] * X[:, 1] + 1.0))
    with warnings.catch_warnings():
        # Whether 300 epochs meet tol is not this test's subject (and varies with the CPU).
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Estimator(loss="poisson", random_state=0, max_iter=300).fit(X, counts)
    assert model.out_activation_ == "exp"
    assert np.all(model.predict(X) > 0)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("Estimator", REGRESSORS)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_targets_are_refused_naming_y(Estimator, bad):
    X, y = _data(n=20)
    y[3] = bad
    with pytest.raises(ValueError, match="Input y contains (NaN|infinity)"):
        Estimator().fit(X, y)


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_target_shape_change_at_partial_fit_is_refused_both_ways(Estimator):
    X, y = _data(2, n=40)
    model = Estimator(hidden_layer_sizes=(3,), random_state=0).partial_fit(X, y)
    before = [state["weight"].copy() for state in model.layers_]
    with pytest.raises(ValueError, match="fitted on a 2-D y with 2 column"):
        model.partial_fit(X, y[:, 0])
    # the failed call left the model as it was (atomic partial_fit)
    for state, weight in zip(model.layers_, before):
        np.testing.assert_array_equal(state["weight"], weight)
    with pytest.raises(ValueError, match="fitted on a 2-D y with 2 column"):
        model.partial_fit(X, y[:, :1])


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_failed_fit_leaves_the_previous_model(Estimator):
    X, y = _data(n=40)
    with pytest.warns(ConvergenceWarning):
        model = Estimator(hidden_layer_sizes=(3,), max_iter=3, random_state=0).fit(X, y)
    expected = model.predict(X)
    with pytest.raises(ValueError, match="non-negative y"):
        model.set_params(loss="poisson").fit(X, y - 10.0)
    np.testing.assert_array_equal(model.set_params(loss="squared_error").predict(X), expected)


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_float32_input_trains_and_predicts_in_float32(Estimator):
    X, y = _data(n=40)
    with pytest.warns(ConvergenceWarning):
        model = Estimator(hidden_layer_sizes=(3,), max_iter=3, random_state=0).fit(X.astype(np.float32), y)
    assert model.layers_[0]["weight"].dtype == np.float32
    assert model.predict(X.astype(np.float32)).dtype == np.float32


# ------------------------------------------------------- inspection, export
@pytest.mark.parametrize("Estimator", REGRESSORS)
@pytest.mark.parametrize(("loss", "n_outputs"), [("squared_error", None), ("poisson", None), ("squared_error", 1),
                                                  ("squared_error", 2)])
def test_to_torch_computes_predict(Estimator, loss, n_outputs):
    X, y = _data(n_outputs, n=60)
    y = np.abs(y) if loss == "poisson" else y
    y = y.reshape(-1, 1) if n_outputs == 1 else y
    with pytest.warns(ConvergenceWarning):
        model = Estimator(hidden_layer_sizes=(4,), max_iter=5, loss=loss, random_state=0).fit(X, y)
    out = model.to_torch()(torch.as_tensor(X)).detach().numpy()
    # the same float64 products in another order: agreement to rounding
    assert out.shape == model.predict(X).shape
    np.testing.assert_allclose(out, model.predict(X), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_inspection_reads_the_output_neurons_and_sizes(Estimator):
    from skquad.inspection import model_size, quadratic_neurons

    X, y = _data(2, n=60)
    with pytest.warns(ConvergenceWarning):
        model = Estimator(hidden_layer_sizes=(4,), max_iter=5, random_state=0).fit(X, y)
    neurons = quadratic_neurons(model)
    assert [n.name for n in neurons] == ["output 0", "output 1"]
    # each output neuron is the quadratic function of the hidden layer the network computes,
    # in the units of the scaled target (predict adds the shift and scale of scale_target)
    hidden = np.maximum(X @ model.layers_[0]["weight"].T + model.layers_[0]["bias"], 0)
    for k, neuron in enumerate(neurons):
        value = np.einsum("ni,ij,nj->n", hidden, neuron.Q, hidden) + hidden @ neuron.w + neuron.b
        value = model.target_shift_[k] + model.target_scale_[k] * value
        np.testing.assert_allclose(value, model.predict(X)[:, k], rtol=1e-9, atol=1e-9)
    assert model_size(model).n_parameters > 0


@pytest.mark.parametrize("Estimator", REGRESSORS)
@pytest.mark.parametrize("loss", ["squared_error", "poisson"])
def test_onnx_in_a_column_transformer_pipeline(Estimator, loss):
    ort = pytest.importorskip("onnxruntime")
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skquad.export import register_onnx_converters

    register_onnx_converters()
    X, y = _data(2, n=60)
    y = np.abs(y) if loss == "poisson" else y
    columns = ColumnTransformer([("scale", StandardScaler(), [0, 1]), ("keep", "passthrough", [2])])
    with pytest.warns(ConvergenceWarning):
        pipeline = make_pipeline(columns, Estimator(hidden_layer_sizes=(4,), max_iter=5, loss=loss,
                                                    random_state=0)).fit(X, y)
    onnx_model = skl2onnx.to_onnx(pipeline, X[:1])
    (out,) = ort.InferenceSession(onnx_model.SerializeToString()).run(None, {"X": X})
    np.testing.assert_allclose(out, pipeline.predict(X), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------- target scaling
@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_scale_target_trains_on_the_weighted_standardized_target(Estimator):
    # a target far from unit scale: the default fits it, the targets as given do not
    X, y = _data(n=300)
    y = 1000.0 + 300.0 * y
    weight = np.random.RandomState(1).uniform(0.5, 2.0, size=300)
    train, test = slice(0, 200), slice(200, None)
    # Adam, whose learning rate is set for unit-scale targets
    scaled = Estimator(solver="adam", max_iter=300, random_state=0).fit(
        X[train], y[train], sample_weight=weight[train])
    mean = np.average(y[train], weights=weight[train])
    np.testing.assert_allclose(scaled.target_shift_, [mean])
    np.testing.assert_allclose(scaled.target_scale_,
                               [np.sqrt(np.average((y[train] - mean) ** 2, weights=weight[train]))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the unscaled fit may not converge
        given = Estimator(solver="adam", max_iter=300, random_state=0, scale_target=False).fit(
            X[train], y[train])
    assert np.all(given.target_shift_ == 0) and np.all(given.target_scale_ == 1)
    assert scaled.score(X[test], y[test]) > 0.8 > given.score(X[test], y[test])


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_a_constant_target_column_is_predicted_exactly(Estimator):
    X, y = _data(2, n=80)
    y[:, 1] = -2.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Estimator(hidden_layer_sizes=(4,), max_iter=20, random_state=0).fit(X, y)
    assert model.target_scale_[1] == 0.0 and model.target_shift_[1] == -2.5
    assert np.all(model.predict(X)[:, 1] == -2.5)
    assert np.all(np.isfinite(model.loss_curve_))


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_poisson_targets_are_divided_by_their_mean_not_shifted(Estimator):
    X, y = _data(n=80)
    y = 40.0 * np.abs(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Estimator(hidden_layer_sizes=(4,), loss="poisson", max_iter=20, random_state=0).fit(X, y)
    assert model.target_shift_[0] == 0.0
    np.testing.assert_allclose(model.target_scale_, [y.mean()])
    assert np.all(model.predict(X) > 0)


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_partial_fit_keeps_the_first_calls_scaling(Estimator):
    X, y = _data(n=120)
    model = Estimator(hidden_layer_sizes=(4,), random_state=0)
    model.partial_fit(X[:60], y[:60])
    first = (model.target_shift_.copy(), model.target_scale_.copy())
    model.partial_fit(X[60:], y[60:] + 5.0)
    np.testing.assert_array_equal(model.target_shift_, first[0])
    np.testing.assert_array_equal(model.target_scale_, first[1])
    # a constant first batch may vary later: its scale is 1, not 0
    model = Estimator(hidden_layer_sizes=(4,), random_state=0).partial_fit(X[:1], y[:1])
    assert model.target_scale_[0] == 1.0


@pytest.mark.parametrize("Estimator", REGRESSORS)
def test_weights_and_repeated_rows_start_the_same_lbfgs_path(Estimator):
    """The default (L-BFGS at alpha=1 on small data) weighs rows as repeats: the same
    objective, so the two fits' first iterations agree to round-off (later they part,
    see tests/test_estimator_checks.py)."""
    rng = np.random.RandomState(42)
    X, y = rng.rand(30, 3) * 3, rng.randint(0, 3, 30).astype(float)
    weight = rng.randint(0, 5, size=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = Estimator(max_iter=10, random_state=0).fit(X, y, sample_weight=weight)
        repeated = Estimator(max_iter=10, random_state=0).fit(np.repeat(X, weight, axis=0),
                                                              np.repeat(y, weight))
    assert weighted.solver_ == repeated.solver_ == "lbfgs"
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=0, atol=1e-10)
    assert weighted.loss_ == pytest.approx(repeated.loss_, rel=1e-12)


@pytest.mark.parametrize("Estimator", [QNNRegressor, RPQNNRegressor])
def test_default_stops_early_on_many_noisy_rows_where_adam_to_max_iter_overfits(Estimator):
    # above 1,000 rows solver="auto" trains by Adam: early_stopping="auto" holds out a tenth
    rng = np.random.RandomState(0)
    X = rng.randn(2400, 16)
    y = X @ (rng.randn(16) / 4) + 1.5 * rng.randn(2400)
    train, test = slice(0, 1600), slice(1600, None)
    reference = Ridge().fit(X[train], y[train]).score(X[test], y[test])
    model = Estimator(random_state=0).fit(X[train], y[train])
    assert model.solver_ == "adam" and model.validation_scores_ is not None
    assert model.score(X[test], y[test]) > reference - 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        every_epoch = Estimator(random_state=0, early_stopping=False).fit(X[train], y[train])
    assert every_epoch.score(X[test], y[test]) < reference - 0.2


@pytest.mark.parametrize("Estimator", [QNNRegressor, RPQNNRegressor])
def test_default_trains_on_every_row_where_the_validation_split_is_too_small(Estimator):
    # 5e-4 of 1,500 rows holds out one sample, whose R^2 is undefined
    rng = np.random.RandomState(0)
    X = rng.randn(1500, 5)
    y = X[:, 0] + 0.1 * rng.randn(1500)
    params = dict(hidden_layer_sizes=(5,), max_iter=3, validation_fraction=5e-4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Estimator(**params).fit(X, y)
    assert model.validation_scores_ is None and model.best_loss_ is not None
    with pytest.raises(ValueError, match="The validation set is too small"):
        Estimator(early_stopping=True, **params).fit(X, y)
