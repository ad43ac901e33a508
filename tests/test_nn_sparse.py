"""Tests of skquad.nn.sparse: sparse batches for the networks' first layer."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from skquad.nn.sparse import SparseRowsInput, row_numbers, sparse_to_torch


@pytest.fixture
def matrix():
    return sp.random(40, 7, density=0.2, format="csr", random_state=0)


@pytest.mark.parametrize("densify", [False, True])
def test_sparse_to_torch_holds_the_same_numbers(matrix, densify):
    tensor = sparse_to_torch(matrix, dtype=torch.float64, device=torch.device("cpu"), densify=densify)
    assert tensor.is_sparse != densify
    np.testing.assert_array_equal(tensor.to_dense().numpy(), matrix.toarray())


def test_linear_on_a_sparse_batch_matches_dense_with_gradients(matrix, thread_counts):
    linear = torch.nn.Linear(7, 3, dtype=torch.float64)
    sparse_batch = sparse_to_torch(matrix, dtype=torch.float64, device=torch.device("cpu"))
    linear(sparse_batch).square().sum().backward()
    sparse_gradient = linear.weight.grad.clone()
    linear.weight.grad = None
    dense = torch.as_tensor(matrix.toarray())
    linear(dense).square().sum().backward()
    torch.testing.assert_close(sparse_gradient, linear.weight.grad)


def test_input_stage_turns_row_numbers_into_rows(matrix):
    stage = SparseRowsInput()
    rows = torch.as_tensor(stage.use(matrix, torch.float32)).float()  # as the engine converts it
    assert rows.shape == (40, 1)
    batch = stage(rows[[3, 17, 5]])
    np.testing.assert_array_equal(batch.to_dense().numpy(), matrix[[3, 17, 5]].toarray().astype(np.float32))
    dense = np.ones((2, 7))
    assert stage.use(dense) is dense and stage.matrix is None  # the identity on dense data
    assert stage(torch.ones(2, 7)).shape == (2, 7)


def test_too_many_rows_for_float32_row_numbers_is_refused():
    with pytest.raises(ValueError, match="dtype='float64'"):
        row_numbers(2**24 + 1, torch.float32)
    assert row_numbers(3, torch.float64).ravel().tolist() == [0, 1, 2]


def test_unsorted_and_duplicate_entries_are_summed():
    # a CSR matrix in non-canonical form: unsorted column indices, a duplicate
    matrix = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 3))
    tensor = sparse_to_torch(matrix, dtype=torch.float64, device=torch.device("cpu"))
    np.testing.assert_array_equal(tensor.to_dense().numpy(), [[2.0, 0.0, 4.0]])
