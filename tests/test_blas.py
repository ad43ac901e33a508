"""skquad._foundation._blas: TRMM and SYRK through scipy's Cython BLAS pointers, against numpy."""

import numpy as np
import pytest

from skquad._foundation._blas import gram_update, upper_product_in_place


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_triangular_product_and_gram_match_numpy(dtype):
    rng = np.random.RandomState(0)
    X = rng.randn(50, 7).astype(dtype)
    U = rng.randn(7, 7).astype(dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    # a block of rows inside a larger array (the engine's chunks are such views)
    rows = X.copy()[11:40]
    expected = rows @ np.triu(U)  # the lower triangle of U is not read
    assert upper_product_in_place(U, rows) is rows
    np.testing.assert_allclose(rows, expected, rtol=rtol, atol=rtol)

    out = np.tril(rng.randn(7, 7)).astype(dtype)  # its strict lower triangle stays
    before = out.copy()
    gram_update(out, X[3:20], 2.0)
    gram_update(out, X[20:], -1.0)
    gram_update(out, X[:0])  # no rows: nothing
    expected = before + 2.0 * X[3:20].T @ X[3:20] - X[20:].T @ X[20:]
    upper = np.triu_indices(7)
    np.testing.assert_allclose(out[upper], expected[upper], rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(np.tril(out, -1), np.tril(before, -1))


def test_refuses_rows_it_cannot_pass_to_the_blas():
    U = np.eye(4)
    with pytest.raises(ValueError, match="rows"):
        upper_product_in_place(U, np.ones((5, 8))[:, ::2])  # strided columns
    with pytest.raises(ValueError, match="upper"):
        upper_product_in_place(U.astype(np.float32), np.ones((5, 4)))
    with pytest.raises(ValueError, match="rows"):
        upper_product_in_place(U, np.ones((1, 8))[:, ::2])  # one row, strided columns
    with pytest.raises(ValueError, match="rows"):
        gram_update(np.zeros((4, 4)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="rows"):
        gram_update(np.zeros((4, 4)), np.ones((5, 4), dtype=np.int64))
