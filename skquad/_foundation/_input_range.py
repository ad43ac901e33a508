"""The training range of each input feature, and inputs clipped to it (``clip_inputs``).

A quadratic model grows as the square of an input outside the range it was
trained on. Clipping every feature to its training range at predict time
bounds that growth and changes no prediction on the training rows (each lies
inside the range), so the training optimum and every exactness promise on the
training data hold as they are. The range is the ``data_min_``/``data_max_``
of :class:`~sklearn.preprocessing.MinMaxScaler`, over the rows with a
positive sample weight (a zero weight removes a row from the fit, so it
must not widen the range either). For sparse input the range counts the
implicit zeros, and clipping changes the stored values only: an implicit zero
stays zero, which lies inside the range of any column that had an implicit
zero in training.

One implementation: the estimators' validation (:mod:`skquad._base`), the
Dask fits (:mod:`skquad._dask`, block by block) and the networks' early
stopping split (:mod:`skquad._training`) all use these functions.
"""

import sys

import numpy as np
from scipy import sparse

__all__ = ["clip_rows", "clip_to_range", "feature_range", "merge_ranges"]


def feature_range(X, sample_weight=None):
    """``(data_min, data_max)``, float64 of shape ``(n_features,)``, over the rows of positive weight.

    ``X`` is a validated 2-D array or CSR/CSC matrix (implicit zeros count).
    With no row of positive weight the range is empty: ``(+inf, -inf)``
    per feature, the identity of :func:`merge_ranges`.
    """
    if sample_weight is not None:
        positive = np.asarray(sample_weight) > 0
        if not positive.all():
            X = X[positive]
    if X.shape[0] == 0:
        return np.full(X.shape[1], np.inf), np.full(X.shape[1], -np.inf)
    if hasattr(X, "amin"):  # a torch tensor, on its device: the d-vectors come to NumPy
        return tuple(bound.double().cpu().numpy() for bound in _column_extremes(X))
    if sparse.issparse(X):
        low, high = X.min(axis=0).toarray(), X.max(axis=0).toarray()
    else:
        low, high = _grouped_extremes(np.asarray(X))
    return (np.asarray(low, dtype=np.float64).reshape(-1),
            np.asarray(high, dtype=np.float64).reshape(-1))


# Rows reduced together as one row by :func:`_grouped_extremes`.
_ROW_GROUP = 32


def _grouped_extremes(X):
    """Each column's minimum and maximum of a 2-D numpy array. numpy reduces a C-ordered array
    along its first axis one row at a time, a loop of ``d`` numbers each; viewed as rows of
    ``_ROW_GROUP`` rows, it runs ``_ROW_GROUP`` times fewer and longer loops, and a second
    reduction over the group's rows gives the same extremes."""
    n, d = X.shape
    grouped = n // _ROW_GROUP * _ROW_GROUP
    if not X.flags.c_contiguous or grouped == 0:
        return X.min(axis=0), X.max(axis=0)
    rows = X[:grouped].reshape(-1, _ROW_GROUP * d)
    low = rows.min(axis=0).reshape(_ROW_GROUP, d).min(axis=0)
    high = rows.max(axis=0).reshape(_ROW_GROUP, d).max(axis=0)
    if grouped < n:
        low, high = np.minimum(low, X[grouped:].min(axis=0)), np.maximum(high, X[grouped:].max(axis=0))
    return low, high


def _column_extremes(X):
    """Each column's minimum and maximum of a 2-D torch tensor: ``min``/``max`` along a dimension,
    which torch's CPU kernels reduce faster than ``amin``/``amax`` (float32 above all)."""
    torch = sys.modules["torch"]
    return torch.min(X, dim=0).values, torch.max(X, dim=0).values


def merge_ranges(*ranges):
    """The range of the union of the rows of several ``(data_min, data_max)`` ranges."""
    return (np.minimum.reduce([low for low, _ in ranges]),
            np.maximum.reduce([high for _, high in ranges]))


def _stored_columns(X):
    """The column of each stored value of a CSR or CSC matrix."""
    if X.format == "csr":
        return X.indices
    return np.repeat(np.arange(X.shape[1]), np.diff(X.indptr))


def clip_to_range(X, data_min, data_max):
    """``X`` with every feature clipped to ``[data_min, data_max]``, in ``X``'s dtype.

    ``X`` itself is returned, not copied, when nothing lies outside the range;
    otherwise a clipped copy (the caller's array is never written). A sparse
    matrix has its stored values clipped (see the module docstring).
    """
    if sparse.issparse(X):
        columns = _stored_columns(X)
        low, high = data_min[columns], data_max[columns]
        if not (np.any(X.data < low) or np.any(X.data > high)):
            return X
        X = X.copy()
        np.clip(X.data, low, high, out=X.data)
        return X
    if hasattr(X, "amin"):  # a torch tensor and torch bounds, in X's dtype as np.clip rounds
        same = data_min.dtype == X.dtype
        low, high = (data_min, data_max) if same else (data_min.to(X.dtype), data_max.to(X.dtype))
        column_min, column_max = _column_extremes(X)
        outside = bool((column_min < low).any() or (column_max > high).any())
        return X.clip(low, high) if outside else X
    # Column extremes first: two reductions and no copy in the common case.
    if not (np.any(X.min(axis=0) < data_min) or np.any(X.max(axis=0) > data_max)):
        return X
    return np.clip(X, data_min, data_max, out=np.array(X, copy=True))


def clip_rows(X, rows, data_min, data_max):
    """A copy of the CSR matrix ``X`` with the stored values of ``rows`` clipped."""
    X = X.tocsr(copy=True)
    counts = np.diff(X.indptr)
    selected = np.repeat(np.isin(np.arange(X.shape[0]), rows), counts)
    columns = X.indices[selected]
    X.data[selected] = np.clip(X.data[selected], data_min[columns], data_max[columns])
    return X
