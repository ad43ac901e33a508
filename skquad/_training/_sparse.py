"""Sparse training data (CSR/CSC) for the training engine, without densifying it.

:class:`SparseRows` holds a scipy CSR matrix and offers what the
:class:`~skquad._training.Trainer` and the models need from a data tensor:
its shape, row selection (shuffling, mini-batches, the validation split),
products with dense tensors (``X @ W`` for a first layer or low-rank factors)
and dense row chunks of bounded size for products that need dense rows (the
quadratic form ``x^T Q x`` and the Gram gradient ``X^T diag(r) X``). Only a
chunk of rows is ever dense at a time.
"""

import warnings

import numpy as np
import scipy.sparse
import torch

__all__ = ["SparseRows", "is_sparse_rows"]

# Dense elements per chunk: 2**21 float64 values = 16 MiB.
_CHUNK_ELEMENTS = 1 << 21


def is_sparse_rows(X):
    """True for a :class:`SparseRows` (duck-typed, so the math needs no import)."""
    return hasattr(X, "dense_chunks")


class SparseRows:
    """Rows of a sparse matrix on a torch device, in a torch dtype.

    Parameters
    ----------
    matrix : scipy sparse matrix or array of shape (n_samples, n_features)
    device : str or torch.device, default="cpu"
    dtype : torch.dtype, default=torch.float64
    """

    def __init__(self, matrix, device="cpu", dtype=torch.float64):
        numpy_dtype = np.float64 if dtype == torch.float64 else np.float32
        self.matrix = scipy.sparse.csr_matrix(matrix, dtype=numpy_dtype)
        self.device = torch.device(device)
        self.dtype = dtype
        self._torch_csr = None

    @property
    def shape(self):
        return torch.Size(self.matrix.shape)

    def __len__(self):
        return self.matrix.shape[0]

    def to(self, device=None, dtype=None):
        return SparseRows(
            self.matrix,
            self.device if device is None else device,
            self.dtype if dtype is None else dtype,
        )

    def _rows(self, rows):
        return SparseRows(self.matrix[rows], self.device, self.dtype)

    def index_select(self, dim, index):
        if dim != 0:
            raise ValueError("SparseRows selects rows only (dim=0).")
        return self._rows(torch.as_tensor(index).cpu().numpy())

    def __getitem__(self, rows):
        if isinstance(rows, torch.Tensor):
            rows = rows.cpu().numpy()
        return self._rows(rows)

    def torch_csr(self):
        """The matrix as a torch sparse CSR tensor on the device (cached)."""
        if self._torch_csr is None:
            matrix = self.matrix
            with warnings.catch_warnings():
                # torch's notice that CSR support is "beta" concerns torch, not the user
                warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
                self._torch_csr = torch.sparse_csr_tensor(
                    torch.as_tensor(matrix.indptr, dtype=torch.int64),
                    torch.as_tensor(matrix.indices, dtype=torch.int64),
                    torch.as_tensor(matrix.data),
                    size=matrix.shape,
                    check_invariants=False,  # built by scipy: valid by construction
                ).to(device=self.device, dtype=self.dtype)
        return self._torch_csr

    def matmul(self, dense):
        """``X @ dense`` (dense result; differentiable with respect to ``dense``)."""
        return torch.sparse.mm(self.torch_csr(), dense)

    def dense_chunks(self, max_elements=_CHUNK_ELEMENTS):
        """Yield ``(start, stop, rows)``: dense row blocks of bounded size."""
        n_samples, n_features = self.matrix.shape
        chunk = max(1, max_elements // max(1, n_features))
        for start in range(0, n_samples, chunk):
            stop = min(start + chunk, n_samples)
            block = self.matrix[start:stop].toarray()
            yield start, stop, torch.as_tensor(block).to(device=self.device, dtype=self.dtype)
