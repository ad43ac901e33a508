"""The Gram matrix of the degree-2 features from their distinct degree-4 moments.

With ``z = [1, x_1, ..., x_d]`` the pair products ``z_a z_b`` (``a <= b``,
row-major) are ``[1, φ(x)]``: the constant, the ``d`` linear and the
``d (d + 1) / 2`` quadratic features of :mod:`.quadratic_ridge`. Their
weighted Gram ``H = Σ w [1, φ][1, φ]ᵀ`` holds one number per multiset
``{a, b, c, e}``, ``Σ w z_a z_b z_c z_e``, which a product ``Φᵀ Φ`` (a SYRK,
``P² / 2`` numbers a row for ``P = D + 1`` features) computes up to three
times. Here each is computed once or nearly: the moment of ``a <= b <= c <= e``
is the product of the pair ``(a, b)`` with the pair ``(c, e)``, so the pairs
grouped by their larger index ``b`` are multiplied only with the pairs whose
smaller index is at least ``b`` (consecutive groups share one GEMM, which
keeps its shape efficient at the cost of some repeated products): from 0.6
(``d = 18``) down to 0.37 (``d = 62``) of the SYRK's products. A gather then
writes every entry of ``H`` from its multiset's moment.

Centring: an uncentred degree-4 sum cancels against the centring by as many
digits as a column's mean exceeds its spread, so the columns whose mean does
(``x̄² > var``) are shifted by it, ``c``, and the Gram of the shifted features
is mapped back exactly: ``φ(x) = T φ(x - c) + t`` with ``T = [[I, 0], [B, I]]``,
``B[(a, b), k] = c_b [a = k] + c_a [b = k]``, nonzero only on the pairs with
a shifted column, so the centred Gram ``T G̃ Tᵀ`` costs ``O(D d)`` a shifted
column.
"""

import functools
import typing

import numpy as np
import scipy.linalg.blas

from .._foundation._pair_products import write_pair_products

__all__ = ["moment_normal_equations", "uses_moments"]

# A group of pairs (by their larger index) fills at least this many rows of its GEMM:
# fewer rows leave the product bound by memory, more repeat moments.
_GROUP_ROWS = 32
# The gather's index holds P² entries: the route stops where it would pass 2^22 (16 MB).
_MAX_INDEX_ENTRIES = 2**22
# Expanded numbers per row block (both layouts of the pairs): 2^18 float64 (2 MB), so that
# a block's pair products stay in cache between the GEMMs that read them. The blocks share
# one workspace, allocated once a fit: a fresh one each block would be mapped and faulted in
# page by page every time.
_BLOCK_ELEMENTS = 2**18
# The moments repeat fewer products than a SYRK on narrower rows, and their fixed P² work
# (the gather, the centring) is paid back from about this many rows.
_MIN_FEATURES = 18
_MIN_SAMPLES = 1000


def uses_moments(n_samples, n_features, allowed):
    """Whether :func:`moment_normal_equations` forms the Gram: every pair (no interaction
    constraints), at least ``_MIN_SAMPLES`` rows and ``_MIN_FEATURES`` features, and a gather
    index of at most ``_MAX_INDEX_ENTRIES``."""
    pairs = (n_features + 1) * (n_features + 2) // 2
    return (allowed is None and n_samples >= _MIN_SAMPLES and n_features >= _MIN_FEATURES
            and pairs**2 <= _MAX_INDEX_ENTRIES)


def _groups(width):
    """Consecutive ranges ``[lo, hi)`` of the larger index ``b``, each of at least ``_GROUP_ROWS``
    pairs ``(a, b)`` (the last may hold fewer)."""
    out, start, rows = [], 0, 0
    for b in range(width):
        rows += b + 1
        if rows >= _GROUP_ROWS:
            out.append((start, b + 1))
            start, rows = b + 1, 0
    if start < width:
        out.append((start, width))
    return out


class _Layout(typing.NamedTuple):
    pairs: int
    products: tuple
    size: int
    index: np.ndarray
    upper: np.ndarray


@functools.lru_cache(maxsize=2)  # an index holds up to 16 MB
def _layout(width):
    """The :class:`_Layout` of the moments of ``z`` of ``width`` entries: ``pairs`` ``P``;
    ``products``: per group, the rows of its pairs in the order by larger index
    (``(a, b)`` at ``b (b + 1) / 2 + a``), the first row-major pair of its columns
    (the pairs whose smaller index is at least the group's ``lo``) and the offset
    of its block in the flat moments, of ``size`` numbers; ``index``: ``P x P``
    positions in the flat moments of each entry of ``H`` (read-only); ``upper``: the pairs'
    positions in a flattened ``width x width`` matrix.
    """
    starts = np.concatenate([[0], np.cumsum(np.arange(width, 0, -1))])
    P = int(starts[-1])
    groups = _groups(width)
    products, offset = [], 0
    for lo, hi in groups:
        first, last = lo * (lo + 1) // 2, hi * (hi + 1) // 2
        products.append((first, last, int(starts[lo]), offset))
        offset += (last - first) * (P - int(starts[lo]))
    rows, cols = np.triu_indices(width)
    # per larger index b of a sorted quadruple: its group's first row, first column and offset
    group = np.searchsorted([hi for _, hi in groups], np.arange(width), side="right")
    first, column_start, block = (np.array(field)[group] for field in zip(*(
        (p[0], p[2], p[3]) for p in products)))
    index = np.empty((P, P), dtype=np.int32)
    for a in range(width):
        # the rows of the pairs (a, b), b >= a, against every pair (c, e): the sorted quadruple
        # is (min(a, c), the middle two in order, max(b, e))
        b = np.arange(a, width)[:, None]
        low, high = np.maximum(a, rows), np.minimum(b, cols)
        s0, s1, s2, s3 = np.minimum(a, rows), np.minimum(low, high), np.maximum(low, high), \
            np.maximum(b, cols)
        row = s1 * (s1 + 1) // 2 + s0 - first[s1]
        column = starts[s2] + (s3 - s2) - column_start[s1]
        index[starts[a] : starts[a + 1]] = block[s1] + row * (P - column_start[s1]) + column
    upper = np.ravel_multi_index((rows, cols), (width, width))
    index.flags.writeable = upper.flags.writeable = False
    return _Layout(P, tuple(products), offset, index, upper)


class _Workspace(typing.NamedTuple):
    """The scratch arrays of one fit, ``(rows, columns)`` each, for blocks of up to ``step`` rows."""

    z: np.ndarray  # [1, x - c] of a block, one row per entry
    weighted: np.ndarray  # z times the rows' weights (None with unit weights: z itself)
    pairs: np.ndarray  # the pair products, row-major order
    by_larger: np.ndarray  # the weighted pair products, by larger index

    @classmethod
    def of(cls, width, P, step, unit):
        weighted = None if unit else np.empty((width, step))
        return cls(np.empty((width, step)), weighted, np.empty((P, step)), np.empty((P, step)))

    def rows(self, m):
        """The views of a block of ``m`` rows."""
        return _Workspace(*(None if array is None else array[:, :m] for array in self))


def _block_moments(z, weighted, layout, out, work):
    """Add to ``out`` the flat moments ``Σ w z_a z_b z_c z_e`` of the rows ``z`` (width, m)
    whose weighted rows are ``weighted``, in the ``work`` arrays of ``m`` rows."""
    P, products = layout.pairs, layout.products
    pairs, by_larger = work.pairs, work.by_larger
    write_pair_products(z, pairs)
    stop = 0
    for b in range(z.shape[0]):
        np.multiply(z[: b + 1], weighted[b], out=by_larger[stop : stop + b + 1])
        stop += b + 1
    for first, last, column_start, offset in products:
        rows, columns = last - first, P - column_start
        block = out[offset : offset + rows * columns].reshape(rows, columns)
        block += by_larger[first:last] @ pairs[column_start:].T


def moment_normal_equations(X, Y, weight, mean, y_mean, pairs, dense_blocks):
    """``(G, R)`` of :func:`.quadratic_ridge.normal_equations` for every pair, from the moments.

    ``pairs``: ``triu_indices(d)``, the quadratic features' order. ``dense_blocks(X, width,
    elements)`` yields ``(start, dense float64 block)``, blocks of at most ``elements / width``
    rows (:func:`.quadratic_ridge._dense_blocks`). Sums over rows, as that function's.
    """
    d = X.shape[1]
    layout = _layout(d + 1)
    P = layout.pairs
    rows, cols = pairs
    shift = _shift(mean[:d], mean[d:][rows == cols])
    unit = bool(np.all(weight == 1.0))
    moments = np.zeros(layout.size)
    cross = np.zeros((P, Y.shape[1]))
    workspace = None
    for start, block in dense_blocks(X, 2 * P, _BLOCK_ELEMENTS):
        stop = start + block.shape[0]
        if workspace is None:  # the first block is the longest
            workspace = _Workspace.of(d + 1, P, block.shape[0], unit)
        work = workspace.rows(block.shape[0])
        z = work.z
        z[0] = 1.0
        np.subtract(block.T, shift[:, None], out=z[1:])
        weighted = z if unit else np.multiply(z, weight[start:stop], out=work.weighted)
        _block_moments(z, weighted, layout, moments, work)
        targets = Y[start:stop] - y_mean
        if not unit:
            targets *= weight[start:stop, None]
        cross += work.pairs @ targets  # Σ w ỹ z_a z_b, the block's pair products still at hand
    H = moments[layout.index]
    # [1, φ̃]'s Gram -> φ̃'s, centred at the mean's image m̃ = T⁻¹ (m - t)
    touched, B = _shift_map(shift, rows, cols)
    centre = np.concatenate([mean[:d] - shift, mean[d:] - shift[rows] * shift[cols]])
    centre[d + touched] -= B @ centre[:d]
    # S - s m̃ᵀ - m̃ sᵀ + W m̃ m̃ᵀ = S - v m̃ᵀ - m̃ vᵀ with v = s - W m̃ / 2, in place (H is ours)
    _subtract_symmetric_outer(H, H[1:, 0] - 0.5 * H[0, 0] * centre, centre)
    G = H[1:, 1:]
    R = cross[1:] - np.outer(centre, cross[0])
    if touched.size:
        _unshift(G, R, B, d + touched)
    return G, R


def _subtract_symmetric_outer(H, v, m):
    """``G -= v mᵀ + m vᵀ`` in place for ``G = H[1:, 1:]`` of the C-ordered ``H``: two BLAS rank-1
    updates (GER) of ``Hᵀ``, the Fortran-ordered view BLAS updates without a copy (no band of
    outer products, no second ``D x D`` array). The vectors get a first entry 0, so ``H``'s first
    row and column (not read afterwards) change by zero products only."""
    v, m = np.concatenate([[0.0], v]), np.concatenate([[0.0], m])
    transposed = H.T  # Hᵀ += -m vᵀ is H += -v mᵀ
    for x, y in ((m, v), (v, m)):
        updated = scipy.linalg.blas.dger(-1.0, x, y, a=transposed, overwrite_a=True)
        if not np.shares_memory(updated, H):  # pragma: no cover - f2py updates a Fortran array in place
            H[...] = updated.T


def _shift(linear_mean, square_mean):
    """``c``: the mean of each column whose mean exceeds its spread (``x̄² > var``), else 0.

    Uncentred degree-4 sums of such a column cancel against the centring, losing
    about ``log10(x̄² / var)`` digits; below that the loss is a bounded factor,
    and an unshifted column costs nothing to map back.
    """
    return np.where(2.0 * linear_mean**2 > square_mean, linear_mean, 0.0)


def _shift_map(shift, rows, cols):
    """``(touched, B)``: the pairs with a shifted column and their rows of ``B`` (module
    docstring; the other rows are 0), ``B[(a, b), k] = c_b [a = k] + c_a [b = k]``."""
    touched = np.flatnonzero((shift[rows] != 0.0) | (shift[cols] != 0.0))
    B = np.zeros((touched.shape[0], shift.shape[0]))
    pair = np.arange(touched.shape[0])
    B[pair, rows[touched]] = shift[cols[touched]]
    B[pair, cols[touched]] += shift[rows[touched]]
    return touched, B


def _unshift(G, R, B, touched):
    """``G <- T G Tᵀ`` and ``R <- T R`` in place (``T = [[I, 0], [B, I]]``, ``B`` nonzero on the
    ``touched`` rows only): ``G_ql += B G_ll``, ``G_qq += B G_lq + (B G_lq)ᵀ + B G_ll Bᵀ``,
    ``R_q += B R_l``."""
    d = B.shape[1]
    coupled = B @ G[:d, :d]
    mixed = B @ G[:d]
    mixed[:, touched] += 0.5 * (coupled @ B.T)
    G[touched] += mixed
    G[:, touched] += mixed.T
    R[touched] += B @ R[:d]
