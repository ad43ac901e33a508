"""skquad._training._sparse: sparse rows behave like the dense tensor they stand for."""

import numpy as np
import pytest
import scipy.sparse
import torch

from skquad._training import SparseRows, is_sparse_rows


def _matrix(seed=0):
    return scipy.sparse.random(23, 7, density=0.3, format="csc", random_state=seed)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_products_and_rows_match_the_dense_tensor(dtype):
    matrix = _matrix()
    rows = SparseRows(matrix, dtype=dtype)
    dense = torch.as_tensor(matrix.toarray()).to(dtype)
    assert rows.shape == dense.shape and len(rows) == 23
    W = torch.randn((7, 3), generator=torch.Generator().manual_seed(0), dtype=dtype, requires_grad=True)
    product = rows.matmul(W)
    # one sparse dot product of <= 7 terms per entry: rounding of the dtype
    tolerance = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(product, dense @ W, rtol=tolerance, atol=tolerance)
    product.sum().backward()  # differentiable in the dense factor
    torch.testing.assert_close(W.grad, dense.sum(dim=0)[:, None].expand(7, 3), rtol=tolerance, atol=tolerance)
    index = torch.tensor([5, 0, 22, 5])
    torch.testing.assert_close(torch.as_tensor(rows[index].matrix.toarray()).to(dtype), dense[index])
    torch.testing.assert_close(
        torch.as_tensor(rows.index_select(0, index).matrix.toarray()).to(dtype), dense[index]
    )
    with pytest.raises(ValueError, match="rows only"):
        rows.index_select(1, index)


def test_dense_chunks_cover_every_row_once_within_the_bound():
    matrix = _matrix(1)
    rows = SparseRows(matrix)
    chunks = list(rows.dense_chunks(max_elements=20))  # 2 rows of 7 features per chunk
    assert all(block.shape[0] * block.shape[1] <= 20 for _, _, block in chunks)
    assert [start for start, _, _ in chunks] == list(range(0, 23, 2))
    stacked = torch.cat([block for _, _, block in chunks])
    np.testing.assert_array_equal(stacked.numpy(), matrix.toarray())


def test_to_changes_dtype_and_keeps_the_rows():
    rows = SparseRows(_matrix()).to(dtype=torch.float32)
    assert rows.dtype == torch.float32 and rows.matrix.dtype == np.float32
    assert is_sparse_rows(rows) and not is_sparse_rows(torch.zeros(2, 2))
