"""SDPQuantizedRegressor: the squared-loss SDP as a regressor, certified against CLARABEL."""

import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skquad import SDPQuantizedRegressor


def _data(n_outputs=None, n=80, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 3))
    y = X[:, 0] * X[:, 1] + 0.5 * X[:, 2] + 0.1 * rng.standard_normal(n)
    if n_outputs is not None:
        y = np.column_stack([y] + [X[:, k % 3] ** 2 for k in range(n_outputs - 1)])
    return X, y


@pytest.mark.parametrize("n_outputs", [None, 2])
@pytest.mark.parametrize("beta", [1e-3, 1e-1])
def test_certificate_brackets_the_clarabel_optimum(n_outputs, beta):
    X, y = _data(n_outputs)
    w = np.random.RandomState(1).uniform(0.5, 2.0, len(X))
    native = SDPQuantizedRegressor(n_neurons=60, beta=beta, random_state=0).fit(X, y, sample_weight=w)
    reference = SDPQuantizedRegressor(
        n_neurons=60, beta=beta, solver="CLARABEL", random_state=0
    ).fit(X, y, sample_weight=w)
    # CLARABEL's relaxed value is accurate to ~1e-8 relative; the native
    # bound is a proof and its value a feasible point's objective.
    optimum = reference.relaxed_objective_
    assert native.lower_bound_ <= optimum + 1e-7 * max(1.0, optimum)
    assert optimum <= native.relaxed_objective_ + 1e-7 * max(1.0, optimum)
    assert native.certified_gap_ <= 1e-4 * native.relaxed_objective_
    # No binary network whose constant is the targets' weighted mean beats the
    # bound; the refit's free intercept b lowers the loss by exactly b² (the
    # square of the mean residual), and the refit never rises above the sample.
    gain = _intercept_gain(native, y, w)
    assert native.lower_bound_ - gain <= native.objective_ * (1 + 1e-9)
    assert native.objective_ <= native.sampled_objective_ + 1e-12


def _intercept_gain(model, y, weight=None):
    """``sum_k (intercept_k - ybar_k)^2``: what the free intercept can gain over the certified class."""
    return float(np.sum((model.intercept_ - np.average(y, axis=0, weights=weight)) ** 2))


@pytest.mark.parametrize("n_outputs", [None, 1, 3])
def test_predictions_have_the_fitted_shape(n_outputs):
    X, y = _data(n_outputs)
    if n_outputs == 1:
        y = y[:, :1]
    model = SDPQuantizedRegressor(n_neurons=90, random_state=0).fit(X, y)
    assert model.predict(X).shape == y.shape
    assert model.relaxed_predict(X).shape == y.shape
    assert model.alpha_.shape == (90, model.n_outputs_)
    assert model.score(X, y) > 0.8


def test_resample_and_export_reproduce_predict():
    X, y = _data()
    # the exported network is the model before clip_outputs bounds its predictions
    model = SDPQuantizedRegressor(n_neurons=50, random_state=0, clip_outputs=False).fit(X, y)
    network = model.export_quadratic_network()
    np.testing.assert_allclose(network.scores(X)[:, 0], model.predict(X), rtol=1e-9, atol=1e-9)
    model.resample(120, random_state=1)
    assert model.n_neurons_ == 120 and model.U_.shape[0] == 120
    assert model.lower_bound_ - _intercept_gain(model, y) <= model.objective_ * (1 + 1e-9)
    np.testing.assert_allclose(
        model.export_quadratic_network().scores(X)[:, 0], model.predict(X), rtol=1e-9, atol=1e-9
    )


def test_bad_targets_leave_the_previous_model():
    X, y = _data()
    model = SDPQuantizedRegressor(n_neurons=30, random_state=0).fit(X, y)
    alpha = model.alpha_.copy()
    with pytest.raises(ValueError, match="NaN"):
        model.fit(X, np.where(np.arange(len(y)) == 0, np.nan, y))
    with pytest.raises(ValueError, match="must be numeric"):
        model.fit(X, np.array(["a", "b"] * (len(y) // 2)))
    np.testing.assert_array_equal(model.alpha_, alpha)


DATA = Path(os.environ.get("SKQUAD_DATA", "missing")).parent / "regression"


@pytest.mark.skipif(not (DATA / "concrete.csv").exists(), reason="the shared regression data is not beside the checkout")
def test_concrete_certified_and_at_least_as_accurate_as_ridge():
    import pandas as pd

    frame = pd.read_csv(DATA / "concrete.csv")
    y = frame.pop("compressive_strength").to_numpy()
    X = frame.to_numpy(dtype=np.float64)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    scaler = StandardScaler().fit(X_train)
    mean, scale = y_train.mean(), y_train.std()
    model = SDPQuantizedRegressor(random_state=0).fit(scaler.transform(X_train), (y_train - mean) / scale)
    assert model.certified_gap_ <= 1e-3 * model.relaxed_objective_
    r2 = 1 - np.mean((model.predict(scaler.transform(X_test)) * scale + mean - y_test) ** 2) / np.var(y_test)
    ridge = Ridge().fit(scaler.transform(X_train), y_train).score(scaler.transform(X_test), y_test)
    assert r2 >= ridge


def _weighted_rms(values):
    return float(np.sqrt(np.mean(np.square(values))))


@pytest.mark.parametrize("c", [1e-3, 1e3, 1e6, 1e8])
def test_fitting_c_y_with_c_beta_scales_the_fit_by_c(c):
    # Issue 19: the squared-loss SDP is scale-equivariant (rescale_solution):
    # (c y, c beta) has the solutions c Z of (y, beta), objective and bound
    # times c^2. c y is rounded, so both fits solve the same problem up to
    # an ulp of the targets and agree within their certificates.
    X, y = _data()
    base = SDPQuantizedRegressor(n_neurons=60, beta=1e-2, random_state=0).fit(X, y)
    scaled = SDPQuantizedRegressor(n_neurons=60, beta=1e-2 * c, random_state=0).fit(X, c * y)
    gap, scaled_gap = base.certified_gap_, scaled.certified_gap_ / c**2
    # Both relative gaps are certified within tol: the scale changes nothing.
    assert base.certified_gap_ <= base.tol * base.relaxed_objective_
    assert scaled.certified_gap_ <= scaled.tol * scaled.relaxed_objective_
    # Each lower bound lies in [optimum - its gap, optimum] (in y's units),
    # so the two differ by at most the larger gap (plus the targets' ulp,
    # 1e-15 relative).
    slack = 1e-12 * base.relaxed_objective_
    assert abs(scaled.lower_bound_ / c**2 - base.lower_bound_) <= max(gap, scaled_gap) + slack
    assert abs(scaled.relaxed_objective_ / c**2 - base.relaxed_objective_) <= max(gap, scaled_gap) + slack
    # The objective is the (uniform-weight) mean squared error of the relaxed
    # predictions f plus a term linear in Z on a convex set, so a point within
    # g of the optimum has RMS(f - f*) <= sqrt(g): the relaxed models agree
    # within sqrt(g) + sqrt(g_scaled).
    distance = _weighted_rms(scaled.relaxed_predict(X) / c - base.relaxed_predict(X))
    assert distance <= np.sqrt(gap) + np.sqrt(scaled_gap) + 1e-12
    # The sampled networks: covariances that agree to the solver's accuracy
    # flip at most a few of the 60 neurons' signs, and the refit absorbs them.
    assert abs(scaled.score(X, c * y) - base.score(X, y)) <= 1e-3
    np.testing.assert_allclose(scaled.objective_ / c**2, base.objective_, rtol=1e-3)


@pytest.mark.parametrize("exponent", [-10, 20, 27])
def test_a_power_of_two_scale_maps_every_attribute_exactly(exponent):
    # c = 2^k scales y and beta without rounding and the estimator's own
    # scale is a power of two, so the solver sees the same numbers: every
    # fitted attribute is the base one times c (or c^2), to the bit, and so
    # is a resampled network.
    X, y = _data(n_outputs=2)
    c = 2.0**exponent
    base = SDPQuantizedRegressor(n_neurons=40, beta=1e-2, random_state=0).fit(X, y)
    scaled = SDPQuantizedRegressor(n_neurons=40, beta=1e-2 * c, random_state=0).fit(X, c * y)
    np.testing.assert_array_equal(scaled.U_, base.U_)
    np.testing.assert_array_equal(scaled.alpha_, c * base.alpha_)
    np.testing.assert_array_equal(scaled.predict(X), c * base.predict(X))
    np.testing.assert_array_equal(scaled.Z_, c * base.Z_)
    np.testing.assert_array_equal(scaled.rho_, c * base.rho_)
    for name in ("lower_bound_", "relaxed_objective_", "certified_gap_", "objective_",
                 "sampled_objective_"):
        assert getattr(scaled, name) == c**2 * getattr(base, name), name
    base.resample(70, random_state=3)
    scaled.resample(70, random_state=3)
    np.testing.assert_array_equal(scaled.predict(X), c * base.predict(X))
    assert scaled.objective_ == c**2 * base.objective_


def test_large_targets_are_fitted_as_well_as_small_ones():
    # Issue 19: with |y| ~ 1e6 and the default beta the native solver stopped
    # at max_iter with a relative gap of 0.99 and the network scored R2 0.69
    # (0.50 in the run), against 0.994 for y itself. Solved for y / c,
    # it certifies tol and fits as well (a fixed beta is a relatively weaker
    # penalty on the larger y: the fit can only be closer).
    X, y = _data()
    small = SDPQuantizedRegressor(n_neurons=60, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        large = SDPQuantizedRegressor(n_neurons=60, random_state=0).fit(X, 1e6 * y)
    assert large.certified_gap_ <= large.tol * large.relaxed_objective_
    assert large.score(X, 1e6 * y) >= small.score(X, y) - 1e-3


def test_warm_start_along_beta_on_large_targets():
    # The stored warm start is in y's units; the next solve rescales it.
    X, y = _data()
    model = SDPQuantizedRegressor(n_neurons=40, beta=1e4, warm_start=True, random_state=0)
    model.fit(X, 1e6 * y)
    cold = SDPQuantizedRegressor(n_neurons=40, beta=1e3, solver="CLARABEL", random_state=0)
    cold.fit(X, 1e6 * y)
    model.set_params(beta=1e3).fit(X, 1e6 * y)
    optimum = cold.relaxed_objective_
    assert model.lower_bound_ <= optimum * (1 + 1e-7)
    assert optimum <= model.relaxed_objective_ * (1 + 1e-7)
    assert model.certified_gap_ <= model.tol * model.relaxed_objective_


def test_targets_whose_squared_loss_leaves_float64_are_refused():
    X, y = _data()
    model = SDPQuantizedRegressor(n_neurons=30, random_state=0).fit(X, y)
    alpha = model.alpha_.copy()
    with pytest.raises(ValueError, match=r"y has a root mean square of .*e\+200.*Rescale y"):
        model.fit(X, 1e200 * y)
    with pytest.raises(ValueError, match=r"y has a root mean square of .*e-170.*Rescale y"):
        model.fit(X, 1e-170 * y)
    np.testing.assert_array_equal(model.alpha_, alpha)


def test_auto_beta_on_a_cheap_solve_is_checked_on_held_out_rows():
    """On the compact route "auto" picks a fraction of beta_max on a held-out fifth:
    noise asks for more of the penalty than a clean quadratic target, and the fit is
    the one at that beta."""
    from skquad.quantized._beta_search import AUTO_BETA_FRACTIONS

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 4))
    signal = X[:, 0] * X[:, 1] + X[:, 2]
    clean = SDPQuantizedRegressor(100, random_state=0).fit(X, signal + 0.01 * rng.standard_normal(200))
    noisy = SDPQuantizedRegressor(100, random_state=0).fit(X, signal + 3.0 * rng.standard_normal(200))
    fractions = [model.beta_ / model.beta_max_ for model in (clean, noisy)]
    assert all(min(abs(np.log(f / np.asarray(AUTO_BETA_FRACTIONS)))) < 1e-9 for f in fractions)
    assert fractions[1] > fractions[0]
    y = signal + 3.0 * np.random.default_rng(1).standard_normal(200)
    auto = SDPQuantizedRegressor(100, random_state=0).fit(X, y)
    fixed = SDPQuantizedRegressor(100, beta=auto.beta_, random_state=0).fit(X, y)
    np.testing.assert_allclose(auto.predict(X), fixed.predict(X), rtol=1e-10, atol=1e-12)


def test_auto_beta_fractions_go_down_to_what_a_solve_affords():
    from skquad.quantized._beta_search import AUTO_BETA_FRACTIONS, auto_beta_fractions

    # the compact route (p (p + 1) / 2 <= 300): its cost does not grow as beta shrinks
    np.testing.assert_array_equal(auto_beta_fractions("squared", 20, 0.01, n_rows=100, n_blocks=1), AUTO_BETA_FRACTIONS)
    # elsewhere down to the (p / n)^2 rule's fraction, which the fit would solve anyway
    np.testing.assert_array_equal(
        auto_beta_fractions("squared", 26, 2e-3, n_rows=100, n_blocks=1), [1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 2e-3])
    np.testing.assert_array_equal(auto_beta_fractions("squared", 90, 0.05, n_rows=100, n_blocks=1), [1.0, 0.3, 0.1, 0.05])
    np.testing.assert_array_equal(auto_beta_fractions("squared", 90, 0.01, n_rows=100, n_blocks=1), [1.0, 0.3, 0.1, 0.03, 0.01])
    # wider than AUTO_SEARCH_MAX_LIFTED: the rule alone, no search
    np.testing.assert_array_equal(auto_beta_fractions("squared", 101, 0.01, n_rows=100, n_blocks=1), [0.01])
    # n p^2 blocks above AUTO_SEARCH_MAX_SIZE (1e8): the rule alone; at the bound, the search
    np.testing.assert_array_equal(auto_beta_fractions("squared", 50, 0.01, n_rows=4001, n_blocks=10), [0.01])
    assert len(auto_beta_fractions("squared", 50, 0.01, n_rows=4000, n_blocks=10)) == 5


def test_auto_beta_on_wide_inputs_is_checked_on_held_out_rows():
    """Beyond the compact route "auto" still chooses on held-out rows, from beta_max down to
    the (p / n)^2 rule's beta: on 600 noisy rows of 25 inputs the rule's network fits the
    noise, the held-out choice scores as the ridge does."""
    from skquad.convex.path import auto_beta

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1600, 25))
    y = 0.3 * X @ rng.standard_normal(25) + 0.2 * X[:, 0] * X[:, 1] + 2.0 * rng.standard_normal(1600)
    train, test = slice(0, 600), slice(600, None)
    ridge = Ridge().fit(X[train], y[train]).score(X[test], y[test])
    auto = SDPQuantizedRegressor(random_state=0).fit(X[train], y[train])
    rule = auto_beta(auto.beta_max_, "squared", auto.n_lifted_features_, 600)
    assert auto.beta_ > rule
    assert auto.score(X[test], y[test]) > ridge - 0.05
    at_rule = SDPQuantizedRegressor(beta=rule, random_state=0).fit(X[train], y[train])
    assert at_rule.score(X[test], y[test]) < ridge - 0.3


def test_auto_beta_keeps_the_linear_term_alone_where_no_network_helps():
    """On few rows of a linear target under noise, "auto" takes the zero network (the
    fraction 1 of beta_max), without the warning a user's too-large beta gets."""
    from skquad.convex.relaxation import ZERO_NETWORK_WARNING

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + rng.standard_normal(40)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SDPQuantizedRegressor(100, random_state=0).fit(X, y)
    assert model.beta_ == model.beta_max_
    assert not np.any(model.alpha_)
    assert not [w for w in caught if re.match(ZERO_NETWORK_WARNING, str(w.message))]
    with pytest.warns(UserWarning, match=ZERO_NETWORK_WARNING):
        SDPQuantizedRegressor(100, beta=model.beta_max_, random_state=0).fit(X, y)
