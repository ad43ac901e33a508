"""Tests of skquad.nn.sparse: sparse batches for the networks' first layer."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning

from skquad.nn.sparse import SparseRowsInput, dense_is_faster, row_numbers, sparse_to_torch


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


def test_input_stage_converts_repeated_rows_once_and_forgets_them_with_the_data(matrix, monkeypatch):
    """Full-batch L-BFGS asks for the same rows at every evaluation: converted once."""
    from skquad.nn import sparse as sparse_module

    calls = []
    convert = sparse_module.sparse_to_torch
    monkeypatch.setattr(sparse_module, "sparse_to_torch", lambda *a, **k: calls.append(1) or convert(*a, **k))
    stage = SparseRowsInput()
    rows = torch.as_tensor(stage.use(matrix, torch.float64))
    first, again = stage(rows), stage(rows.clone())
    assert again is first and len(calls) == 1
    batch = stage(rows[[3, 17, 5]])  # other rows: converted
    np.testing.assert_array_equal(batch.to_dense().numpy(), matrix[[3, 17, 5]].toarray())
    assert stage(rows.float()).dtype == torch.float32 and len(calls) == 3  # another dtype too
    assert pickle.loads(pickle.dumps(stage))._last is None  # not part of the module's state
    other = sp.random(40, 7, density=0.5, format="csr", random_state=1)
    stage.use(other, torch.float64)  # new data, the same row numbers: its own rows
    np.testing.assert_array_equal(stage(rows).to_dense().numpy(), other.toarray())
    stage.use(None)
    assert stage._last is None and stage.matrix is None


def test_sparse_lbfgs_fit_converts_the_data_once_per_fit(monkeypatch):
    from skquad import QNNRegressor
    from skquad.nn import sparse as sparse_module

    rng = np.random.RandomState(0)
    X = sp.random(60, 8, density=0.3, format="csr", random_state=0)
    y = X @ rng.standard_normal(8)
    calls = []
    convert = sparse_module.sparse_to_torch
    monkeypatch.setattr(sparse_module, "sparse_to_torch", lambda *a, **k: calls.append(1) or convert(*a, **k))
    with pytest.warns(ConvergenceWarning, match="lbfgs failed to converge"):
        model = QNNRegressor((5,), solver="lbfgs", alpha=1.0, max_iter=30, random_state=0).fit(X, y)
    assert model.n_iter_ == 30 and len(calls) == 1  # every evaluation read the same rows
    assert model.predict(X).shape == (60,)


def test_dense_is_faster_from_five_percent_of_the_entries_up_to_the_cap():
    def stored(rows, columns, nnz):
        data = np.ones(nnz)
        return sp.csr_matrix((data, (np.arange(nnz) % rows, np.arange(nnz) // rows)),
                             shape=(rows, columns))

    assert dense_is_faster(stored(100, 20, 100))  # 5 % of 2,000 entries
    assert not dense_is_faster(stored(100, 20, 99))
    assert not dense_is_faster(stored(1, 2**22 + 1, 2**21))  # half stored, over the cap
    assert dense_is_faster(stored(1, 2**22, 2**21))
    assert not dense_is_faster(sp.csr_matrix((0, 5)))


@pytest.mark.parametrize("density, dense", [(0.3, True), (0.01, False)])
def test_input_stage_hands_dense_batches_where_they_are_faster(density, dense):
    matrix = sp.random(40, 600, density=density, format="csr", random_state=0)
    stage = SparseRowsInput()
    rows = torch.as_tensor(stage.use(matrix, torch.float64))
    batch = stage(rows[:20])
    assert batch.is_sparse != dense
    np.testing.assert_array_equal(batch.to_dense().numpy(), matrix[:20].toarray())


@pytest.mark.parametrize("density", [0.3, 0.01])
def test_a_network_on_sparse_rows_fits_and_predicts_as_on_dense_rows(density, monkeypatch):
    """Both of the first layer's paths, the sparse product (1 % stored) and the dense batch
    (30 %), train and predict the dense data's model."""
    from skquad import QNNRegressor
    from skquad.nn import sparse as sparse_module

    rng = np.random.RandomState(0)
    X = sp.random(80, 120, density=density, format="csr", random_state=0)
    y = X @ rng.standard_normal(120) + 0.1 * rng.standard_normal(80)
    sparse_batches = []
    convert = sparse_module.sparse_to_torch
    monkeypatch.setattr(sparse_module, "sparse_to_torch",
                        lambda *a, **k: sparse_batches.append(not k["densify"]) or convert(*a, **k))
    params = dict(hidden_layer_sizes=(6,), solver="lbfgs", alpha=1.0, max_iter=15, random_state=0)
    with pytest.warns(ConvergenceWarning):
        on_sparse = QNNRegressor(**params).fit(X, y)
        on_dense = QNNRegressor(**params).fit(X.toarray(), y)
    assert set(sparse_batches) == {density < 0.05}
    np.testing.assert_allclose(on_sparse.predict(X), on_dense.predict(X.toarray()), rtol=1e-9, atol=1e-9)
