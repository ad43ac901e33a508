"""Training rows in a canonical form: the one duplicate-row merge of skquad.

A pure numpy/scipy module below every other room: the training engine's
full-batch solvers (quadratic logistic regression's L-BFGS) and the convex
package's SDP (:func:`skquad.convex.formulation.aggregate_samples`) both call
:func:`merge_duplicate_samples`.
"""

import numpy as np
import scipy.sparse

__all__ = ["OrderedRows", "duplicate_groups", "merge_duplicate_samples", "row_chunks", "row_folds"]

# Numbers per chunk of a pass over the rows (8 MB in float64): a pass holds one
# chunk, never a converted or reordered copy of all the rows.
ROW_CHUNK_ELEMENTS = 1 << 20


def row_chunks(rows, dtype=None, n_elements=None):
    """Yield ``(start, stop, rows[start:stop])``, ``n_elements`` numbers at a time.

    ``rows``: an array or :class:`OrderedRows` (whose chunks are gathered);
    ``dtype``: each chunk converted to it (None: as they are);
    ``n_elements``: None reads ``ROW_CHUNK_ELEMENTS``.
    """
    n_elements = ROW_CHUNK_ELEMENTS if n_elements is None else n_elements
    step = max(1, n_elements // max(1, rows.shape[1]))
    for start in range(0, rows.shape[0], step):
        stop = min(start + step, rows.shape[0])
        chunk = rows[start:stop]
        yield start, stop, chunk if dtype is None else np.asarray(chunk, dtype=dtype)


class OrderedRows:
    """The rows ``base[order]`` of a dense array, without their copy.

    For rows read in chunks (a full-batch objective's pass): each chunk is
    gathered where it is read, :meth:`gather`, into the reader's buffer, so
    that memory holds ``base`` once rather than ``base`` and its reordered
    copy. A reader that needs the rows whole gets that copy from
    ``np.asarray`` (``__array__``), in any dtype, gathered a chunk at a time.
    """

    # numbers per chunk of :meth:`chunks` (None: ``ROW_CHUNK_ELEMENTS``)
    CHUNK_ELEMENTS = None

    def __init__(self, base, order):
        self.base, self.order = base, order
        self.shape, self.dtype = (order.shape[0], base.shape[1]), base.dtype
        self.ndim = 2
        self.nbytes = self.shape[0] * self.shape[1] * self.dtype.itemsize

    def __len__(self):
        return self.shape[0]

    def gather(self, start, stop, out=None):
        """Rows ``start : stop`` (in ``out``, of their shape and dtype, where given)."""
        # (mode="clip": the indices are in range by construction, and numpy's
        # default "raise" writes through a temporary instead of ``out``)
        return np.take(self.base, self.order[start:stop], axis=0, out=out, mode="clip")

    def chunks(self):
        """Yield ``(start, stop, rows)``: the rows gathered ``CHUNK_ELEMENTS`` numbers at a time."""
        return row_chunks(self, n_elements=self.CHUNK_ELEMENTS)

    def __getitem__(self, rows):
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("OrderedRows selects a contiguous slice of rows only.")
        start, stop, _ = rows.indices(self.shape[0])
        return self.gather(start, max(start, stop))

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("OrderedRows are gathered: np.asarray makes a copy.")
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self.gather(0, self.shape[0])
        # converted a chunk at a time: no whole copy in the rows' own dtype on the way
        out = np.empty(self.shape, dtype=dtype)
        for start, stop, rows in self.chunks():
            out[start:stop] = rows
        return out


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
    if hasattr(X, "amin"):  # a torch tensor: its rows are ranked on its device
        return _tensor_groups(X, y, sample_weight, kept)
    if scipy.sparse.issparse(X):
        first, weight = _sparse_groups(X[kept], y[kept], sample_weight[kept])
        return kept[first], weight
    rank, n_groups = _lexicographic_ranks([X, y.reshape(len(y), -1)], kept)
    rows = np.empty(n_groups, dtype=np.intp)
    rows[rank] = kept  # any row of a group: its rows are equal
    weight = np.bincount(rank, weights=sample_weight[kept], minlength=n_groups)
    return rows, weight


# Rows times remaining columns up to which the rows still tied are sorted by
# all their remaining columns in one lexsort (below: a pass per column).
_ONE_SORT_NUMBERS = 1 << 16


def _lexicographic_ranks(blocks, rows_of):
    """Dense ranks, in lexicographic order, of the rows ``rows_of`` of the blocks side by side.

    The blocks' columns, in order, are the keys; equal rows get equal ranks. Each
    column refines the ranks of the rows still tied (on continuous data every row is
    alone after a column or two), in O(n) indices where ``np.unique(rows, axis=0)``
    copies the rows. Once the tied rows and the columns left are few
    (``_ONE_SORT_NUMBERS``), one lexsort finishes. A tied group ranks as the first
    position it will hold (a competition rank); dense ranks are taken at the end.

    Returns
    -------
    rank : ndarray of shape (len(rows_of),)
    n_groups : int
    """
    columns = [(block, j) for block in blocks for j in range(block.shape[1])]
    n_rows = rows_of.shape[0]
    order = np.arange(n_rows)  # the rows in their sorted order so far
    rank = np.zeros(n_rows, dtype=np.intp)  # position of the row's group's first row
    tied = np.arange(n_rows)  # positions (in order) of rows tied with another
    done = 0
    while tied.size > 1 and done < len(columns):
        rows = order[tied]
        source = rows_of[rows]
        if tied.size * (len(columns) - done) <= _ONE_SORT_NUMBERS:
            # every column left, a (rows, columns) slice per block
            parts = _column_slices(blocks, done, source)
            done = len(columns)
        else:
            block, j = columns[done]
            parts = [block[source, j][:, None]]
            done += 1
        keys = [column for part in reversed(parts) for column in part.T[::-1]]
        # the primary key, the current rank, keeps each group in its positions
        sort = np.lexsort(keys + [rank[rows]])
        rows = rows[sort]
        order[tied] = rows
        starts = np.empty(tied.size, dtype=bool)
        starts[0] = True
        group = rank[rows]
        np.not_equal(group[1:], group[:-1], out=starts[1:])
        for part in parts:
            part = part[sort]
            starts[1:] |= (part[1:] != part[:-1]).any(axis=1)
        first = np.flatnonzero(starts)
        sizes = np.diff(np.append(first, tied.size))
        rank[rows] = np.repeat(tied[first], sizes)
        tied = tied[np.repeat(sizes > 1, sizes)]
    sorted_rank = rank[order]
    starts = np.empty(n_rows, dtype=bool)
    starts[:1] = True
    np.not_equal(sorted_rank[1:], sorted_rank[:-1], out=starts[1:])
    dense = np.empty(n_rows, dtype=np.intp)
    dense[order] = np.cumsum(starts) - 1
    return dense, int(starts.sum())


def _column_slices(blocks, done, source):
    """The rows ``source`` of every column from the ``done``-th on, as one 2-D slice per block."""
    parts, offset = [], 0
    for block in blocks:
        width = block.shape[1]
        if done < offset + width:
            # only the columns left are gathered (a view, then the rows)
            parts.append(block[:, max(0, done - offset):][source])
        offset += width
    return parts


def _tensor_groups(X, y, sample_weight, kept):
    """:func:`duplicate_groups` of a torch ``X`` on its device: the first column's sort, or
    where it ties stable sorts by every column (the last key first), the same order."""
    import torch

    targets = torch.as_tensor(y.reshape(len(y), -1)[kept], dtype=X.dtype, device=X.device)
    keys = torch.cat([X[kept], targets], dim=1)
    first, order = torch.sort(keys[:, 0], stable=True)
    if bool((first[1:] == first[:-1]).any()):
        order = torch.arange(keys.shape[0], device=X.device)
        for column in reversed(range(keys.shape[1])):
            order = order[torch.sort(keys[order, column], stable=True).indices]
    ordered = keys[order]
    starts = torch.ones(keys.shape[0], dtype=torch.bool, device=X.device)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(dim=1)
    rank = torch.empty_like(order)
    rank[order] = torch.cumsum(starts, 0) - 1
    rank = rank.cpu().numpy()
    rows = np.empty(int(rank.max(initial=-1)) + 1, dtype=np.intp)
    rows[rank] = kept
    return rows, np.bincount(rank, weights=sample_weight[kept], minlength=rows.shape[0])


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


def row_folds(X, n_folds):
    """Each row's fold: a hash of its values (the same row, the same fold, in any block).

    The hash is the sum, modulo 2**64, of each value's float64 bits times a fixed odd
    multiplier of its column; zeros add nothing, so a sparse row hashes as its dense
    form, and a torch tensor is hashed on its device (only the folds come to the host).
    """
    multipliers = np.random.default_rng(0).integers(1, 2**62, size=X.shape[1], dtype=np.uint64)
    multipliers |= np.uint64(1)
    if hasattr(X, "amin"):
        return _tensor_row_folds(X, multipliers, n_folds)
    if scipy.sparse.issparse(X):
        X = scipy.sparse.csr_matrix(X)
        terms = np.ascontiguousarray(X.data, dtype=np.float64).view(np.uint64) * multipliers[X.indices]
        running = np.concatenate([np.zeros(1, np.uint64), np.cumsum(terms, dtype=np.uint64)])
        hashed = running[X.indptr[1:]] - running[X.indptr[:-1]]
    else:
        rows = np.ascontiguousarray(X, dtype=np.float64).view(np.uint64)
        hashed = (rows * multipliers).sum(axis=1, dtype=np.uint64)
    return ((hashed >> np.uint64(33)) % np.uint64(n_folds)).astype(np.intp)


def _tensor_row_folds(X, multipliers, n_folds):
    """:func:`row_folds` of a torch tensor on its device, in int64: the same bits modulo
    2**64 (two's complement), the logical shift as an arithmetic one masked."""
    import torch

    bits = X.to(torch.float64).contiguous().view(torch.int64)
    hashed = (bits * torch.as_tensor(multipliers.view(np.int64), device=X.device)).sum(dim=1)
    folds = ((hashed >> 33) & ((1 << 31) - 1)) % n_folds
    return folds.cpu().numpy().astype(np.intp)
