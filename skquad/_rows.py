"""Training rows in a canonical form: the one duplicate-row merge of skquad.

A pure numpy/scipy module below every other room: the training engine's
full-batch solvers (quadratic logistic regression's L-BFGS) and the convex
package's SDP (:func:`skquad.convex.formulation.aggregate_samples`) both call
:func:`merge_duplicate_samples`.
"""

import numpy as np
import scipy.sparse

__all__ = ["duplicate_groups", "merge_duplicate_samples"]


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
    rows, weight = duplicate_groups(X, y, sample_weight)
    X_unique = X[rows] if scipy.sparse.issparse(X) else np.ascontiguousarray(X[rows])
    return X_unique, y[rows], weight


def duplicate_groups(X, y, sample_weight):
    """One row index per distinct ``(x, y)`` of positive weight, and the summed weights.

    :func:`merge_duplicate_samples` as indices into ``X``: a caller that
    reorders the rows again (by class, say) gathers them once, instead of
    holding a merged copy and a reordered copy of a large ``X`` at once.

    Returns
    -------
    rows : ndarray of shape (n_distinct,)
        Indices of representatives, in the lexicographic order of ``(x, y)``.
    weight : ndarray of shape (n_distinct,)
        The summed weights of each distinct pair.
    """
    sample_weight = np.asarray(sample_weight)
    kept = np.flatnonzero(sample_weight > 0)
    if scipy.sparse.issparse(X):
        first, weight = _sparse_groups(X[kept], y[kept], sample_weight[kept])
        return kept[first], weight
    all_kept = kept.shape[0] == X.shape[0]
    columns = [X[:, j] if all_kept else X[kept, j] for j in range(X.shape[1])]
    targets = y.reshape(len(y), -1)
    columns += [targets[:, j] if all_kept else targets[kept, j] for j in range(targets.shape[1])]
    rank, n_groups = _lexicographic_ranks(columns, kept.shape[0])
    rows = np.empty(n_groups, dtype=np.intp)
    rows[rank] = kept  # any row of a group: its rows are equal
    weight = np.bincount(rank, weights=sample_weight[kept], minlength=n_groups)
    return rows, weight


def _lexicographic_ranks(columns, n_rows):
    """Dense ranks of the rows whose columns are ``columns``, in lexicographic order.

    Equal rows get equal ranks. Each column refines the ranks of the ones
    before it, and the refinement stops as soon as every row is alone: on
    continuous data after one or two columns. Memory is O(n) indices, where
    ``np.unique(rows, axis=0)`` copied the rows (in a common dtype: float64
    for float32 features) and sorted the copy (issue 23: most of the 5.2 GB
    peak of a 1e6 x 200 float32 fit).
    """
    rank = np.zeros(n_rows, dtype=np.intp)
    n_groups = min(n_rows, 1)
    for column in columns:
        if n_groups == n_rows:
            break
        order = np.lexsort((column, rank))
        sorted_column = column[order]
        sorted_rank = rank[order]
        starts = np.empty(n_rows, dtype=bool)
        starts[:1] = True
        np.not_equal(sorted_rank[1:], sorted_rank[:-1], out=starts[1:])
        starts[1:] |= sorted_column[1:] != sorted_column[:-1]
        rank[order] = np.cumsum(starts) - 1
        n_groups = int(rank[order[-1]]) + 1
    return rank, n_groups


def _sparse_groups(X, y, sample_weight):
    """:func:`duplicate_groups` for CSR/CSC rows, without densifying them."""
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
    return first, weight
