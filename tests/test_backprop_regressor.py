"""BackpropQuantizedRegressor: the baseline network on real, vector targets."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge

from skquad import BackpropQuantizedRegressor
from skquad.nn.bilinear import bilinear_loss


def _data(n_outputs=None, n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 3))
    y = X[:, 0] * X[:, 1]
    if n_outputs is not None:
        y = np.column_stack([y] + [X[:, k % 3] ** 2 for k in range(n_outputs - 1)])
    return X, y


def test_vector_squared_loss_compares_the_targets_as_they_are():
    scores = torch.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=torch.float64)
    target = torch.tensor([[0.0, 2.5], [1.5, -1.0]], dtype=torch.float64)
    per_sample = bilinear_loss("squared", 2, real_targets=True)(scores, target)
    torch.testing.assert_close(per_sample, torch.tensor([1.25, 1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="squared loss"):
        bilinear_loss("logistic", 2, real_targets=True)


@pytest.mark.parametrize("n_outputs", [None, 2])
def test_the_real_network_learns_and_quantization_keeps_the_shape(n_outputs):
    X, y = _data(n_outputs)
    model = BackpropQuantizedRegressor(n_neurons=200, random_state=0).fit(X, y)
    assert model.predict(X).shape == y.shape == model.float_predict(X).shape
    # The real-weight network fits x0 * x1 (and x_k²): a bilinear network
    # represents them exactly; R² well above 0 on the training data.
    float_r2 = 1 - np.mean((model.float_predict(X) - y) ** 2) / np.var(y)
    assert float_r2 > 0.8
    assert np.all(np.isin(model.U_, [-1, 1]))


def test_partial_fit_continues_and_checks_the_target_shape():
    X, y = _data(2)
    model = BackpropQuantizedRegressor(n_neurons=40, random_state=0)
    model.partial_fit(X, y)
    model.partial_fit(X, y)
    assert model.n_iter_ == 2 and len(model.loss_curve_) == 2
    with pytest.raises(ValueError, match="fitted on a 2-D y with 2"):
        model.partial_fit(X, y[:, 0])
    assert model.n_iter_ == 2


def test_same_seed_same_model():
    X, y = _data()
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        a = BackpropQuantizedRegressor(n_neurons=30, max_iter=20, random_state=3).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        b = BackpropQuantizedRegressor(n_neurons=30, max_iter=20, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_planted_regression_on_the_inputs_as_given():
    # Bartan & Pilanci's planted experiment (the paper002 suite): real targets
    # of a planted +-1 network, no intercept, no standardization.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 6))
    truth_u, truth_v = np.sign(rng.standard_normal((2, 3, 6)))
    y = ((X @ truth_u.T) * (X @ truth_v.T)).sum(axis=1)
    y = y / y.std()
    model = BackpropQuantizedRegressor(
        50, fit_intercept=False, standardize=False, linear_term=False, max_iter=200, tol=0.0,
        n_iter_no_change=200,
        n_threads=1, random_state=0,
    )
    with pytest.warns(ConvergenceWarning):  # all 200 epochs run on purpose
        model.fit(X, y)
    assert model.U_.shape == (50, 6)  # the inputs as given: no intercept column
    real = ((X @ model.U_float_.T) * (X @ model.V_float_.T)) @ model.float_alpha_
    # the real network explains most of the variance (y has unit variance)
    assert np.mean((real.ravel() - y) ** 2) < 0.2
    assert model.loss_curve_[-1] < 0.2 * model.loss_curve_[0]
    assert set(np.unique(model.U_)) <= {-1, 1} and model.alpha_.shape == (50, 1)


def test_a_constant_target_is_not_silently_missed():
    """On a constant y the quantized network predicted values from 3.15 to 6.66
    with no warning (issue 38, item 9): it must predict the constant, or say
    truthfully that it fits worse than the targets' mean."""
    import warnings

    from skquad import BackpropQuantizedRegressor

    X = np.random.RandomState(0).randn(50, 3)
    y = np.full(50, 5.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        model = BackpropQuantizedRegressor(random_state=0).fit(X, y)
    predictions = model.predict(X)
    constant = np.allclose(predictions, 5.0, rtol=1e-3)
    warned = any("worse than their mean" in str(w.message) for w in caught)
    assert constant or warned


def test_a_constant_target_is_predicted_exactly():
    X, _ = _data(n=80)
    with pytest.warns(ConvergenceWarning):  # 20 epochs
        model = BackpropQuantizedRegressor(n_neurons=20, max_iter=20, random_state=0).fit(X, np.full(80, 7.5))
    assert np.all(model.predict(X) == 7.5) and np.all(model.float_predict(X) == 7.5)


def test_scale_target_fits_a_target_far_from_unit_scale():
    X, y = _data(n=300)
    y = 1000.0 + 300.0 * (y + X[:, 2])
    weight = np.random.RandomState(1).uniform(0.5, 2.0, size=300)
    # the paper's quantization (no refit), so that the scaling alone is tested
    model = BackpropQuantizedRegressor(
        n_neurons=200, random_state=0, refit_output_layer=False, linear_term=False).fit(
        X[:200], y[:200], weight[:200])
    np.testing.assert_allclose(model.target_shift_, [np.average(y[:200], weights=weight[:200])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        given = BackpropQuantizedRegressor(
            n_neurons=200, random_state=0, scale_target=False, refit_output_layer=False,
            linear_term=False).fit(
            X[:200], y[:200], weight[:200])
    assert model.score(X[200:], y[200:]) > 0.8 > given.score(X[200:], y[200:])
    # the exporters apply the affine step: torch and the callbacks' units are predict's
    out = model.to_torch()(torch.as_tensor(X)).detach().numpy()
    np.testing.assert_allclose(out, model.predict(X), rtol=1e-10)


def test_the_refitted_output_layer_fits_better_and_exports_exactly():
    """The refit is ridge on the ±1 neurons' outputs with an intercept: on the training rows it
    beats the paper's one scale without intercept, and predict and torch agree."""
    X, y = _data(n=300)
    y = 3.0 + y + X[:, 2]
    paper = BackpropQuantizedRegressor(n_neurons=100, random_state=0, refit_output_layer=False).fit(X, y)
    refit = BackpropQuantizedRegressor(n_neurons=100, random_state=0).fit(X, y)
    np.testing.assert_array_equal(refit.U_, paper.U_)
    np.testing.assert_array_equal(paper.intercept_, 0.0)
    assert refit.score(X, y) > paper.score(X, y)
    assert len(np.unique(refit.alpha_)) > 10  # one weight per neuron, not one scale
    out = refit.to_torch()(torch.as_tensor(X)).detach().numpy()
    np.testing.assert_allclose(out, refit.predict(X), rtol=1e-10)


@pytest.mark.parametrize("seed", [1, 3])
def test_the_default_penalty_keeps_a_few_dozen_rows_from_being_interpolated(seed):
    # 30 rows of a linear signal, one product and noise of unit spread; 500 test rows.
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((530, 8))
    y = X @ rng.standard_normal(8) + X[:, 0] * X[:, 1] + rng.standard_normal(530)
    train, test = slice(0, 30), slice(30, None)
    ridge = Ridge().fit(X[train], y[train]).score(X[test], y[test])
    default = BackpropQuantizedRegressor(random_state=0).fit(X[train], y[train])
    constant = BackpropQuantizedRegressor(beta=1e-4, random_state=0).fit(X[train], y[train])
    assert default.beta_ == pytest.approx(0.3 / 30)
    # the constant interpolates the training rows and falls far below the ridge on new ones
    assert constant.score(X[train], y[train]) > 0.999
    assert constant.score(X[test], y[test]) < ridge - 0.2
    assert default.score(X[test], y[test]) > ridge - 0.1


def test_beta_auto_reads_the_rows_of_fit_and_keeps_the_constant_for_partial_fit():
    X, y = _data(n=40)
    small = dict(n_neurons=5, max_iter=1, random_state=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*Maximum iterations", ConvergenceWarning)
        assert BackpropQuantizedRegressor(**small).fit(X, y).beta_ == pytest.approx(0.3 / 40)
        # a weight counts as that many rows
        weighted = BackpropQuantizedRegressor(**small).fit(X, y, sample_weight=np.full(40, 2.0))
        assert weighted.beta_ == pytest.approx(0.3 / 80)
        X_large, y_large = _data(n=4000)
        assert BackpropQuantizedRegressor(**small).fit(X_large, y_large).beta_ == 1e-4
        assert BackpropQuantizedRegressor(**small, beta=0.5).fit(X, y).beta_ == 0.5
    streamed = BackpropQuantizedRegressor(**small).partial_fit(X, y)
    assert streamed.beta_ == 1e-4
    fitted = BackpropQuantizedRegressor(**(small | {"max_iter": 5}))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*Maximum iterations", ConvergenceWarning)
        fitted.fit(X, y)
    # partial_fit after fit goes on under the penalty fit chose
    assert fitted.partial_fit(X, y).beta_ == pytest.approx(0.3 / 40)
