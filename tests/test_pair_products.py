"""The pair products of skquad._foundation._pair_products against PolynomialFeatures(2)."""

import numpy as np
from sklearn.preprocessing import PolynomialFeatures

from skquad._foundation._pair_products import write_pair_products


def test_pair_products_are_polynomial_features_degree_two_order():
    X = np.random.default_rng(0).standard_normal((7, 4))
    expected = PolynomialFeatures(2, include_bias=False).fit_transform(X)[:, 4:]
    rows_out = np.empty((7, 10))
    write_pair_products(X.T, rows_out.T)  # transposed views of (n, d) and (n, D) arrays
    np.testing.assert_array_equal(rows_out, expected)
    columns_out = write_pair_products(np.ascontiguousarray(X.T), np.empty((10, 7)))
    np.testing.assert_array_equal(columns_out, expected.T)


def test_pair_products_of_given_pairs_only():
    X = np.random.default_rng(1).standard_normal((5, 4))
    rows, cols = np.array([0, 0, 2, 3]), np.array([1, 3, 2, 3])  # row-major, rows <= cols
    out = write_pair_products(X.T, np.empty((4, 5)), (rows, cols))
    np.testing.assert_array_equal(out, (X[:, rows] * X[:, cols]).T)
