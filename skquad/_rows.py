"""Training rows in a canonical form: the one duplicate-row merge of skquad.

A pure numpy/scipy module below every other room: the training engine's
full-batch solvers (quadratic logistic regression's L-BFGS) and the convex
package's SDP (:func:`skquad.convex.formulation.aggregate_samples`) both call
:func:`merge_duplicate_samples`.
"""

import numpy as np
import scipy.sparse

__all__ = ["merge_duplicate_samples"]


def merge_duplicate_samples(X, y, sample_weight):
    """Drop zero-weight samples and merge exact duplicates, summing their weights.

    A full-batch objective only sees the weighted empirical distribution, so
    this changes no optimum; it makes "weight 2" and "the sample repeated
    twice" the very same problem, in the same (canonical, sorted) row order,
    so that a deterministic solver (L-BFGS) returns the very same model for
    both: scikit-learn's sample-weight equivalence, exactly, where rounding
    differences along the path would otherwise grow on a non-convex problem.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Class indices, labels as numbers, or real targets (2-D: several).
    sample_weight : ndarray of shape (n_samples,)

    Returns
    -------
    X, y, sample_weight : ndarrays
        The distinct ``(x, y)`` pairs with positive weight, sorted, with their
        summed weights (the total weight is unchanged); ``X`` and ``y`` keep
        their dtypes.
    """
    sample_weight = np.asarray(sample_weight)
    keep = sample_weight > 0
    X, y, sample_weight = X[keep], y[keep], sample_weight[keep]
    if scipy.sparse.issparse(X):
        return _merge_sparse(X, y, sample_weight)
    # One dtype that holds both exactly (float32 X with int64 class indices: float64).
    common = np.result_type(X.dtype, y.dtype, np.float32)
    width = 1 if y.ndim == 1 else y.shape[1]
    rows = np.column_stack([X.astype(common, copy=False), y.astype(common).reshape(len(y), width)])
    unique_rows, inverse = np.unique(rows, axis=0, return_inverse=True)
    weight = np.bincount(inverse.ravel(), weights=sample_weight, minlength=len(unique_rows))
    targets = unique_rows[:, -width:].astype(y.dtype)
    X_unique = np.ascontiguousarray(unique_rows[:, :-width], dtype=X.dtype)
    return X_unique, targets[:, 0] if y.ndim == 1 else targets, weight


def _merge_sparse(X, y, sample_weight):
    """:func:`merge_duplicate_samples` for CSR/CSC rows, without densifying them."""
    X = scipy.sparse.csr_matrix(X, copy=True)
    X.sum_duplicates()  # canonical: sorted column indices, explicit zeros kept apart
    X.eliminate_zeros()
    pointers, indices, data = X.indptr, X.indices, X.data
    keys = np.array(
        [
            y[i].tobytes() + indices[pointers[i] : pointers[i + 1]].tobytes()
            + data[pointers[i] : pointers[i + 1]].tobytes()
            for i in range(X.shape[0])
        ],
        dtype=object,
    )
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    weight = np.bincount(inverse.ravel(), weights=sample_weight, minlength=len(first))
    return X[first], y[first], weight
