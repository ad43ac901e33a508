"""skquad.convex.problem: targets and the lifted products without the lifted matrices."""

import numpy as np
import pytest
import torch

from skquad.convex import InputLifting, LiftedData, loss_value
from skquad.convex.problem import encode_targets

LIFTINGS = {
    "bilinear": InputLifting(),
    "polynomial": InputLifting(activation=(0.5, 0.7, -0.2)),
    "replicas": InputLifting(levels=2),
}


def test_encode_targets_keeps_one_output_and_one_hot_encodes_classes():
    np.testing.assert_array_equal(encode_targets(np.array([1, -1, 1]), 1), [[1.0], [-1.0], [1.0]])
    np.testing.assert_array_equal(encode_targets(np.array([2, 0]), 3), [[0, 0, 1], [1, 0, 0]])
    real = np.array([[0.5, 1.5], [2.0, -1.0]])
    np.testing.assert_array_equal(encode_targets(real, 2), real)
    with pytest.raises(ValueError, match="2 columns for 3 outputs"):
        encode_targets(real, 3)


def _pair(lifting, seed=0, n=12, d=3):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = np.where(rng.standard_normal(n) > 0, 1.0, -1.0)
    weight = rng.uniform(0.5, 2.0, n)
    kwargs = dict(loss="logistic", beta=1e-2, n_outputs=1)
    features = LiftedData.from_lifting(lifting, X, y, weight, **kwargs)
    explicit = LiftedData.from_lifted_matrices(lifting.matrices(X), y, weight, **kwargs)
    return X, y, weight, features, explicit


@pytest.mark.parametrize("name", list(LIFTINGS))
def test_feature_products_equal_the_explicit_lifted_matrices(name):
    lifting = LIFTINGS[name]
    X, _, _, features, explicit = _pair(lifting)
    p = lifting.n_lifted(X.shape[1])
    assert features.n_lifted == explicit.n_lifted == p
    generator = torch.Generator().manual_seed(1)
    A = torch.randn((p, p), generator=generator, dtype=torch.float64)
    coefficients = torch.randn(X.shape[0], generator=generator, dtype=torch.float64)
    # Both are sums of a few dozen float64 products: equal to rounding.
    torch.testing.assert_close(features.matrix_inner(A), explicit.matrix_inner(A), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(
        features.weighted_matrix(coefficients), explicit.weighted_matrix(coefficients), rtol=1e-12, atol=1e-12
    )
    F = torch.randn((p, 4), generator=generator, dtype=torch.float64)
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    torch.testing.assert_close(
        features.factor_inner(F, signs), explicit.matrix_inner((F * signs) @ F.T), rtol=1e-12, atol=1e-12
    )


def test_weights_are_normalised_and_the_objective_matches_numpy():
    X, y, weight, data, _ = _pair(LIFTINGS["bilinear"])
    torch.testing.assert_close(data.weight.sum(), torch.tensor(1.0, dtype=torch.float64))
    scores = np.random.RandomState(3).standard_normal((len(y), 1))
    rho_sum = 0.7
    expected = loss_value(scores, y, weight / weight.sum(), "logistic") + 2 * 1e-2 * data.n_lifted * rho_sum
    got = float(data.objective(torch.as_tensor(scores), rho_sum))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_rho_max_is_the_zero_networks_value_over_the_penalty():
    _, y, _, data, _ = _pair(LIFTINGS["bilinear"])
    # l(0) = log 2 for every sample of the logistic loss, weights sum to one
    np.testing.assert_allclose(data.zero_network_value(), np.log(2.0), rtol=1e-14)
    np.testing.assert_allclose(data.rho_max(), np.log(2.0) / data.penalty_per_rho, rtol=1e-14)
    free = LiftedData.from_arrays(np.ones((3, 2)), np.ones(3), np.ones(3), loss="squared", beta=0.0, n_outputs=1)
    assert free.rho_max() == float("inf")
