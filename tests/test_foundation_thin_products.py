"""skquad._foundation._thin_products: products with a few columns, against numpy's own."""

import numpy as np
import pytest

from skquad._foundation._thin_products import ThinProducts


@pytest.mark.parametrize("columns", [1, 3, 10])
def test_products_match_numpy(columns):
    rng = np.random.RandomState(0)
    H = rng.randn(300, 200)
    a, g = rng.randn(200, columns), rng.randn(300, columns)
    wrapped = ThinProducts(H)
    assert wrapped.shape == (300, 200) and wrapped.T.shape == (200, 300)
    # Both sides sum the same products in another order: each result is within
    # (terms) * eps * sum |terms| of the other.
    eps = np.finfo(np.float64).eps
    assert np.all(np.abs(wrapped @ a - H @ a) <= 200 * eps * (np.abs(H) @ np.abs(a)))
    assert np.all(np.abs(wrapped.T @ g - H.T @ g) <= 300 * eps * (np.abs(H).T @ np.abs(g)))
    assert (wrapped @ a).shape == (300, columns) and (wrapped.T @ g).shape == (200, columns)
    # vectors are matrix-vector products, as numpy's
    np.testing.assert_array_equal(wrapped @ a[:, 0], H @ a[:, 0])
    np.testing.assert_array_equal(wrapped.T @ g[:, 0], H.T @ g[:, 0])


@pytest.mark.parametrize("columns", [1, 4])
def test_factored_products_match_numpy(columns):
    rng = np.random.RandomState(1)
    left, right = rng.randn(250, 30), rng.randn(30, 120)
    H = left @ right
    a, g = rng.randn(120, columns), rng.randn(250, columns)
    wrapped = ThinProducts(left, right)
    assert wrapped.shape == (250, 120) and wrapped.T.shape == (120, 250)
    # (left right) a against left (right a): sums of 30 * 120 products in another grouping
    eps = np.finfo(np.float64).eps
    bound = 150 * eps * (np.abs(left) @ (np.abs(right) @ np.abs(a)))
    assert np.all(np.abs(wrapped @ a - H @ a) <= bound)
    bound = 400 * eps * (np.abs(right).T @ (np.abs(left).T @ np.abs(g)))
    assert np.all(np.abs(wrapped.T @ g - H.T @ g) <= bound)
    assert (wrapped @ a).shape == (250, columns) and (wrapped.T @ g).shape == (120, columns)
    np.testing.assert_allclose(wrapped @ a[:, 0], left @ (right @ a[:, 0]), rtol=1e-13)
    np.testing.assert_allclose(wrapped.T @ g[:, 0], right.T @ (left.T @ g[:, 0]), rtol=1e-13)
