"""Sparse input for the networks: batches of a CSR matrix without densifying it.

The training engine shuffles, batches and splits dense tensors. To train on a
scipy CSR/CSC matrix (e.g. a ``OneHotEncoder``'s output) without densifying it,
the engine is handed the column of row numbers instead, and
:class:`SparseRowsInput`, the first stage of the trained module, turns each
batch of row numbers back into those rows, as a torch sparse COO tensor. The
first layer's product then runs on the sparse rows (``torch.addmm`` and
``torch.nn.functional.linear`` accept a sparse first operand, gradients
included). A quadratic first layer needs every pair of features, so for it
the stage densifies the batch only; so it does for a batch whose dense form is
the faster one (:func:`dense_is_faster`).

:func:`first_layer_batch` converts one batch or chunk of rows by that rule, in training
and prediction alike.
"""

import numpy as np
import torch
from scipy import sparse
from torch import nn

__all__ = ["SparseRowsInput", "dense_is_faster", "first_layer_batch", "row_numbers", "sparse_to_torch"]

# float32 represents every integer exactly only up to 2**24.
_EXACT_ROWS = {torch.float32: 2**24, torch.float64: 2**53}

# Rule: a batch of sparse rows reaches the first layer dense when at least 5 % of its entries
# are stored and its dense form holds at most 2**22 numbers. Why: from 5 % on, a network's
# dense step (the fused numpy step on the CPU) is no slower than torch's sparse product, and
# below it the sparse product is the faster (figures in the CHANGELOG). The cap bounds one
# batch's dense copy (32 MB in float64), whatever the size of the data.
DENSE_FROM_DENSITY = 0.05
DENSE_MAX_NUMBERS = 2**22


def dense_is_faster(matrix):
    """Whether the rows of the scipy sparse ``matrix`` go to the first layer dense (the rule
    above).

    Parameters
    ----------
    matrix : scipy sparse matrix of shape (n_rows, n_features)

    Returns
    -------
    dense : bool
    """
    numbers = matrix.shape[0] * matrix.shape[1]
    return 0 < numbers <= DENSE_MAX_NUMBERS and matrix.nnz >= DENSE_FROM_DENSITY * numbers


def first_layer_batch(matrix, *, dtype, device, dense_layer):
    """Sparse rows as the first layer takes them: dense for a layer that needs every pair of
    features (``dense_layer``) or where :func:`dense_is_faster`, else a sparse COO tensor.

    Parameters
    ----------
    matrix : scipy sparse matrix of shape (n_rows, n_features)
    dtype : torch.dtype
    device : torch.device
    dense_layer : bool

    Returns
    -------
    tensor : torch.Tensor of shape (n_rows, n_features)
    """
    return sparse_to_torch(matrix, dtype=dtype, device=device,
                           densify=dense_layer or dense_is_faster(matrix))


def sparse_to_torch(matrix, *, dtype, device, densify=False):
    """A scipy sparse matrix as a torch sparse COO tensor (or dense with ``densify``).

    Parameters
    ----------
    matrix : scipy sparse matrix of shape (n_rows, n_features)
    dtype : torch.dtype
    device : torch.device
    densify : bool, default=False

    Returns
    -------
    tensor : torch.Tensor of shape (n_rows, n_features)
    """
    if densify:
        return torch.as_tensor(matrix.toarray()).to(device=device, dtype=dtype)
    coo = matrix.tocoo()
    coo.sum_duplicates()  # sorted, unique indices: a coalesced tensor, valid by construction
    indices = torch.as_tensor(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.as_tensor(coo.data)
    tensor = torch.sparse_coo_tensor(indices, values, coo.shape, is_coalesced=True, check_invariants=False)
    return tensor.to(device=device, dtype=dtype)


def row_numbers(n_rows, dtype):
    """The ``(n_rows, 1)`` column of row numbers the engine batches instead of the data.

    Parameters
    ----------
    n_rows : int
    dtype : torch.dtype
        The training dtype (the engine converts its input to it).

    Returns
    -------
    rows : ndarray of shape (n_rows, 1)
    """
    if n_rows > _EXACT_ROWS[dtype]:
        raise ValueError(
            f"Sparse input with {n_rows} rows cannot be trained in {dtype} (row numbers are "
            "exact only up to 2**24 in float32); pass dtype='float64'."
        )
    return np.arange(n_rows, dtype=np.float64)[:, None]


class SparseRowsInput(nn.Module):
    """First stage of a network trained on sparse data; the identity on dense data.

    Parameters
    ----------
    densify : bool, default=False
        Hand the first layer dense batches (for a quadratic first layer); else only those
        that :func:`dense_is_faster` names.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix or None
        The data whose rows the batches name; None passes input through.
    """

    def __init__(self, densify=False):
        super().__init__()
        self.densify = densify
        self.matrix = None
        self._last = None  # (rows, tensor) of the last batch: see forward

    def use(self, X, dtype=torch.float64):
        """Set the data of the next training call; returns what the engine should batch.

        Parameters
        ----------
        X : ndarray or scipy sparse matrix, or None to release the data
        dtype : torch.dtype, default=torch.float64
            The training dtype (row numbers must be exact in it).

        Returns
        -------
        X_engine : ndarray
            ``X`` itself when dense, else its row numbers.
        """
        self._last = None
        if X is None or not sparse.issparse(X):
            self.matrix = None
            return X
        self.matrix = X.tocsr()
        return row_numbers(X.shape[0], dtype)

    def forward(self, x):
        if self.matrix is None:
            return x
        rows = x[:, 0].to(torch.int64).cpu().numpy()
        # Full-batch L-BFGS asks for the same rows at every evaluation: their tensor is
        # made once (slicing and converting them cost as much as the layer's product).
        # The network never writes into its input, so the tensor can be handed out again.
        last = self._last
        if last is not None and np.array_equal(last[0], rows) \
                and (last[1].dtype, last[1].device) == (x.dtype, x.device):
            return last[1]
        tensor = first_layer_batch(self.matrix[rows], dtype=x.dtype, device=x.device,
                                   dense_layer=self.densify)
        self._last = (rows, tensor)
        return tensor

    def __getstate__(self):
        # the cached batch is training state, not part of the module
        return {**super().__getstate__(), "_last": None}
