"""The bilinear network's math (skquad/nn/bilinear.py): module, losses, curvature, quantizer."""

import numpy as np
import pytest
import torch

from skquad.convex import loss_value
from skquad.nn.bilinear import (
    BilinearModule,
    bilinear_loss,
    quantize_bilinear,
)
from skquad.nn.bilinear import (
    bilinear_curvature as _bilinear_curvature,
)


@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_torch_losses_match_the_numpy_objective(loss, n_outputs):
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((40, n_outputs)) * 2
    y = rng.choice([-1.0, 1.0], 40) if n_outputs == 1 else rng.integers(0, 3, 40)
    target = torch.as_tensor(y, dtype=torch.float64 if n_outputs == 1 else torch.int64)
    per_sample = bilinear_loss(loss, n_outputs)(torch.as_tensor(scores), target).numpy()
    np.testing.assert_allclose(per_sample.mean(), loss_value(scores, y, np.ones(40), loss, n_outputs))


def test_module_computes_the_bilinear_network():
    rng = np.random.default_rng(1)
    U, V, Z = rng.standard_normal((5, 4)), rng.standard_normal((5, 4)), rng.standard_normal((7, 4))
    A = rng.standard_normal((5, 2))
    module = BilinearModule(torch.as_tensor(U), torch.as_tensor(V), torch.as_tensor(A))
    expected = np.einsum("nj,jk->nk", (Z @ U.T) * (Z @ V.T), A)
    np.testing.assert_allclose(module(torch.as_tensor(Z)).detach().numpy(), expected)


def test_quantizer_scale_is_the_least_squares_minimiser():
    rng = np.random.default_rng(2)
    U, V = rng.standard_normal((2, 30, 5))
    output_weights = np.zeros((30, 2))
    neuron_class = np.repeat([0, 1], 15)
    output_weights[np.arange(30), neuron_class] = 1 / 15
    U_sign, V_sign, alpha, scale = quantize_bilinear(U, V, output_weights, neuron_class)
    for k in range(2):
        rows = neuron_class == k
        signs = (U_sign[rows].T.astype(float) @ V_sign[rows]).ravel()
        real = (U[rows].T @ V[rows] / 15).ravel()
        best = np.linalg.lstsq(signs[:, None], real, rcond=None)[0][0]
        assert scale[k] == pytest.approx(best, rel=1e-10)
        np.testing.assert_allclose(alpha[rows, k], best)
        np.testing.assert_allclose(alpha[~rows, k], 0.0)


def test_curvature_matches_the_dense_kernel_eigenvalue():
    rng = np.random.default_rng(0)
    Z = np.hstack([rng.standard_normal((60, 5)) * [1, 1, 2, 3, 0.5], np.ones((60, 1))])
    weight = rng.uniform(0.5, 2.0, 60)
    normalized = weight / weight.sum()
    kernel = (Z @ Z.T) ** 2 / Z.shape[1]
    dense = np.linalg.eigvalsh(np.sqrt(normalized)[:, None] * kernel * np.sqrt(normalized)[None, :])[-1]
    # A batch holding everything: the full-data eigenvalue dominates.
    np.testing.assert_allclose(_bilinear_curvature(Z, weight, 60, n_power_iterations=200), dense, rtol=1e-6)
    # One huge sample in a batch of 1: its ||z||^4 / p term dominates.
    Z[0] *= 30
    assert _bilinear_curvature(Z, weight, 1) == pytest.approx(np.sum(Z[0] ** 2) ** 2 / Z.shape[1])
