"""skquad.quantized._common: the rules the quantized estimators share."""

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from skquad import BackpropQuantizedClassifier, SDPQuantizedClassifier

from skquad.convex import InputLifting, bilinear_network_scores
from skquad.quantized import _common
from skquad.quantized._common import (
    _batched_network_scores,
    _check_activation,
    _check_solver,
    _class_targets,
    _neurons_per_output,
    _standardization,
)


def test_activation_is_bilinear_or_three_finite_coefficients():
    assert _check_activation("bilinear") == "bilinear"
    assert _check_activation([1, 0.5, "2"]) == (1.0, 0.5, 2.0)
    for bad in [(1.0, 2.0), (1.0, np.nan, 0.0), None, (1, 2, 3, 4), ("a", 1, 2)]:
        with pytest.raises(ValueError, match="activation must be 'bilinear' or a tuple"):
            _check_activation(bad)
    with pytest.raises(ValueError, match="is constant"):
        _check_activation((0.0, 0.0, 1.0))


def test_solver_names_are_case_insensitive_and_checked():
    assert _check_solver("clarabel", "logistic", 4, 1) == "CLARABEL"
    with pytest.raises(ValueError, match="solver='NOPE' is not an installed CVXPY solver"):
        _check_solver("NOPE", "logistic", 4, 1)


@pytest.mark.parametrize("n_neurons, n_outputs", [(10, 3), (3, 3), (1000, 7), (5, 1)])
def test_neurons_are_split_as_evenly_as_possible(n_neurons, n_outputs):
    counts = _neurons_per_output(n_neurons, n_outputs)
    assert counts.sum() == n_neurons and len(counts) == n_outputs
    assert counts.max() - counts.min() <= 1


def test_fewer_neurons_than_classes_is_refused():
    with pytest.raises(ValueError, match="n_neurons=2 is smaller than the number of classes"):
        _neurons_per_output(2, 3)


def test_standardization_matches_standard_scaler_and_scales_with_the_data():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((50, 4)) * [1.0, 10.0, 1e-3, 0.0] + [0.0, 5.0, 1.0, 3.0]
    mean, scale = _standardization(X, np.ones(50))
    scaler = StandardScaler().fit(X)  # the same rule for constant columns: scale 1
    np.testing.assert_allclose(mean, scaler.mean_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(scale, scaler.scale_, rtol=1e-12)
    # relative to each column's magnitude: extreme scales give the same result, scaled
    for factor in (1e-150, 1e150):
        tiny_mean, tiny_scale = _standardization(X * factor, np.ones(50))
        np.testing.assert_allclose(tiny_mean, mean * factor, rtol=1e-12)
        np.testing.assert_allclose(tiny_scale[:3], scale[:3] * factor, rtol=1e-12)
        assert tiny_scale[3] == 1.0


def test_weighted_standardization_equals_repeated_rows():
    rng = np.random.RandomState(1)
    X = rng.standard_normal((10, 3))
    weight = rng.randint(1, 4, size=10)
    repeated = _standardization(np.repeat(X, weight, axis=0), np.ones(weight.sum()))
    weighted = _standardization(X, weight.astype(float))
    for a, b in zip(weighted, repeated):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_class_targets():
    np.testing.assert_array_equal(_class_targets(np.array([0, 1, 1]), 1), [-1.0, 1.0, 1.0])
    np.testing.assert_array_equal(_class_targets(np.array([2, 0]), 3), [2, 0])


def test_batched_scores_equal_the_one_shot_scores(monkeypatch):
    rng = np.random.RandomState(2)
    X = rng.standard_normal((37, 3))
    lifting = InputLifting()
    U, V = np.sign(rng.standard_normal((2, 5, 4)))
    alpha = rng.standard_normal((5, 2))
    monkeypatch.setattr(_common, "PREDICT_BATCH_BYTES", 3 * 8 * 5 * 4)  # batches of 4 rows
    np.testing.assert_allclose(
        _batched_network_scores(lifting, X, U, V, alpha),
        bilinear_network_scores(lifting, X, U, V, alpha), rtol=1e-13, atol=1e-13,
    )


def masking_classes():
    """Five classes in intervals of one feature: one score per class fitted to one-hot (or ±1)
    targets never ranks the second class first, as ``PolynomialFeatures(2)`` +
    ``RidgeClassifier`` does not (the masking of least-squares classifiers)."""
    X = np.random.default_rng(0).uniform(-1, 1, (400, 1))
    return X, np.digitize(X[:, 0], [-0.6, -0.2, 0.2, 0.6])


@pytest.mark.parametrize("estimator", [SDPQuantizedClassifier, BackpropQuantizedClassifier])
def test_auto_refit_chooses_the_logistic_layer_where_the_squared_one_masks_a_class(estimator):
    X, y = masking_classes()
    common = dict(n_neurons=200, random_state=0)
    squared = estimator(refit_output_layer=True, **common).fit(X, y)
    auto = estimator(**common).fit(X, y)
    assert set(squared.predict(X)) != set(range(5)) and squared.score(X, y) < 0.8
    assert (squared.refit_loss_, auto.refit_loss_) == ("squared", "logistic")
    assert set(auto.predict(X)) == set(range(5)) and auto.score(X, y) > 0.95
    np.testing.assert_array_equal(auto.U_, squared.U_)  # the same binary first layer
    logistic = estimator(refit_output_layer="logistic", **common).fit(X, y)
    np.testing.assert_array_equal(logistic.alpha_, auto.alpha_)
