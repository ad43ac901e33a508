"""skquad.nn.polarization: (Q, w, b) read off quadratic functions and layer states."""

import numpy as np
import pytest
import torch

from skquad.nn.layers import layer_to_numpy_state, new_layer
from skquad.nn.polarization import layer_quadratic_forms, quadratic_form_by_polarization


def _random_quadratics(rng, k, d):
    A = rng.standard_normal((k, d, d))
    return 0.5 * (A + A.transpose(0, 2, 1)), rng.standard_normal((k, d)), rng.standard_normal(k)


def _evaluate(Q, w, b, X):
    return np.einsum("ni,kij,nj->nk", X, Q, X) + X @ w.T + b


@pytest.mark.parametrize("centered", [False, True])
def test_polarization_recovers_known_quadratics(centered):
    rng = np.random.default_rng(0)
    Q, w, b = _random_quadratics(rng, 3, 5)
    center = rng.standard_normal(5) * 10 if centered else None
    scale = rng.uniform(0.5, 20.0, 5) if centered else None
    got_Q, got_w, got_b = quadratic_form_by_polarization(
        lambda X: _evaluate(Q, w, b, X), 5, center=center, scale=scale
    )
    # Exact up to rounding: second differences of O(1)..O(400) values in
    # float64 lose a few digits at most, far above 1e-6 relative.
    np.testing.assert_allclose(got_Q, Q, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got_w, w, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got_b, b, rtol=0, atol=1e-6)


def test_polarization_handles_more_points_than_one_chunk(monkeypatch):
    import skquad.nn.polarization as polarization

    monkeypatch.setattr(polarization, "_POLARIZATION_CHUNK", 7)  # many chunks for d=6 (28 points)
    rng = np.random.default_rng(1)
    Q, w, b = _random_quadratics(rng, 1, 6)
    got_Q, got_w, got_b = quadratic_form_by_polarization(lambda X: _evaluate(Q, w, b, X)[:, 0], 6)
    np.testing.assert_allclose(got_Q[0], Q[0], atol=1e-9)
    np.testing.assert_allclose(got_w[0], w[0], atol=1e-9)
    np.testing.assert_allclose(got_b, b, atol=1e-9)


def test_polarization_refuses_a_function_that_is_not_quadratic():
    with pytest.raises(ValueError, match="not a quadratic function"):
        quadratic_form_by_polarization(lambda X: (X**3).sum(axis=1), 3)


@pytest.mark.parametrize(
    "kind, options",
    [
        ("QuadraticLayer", {}),
        ("ReducedQuadraticLayer", {}),
        ("ReducedQuadraticLayer", {"power_term": True}),
    ],
)
def test_layer_quadratic_forms_reproduce_the_layer(kind, options):
    generator = torch.Generator().manual_seed(0)
    layer = new_layer(kind, 4, 3, generator=generator, relinear=False, dtype=torch.float64, **options)
    Q, w, b = layer_quadratic_forms(layer_to_numpy_state(layer))
    assert Q.shape == (3, 4, 4) and w.shape == (3, 4) and b.shape == (3,)
    np.testing.assert_array_equal(Q, Q.transpose(0, 2, 1))
    X = np.random.default_rng(2).standard_normal((20, 4))
    with torch.no_grad():
        expected = layer(torch.as_tensor(X)).numpy()
    # float64 forward against float64 polarization: agreement to rounding.
    np.testing.assert_allclose(_evaluate(Q, w, b, X), expected, rtol=1e-9, atol=1e-9)
