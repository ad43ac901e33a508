"""QNNRegressor and RPQNNRegressor: MLPRegressor's losses and habits on the quadratic networks."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
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
    model = Estimator(early_stopping=True, random_state=0).fit(X, y)
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
