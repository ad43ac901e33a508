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
keeps its shape efficient at the cost of some repeated products; :func:`_groups`
chooses them): from 0.54 (``d = 18``) down to 0.39 (``d = 62``) of the SYRK's
products. A gather then writes every entry of ``H`` from its multiset's moment.

Centring: an uncentred degree-4 sum cancels against the centring by as many
digits as a column's mean exceeds its spread, so the columns whose mean does
(``x̄² > var``) are shifted by it, ``c``, and the Gram of the shifted features
is mapped back exactly: ``φ(x) = T φ(x - c) + t`` with ``T = [[I, 0], [B, I]]``,
``B[(a, b), k] = c_b [a = k] + c_a [b = k]``, nonzero only on the pairs with
a shifted column, so the centred Gram ``T G̃ Tᵀ`` costs ``O(D d)`` a shifted
column.

Two-valued columns (one-hot dummies, standardized or not): a column taking two values is
shifted by its more frequent value and divided by the difference ``v`` to the other, so that
it takes ``{0, 1}``, exactly in floating point; then ``z_a² = z_a`` and, for two such columns
never nonzero in one row, ``z_a z_b = 0``. Those pairs are not multiplied: a multiset with a
repeated two-valued index is the one with that copy replaced by the constant's index 0, and
one holding two exclusive columns is 0, so the GEMMs run over the other pairs only, and a
group of a category's dummies needs no columns of that category (wage's 21 dummies among 23
columns leave 239 of its 300 pairs and 0.37 of the products without them). The Gram of
``x - c`` is that of ``z`` with each pair's row and column times its ``v_a v_b``.
"""

import functools
import typing

import numpy as np
import scipy.linalg.blas

__all__ = ["moment_normal_equations", "two_valued_columns", "uses_moments"]

# A group's GEMM costs as if it had this many rows more than it has: it reads all its columns
# whatever its rows, so few rows leave it bound by memory, and many repeat moments.
_GROUP_ROWS = 16
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
# The rows in which a column must show at most two values to be searched further.
_HEAD_ROWS = 64
# Entries of the gather's index computed together: their intermediates (256 KB each) stay in cache.
_INDEX_CHUNK = 2**15


def uses_moments(n_samples, n_features, allowed):
    """Whether :func:`moment_normal_equations` forms the Gram: every pair (no interaction
    constraints), at least ``_MIN_SAMPLES`` rows and ``_MIN_FEATURES`` features, and a gather
    index of at most ``_MAX_INDEX_ENTRIES``."""
    pairs = (n_features + 1) * (n_features + 2) // 2
    return (allowed is None and n_samples >= _MIN_SAMPLES and n_features >= _MIN_FEATURES
            and pairs**2 <= _MAX_INDEX_ENTRIES)


class _Structure(typing.NamedTuple):
    """What the moments use of the columns: ``z = (x - c) / v``, each one's shift ``c`` and
    scale ``v`` (1 but for the two-valued ones, which take ``{0, 1}``), and which pairs of
    two-valued columns are never nonzero together."""

    shift: np.ndarray  # (d,)
    scale: np.ndarray  # (d,)
    two_valued: np.ndarray  # (d,) bool
    exclusive: np.ndarray  # (d, d) bool, False on the diagonal and off the two-valued columns

    def key(self):
        """The hashable part :func:`_layout` depends on (None: no two-valued column)."""
        if not self.two_valued.any():
            return None
        return self.two_valued.tobytes(), np.packbits(self.exclusive).tobytes()


def _column_structure(X, linear_mean, square_mean, dense_blocks):
    """The :class:`_Structure` of ``X``: the two-valued columns (a pass over the rows, and a
    second for them where the rows take more than one block) and the other columns' shift by
    :func:`_mean_shift`."""
    d = X.shape[1]
    shift = _mean_shift(linear_mean, square_mean)
    scale, two_valued, exclusive = np.ones(d), np.zeros(d, dtype=bool), np.zeros((d, d), dtype=bool)
    columns, low, high, values = two_valued_columns(X, dense_blocks)
    if columns.size == 0:
        return _Structure(shift, scale, two_valued, exclusive)
    blocks = [values] if values is not None else (
        block[:, columns].T for _, block in dense_blocks(X, d, _BLOCK_ELEMENTS))
    # rows at the high value (ones), and at it in both columns of a pair (both); a block's
    # counts are below 2^24, exact in float32
    ones, both = np.zeros(columns.size), np.zeros((columns.size, columns.size))
    for values in blocks:
        at_high = (values == high[:, None]).astype(np.float32)
        ones += at_high.sum(axis=1)
        both += at_high @ at_high.T
    n = X.shape[0]
    # the more frequent value is the shift: the nonzero rows are then at most half the rows,
    # whose mean is within the spread (no cancellation in the centring)
    by_high = ones > n / 2
    shift[columns] = np.where(by_high, high, low)
    # x - c rounds to 0 or to this v, and v / v is 1 exactly; a constant column stays 0
    scale[columns] = np.where(low == high, 1.0, np.where(by_high, low - high, high - low))
    two_valued[columns] = True
    # rows where both are nonzero: the indicator of a column shifted by high is 1 - at_high
    base, sign = by_high.astype(np.float64), np.where(by_high, -1.0, 1.0)
    together = (n * np.outer(base, base) + np.outer(base, sign * ones)
                + np.outer(sign * ones, base) + np.outer(sign, sign) * both)
    apart = together == 0
    np.fill_diagonal(apart, False)
    exclusive[np.ix_(columns, columns)] = apart
    return _Structure(shift, scale, two_valued, exclusive)


def two_valued_columns(X, dense_blocks):
    """``(columns, low, high, values)``: the columns of ``X`` with at most two values, those
    values (equal for a constant column) and, where the rows take one block, the columns'
    values (one row per column), else None. A continuous column shows a third value within
    the first ``_HEAD_ROWS`` rows, so continuous data costs about those."""
    _, head = next(dense_blocks(X[:_HEAD_ROWS], X.shape[1], _BLOCK_ELEMENTS))
    columns = np.flatnonzero((np.diff(np.sort(head, axis=0), axis=0) != 0).sum(axis=0) <= 1)
    low = high = values = None
    for start, block in dense_blocks(X, X.shape[1], _BLOCK_ELEMENTS):
        if columns.size == 0:
            break
        # one row per column: the reductions run over contiguous memory
        values = np.ascontiguousarray(block[:, columns].T)
        block_low, block_high = values.min(axis=1), values.max(axis=1)
        keep = ((values == block_low[:, None]) | (values == block_high[:, None])).all(axis=1)
        if low is not None:  # the two blocks' values together are still two
            new_low, new_high = np.minimum(low, block_low), np.maximum(high, block_high)
            for found in (low, high, block_low, block_high):
                keep &= (found == new_low) | (found == new_high)
            block_low, block_high = new_low, new_high
        if not keep.all():
            columns, values = columns[keep], values[keep]
            block_low, block_high = block_low[keep], block_high[keep]
        low, high = block_low, block_high
    one_block = values is not None and start == 0 and values.shape[1] == X.shape[0]
    return columns, low, high, values if one_block and columns.size else None


def _groups(per_larger, columns_of):
    """Consecutive ranges ``[lo, hi)`` of the larger index ``b`` that make the cheapest GEMMs:
    ``per_larger[b]`` rows each, and as many columns as the ``b`` needing the most,
    ``columns_of[b]``; a GEMM costs ``(rows + _GROUP_ROWS) x columns`` (dynamic programming
    over the last range's start)."""
    width = len(per_larger)
    rows = np.concatenate([[0], np.cumsum(per_larger)])
    cost, start = np.zeros(width + 1), np.zeros(width + 1, dtype=int)
    for hi in range(1, width + 1):
        columns = np.maximum.accumulate(columns_of[hi - 1 :: -1])[::-1]  # of [lo, hi), per lo
        total = cost[:hi] + (rows[hi] - rows[:hi] + _GROUP_ROWS) * columns
        start[hi] = np.argmin(total)
        cost[hi] = total[start[hi]]
    out, hi = [], width
    while hi > 0:
        out.append((int(start[hi]), hi))
        hi = start[hi]
    return out[::-1]


class _Layout(typing.NamedTuple):
    pairs: int
    kept: int
    row_runs: tuple
    larger_runs: tuple
    larger_order: np.ndarray
    products: tuple
    size: int
    index: np.ndarray
    pair_index: np.ndarray


def _structure_masks(width, key):
    """The two-valued mask and exclusive matrix of ``_Structure.key()``, indexed by ``z``'s
    entries (index 0, the constant, is neither)."""
    two_valued, exclusive = np.zeros(width, dtype=bool), np.zeros((width, width), dtype=bool)
    if key is not None:
        d = width - 1
        two_valued[1:] = np.frombuffer(key[0], dtype=bool)
        exclusive[1:, 1:] = np.unpackbits(np.frombuffer(key[1], dtype=np.uint8))[: d * d] \
            .reshape(d, d).astype(bool)
    return two_valued, exclusive


class _KeptPairs(typing.NamedTuple):
    """The multiplied pairs ``(rows, cols)`` (row-major) of ``z`` of ``width`` entries, and
    their positions in row-major order and by larger index (``width x width`` tables)."""

    rows: np.ndarray
    cols: np.ndarray
    row_major: np.ndarray
    by_larger: np.ndarray
    order: np.ndarray  # the kept pairs by larger index, then smaller

    @classmethod
    def of(cls, width, two_valued, exclusive):
        rows, cols = np.triu_indices(width)
        kept = ~(((rows == cols) & two_valued[rows]) | exclusive[rows, cols])
        rows, cols = rows[kept], cols[kept]
        order = np.lexsort((rows, cols))
        row_major, by_larger = np.zeros((2, width, width), dtype=np.int64)
        row_major[rows, cols] = np.arange(rows.size)
        by_larger[rows[order], cols[order]] = np.arange(rows.size)
        return cls(rows, cols, row_major, by_larger, order)

    def starts(self, by):
        """Per index ``i`` (and one past the last), the first kept pair whose larger (``by
        ="larger"``) or smaller index is at least ``i``, in that order."""
        counted = self.cols if by == "larger" else self.rows
        return np.concatenate([[0], np.cumsum(np.bincount(counted, minlength=self.row_major.shape[0]))])


@functools.lru_cache(maxsize=2)  # an index holds up to 16 MB
def _layout(width, key=None):
    """The :class:`_Layout` of the moments of ``z`` of ``width`` entries and the two-valued
    structure ``key`` (:meth:`_Structure.key`).

    ``pairs``: all pairs ``P``; ``kept``: ``K``, the multiplied pairs; ``row_runs`` and
    ``larger_runs``: :func:`_runs` of the kept pairs in row-major order and by larger index;
    ``larger_order``: the kept pairs by larger index, as their row-major positions;
    ``products``: per group of larger indices, the rows of its kept pairs in the order by larger
    index, the first kept row-major pair of its columns and the offset of its block in the flat
    moments, of ``size`` numbers and one 0 after them; ``index``: ``P x P`` positions in the flat
    moments of each entry of ``H`` (read-only); ``pair_index``: each pair's position among the
    kept pairs (``K``: a 0 after them), for the cross products.
    """
    two_valued, exclusive = _structure_masks(width, key)
    kept = _KeptPairs.of(width, two_valued, exclusive)
    products, size = _products(kept, _first_needed(two_valued, exclusive))
    rows, cols = np.triu_indices(width)
    bits = _PairBits.of(rows, cols, two_valued, exclusive) if key is not None else None
    index = _moment_index(kept, products, size, bits, two_valued)
    pair_index = kept.row_major[rows, cols]
    square = (rows == cols) & two_valued[rows]
    pair_index[square] = kept.row_major[0, rows[square]]  # z_a² = z_a
    pair_index[exclusive[rows, cols]] = kept.rows.size
    return _Layout(rows.size, kept.rows.size, _runs(kept.rows, kept.cols),
                   _runs(kept.cols[kept.order], kept.rows[kept.order]), kept.order, products, size,
                   index, pair_index)


def _products(kept, needed):
    """``(products, size)``: per group of :func:`_groups`, the first and last row of its kept
    pairs by larger index, the first kept row-major pair of its columns (whose smaller index is
    at least the least ``needed`` of its larger indices) and its block's offset in the flat
    moments; ``size``, their numbers."""
    K = kept.rows.size
    larger_start, smaller_start = kept.starts("larger"), kept.starts("smaller")
    products, offset = [], 0
    for lo, hi in _groups(np.diff(larger_start), K - smaller_start[needed]):
        first, last = int(larger_start[lo]), int(larger_start[hi])
        column_start = int(smaller_start[needed[lo:hi].min()])
        products.append((first, last, column_start, offset))
        offset += (last - first) * (K - column_start)
    return tuple(products), offset


def _moment_index(kept, products, size, bits, two_valued):
    """The ``P x P`` positions in the flat moments of each entry ``((a, b), (c, e))`` of ``H``:
    the moment of the sorted quadruple's first pair against its second, after
    :func:`_canonical` where ``bits`` say a two-valued index repeats, ``size`` (the 0 after the
    moments) where they say an exclusive pair meets."""
    width = two_valued.shape[0]
    rows, cols = np.triu_indices(width)
    K, P = kept.rows.size, rows.size
    # per larger index of a first pair: its group's first row, first column and offset (every
    # index has a kept pair, its pair with the constant)
    ends = [last for _, last, _, _ in products]
    group = np.searchsorted(ends, kept.starts("larger")[:-1], side="right")
    first, column_start, offset = (np.array(field)[group] for field in zip(*(
        (p[0], p[2], p[3]) for p in products)))
    # a first pair's row in its group's block, then the second pair's column
    row_offset = offset + (kept.by_larger - first) * (K - column_start) - column_start

    def position(s0, s1, s2, s3):
        return row_offset[s0, s1] + kept.row_major[s2, s3]

    index = np.empty((P, P), dtype=np.int32)
    step = max(1, _INDEX_CHUNK // P)
    for lo in range(0, P, step):
        # the pairs (a, b) lo..hi-1 against every pair (c, e): the sorted quadruple is
        # (min(a, c), the middle two in order, max(b, e))
        hi = min(P, lo + step)
        a, b = rows[lo:hi, None], cols[lo:hi, None]
        low, high = np.maximum(a, rows), np.minimum(b, cols)
        s = (np.minimum(a, rows), np.minimum(low, high), np.maximum(low, high), np.maximum(b, cols))
        here = position(*s)
        if bits is not None:
            zero, repeated = bits.of_rows(lo, hi)
            if repeated.any():
                here[repeated] = position(*_canonical(
                    *(np.broadcast_to(x, here.shape)[repeated] for x in s), two_valued))
            here[zero] = size
        index[lo:hi] = here
    index.flags.writeable = False
    return index


def _first_needed(two_valued, exclusive):
    """Per index ``b``, the smallest ``c >= b`` that a canonical multiset ``{., b, c, .}`` may
    hold: ``b`` itself but for a two-valued one, which is not repeated and not paired with a
    column exclusive to it (for a one-hot dummy, the first column after its category)."""
    width = two_valued.shape[0]
    allowed = np.zeros((width, width + 1), dtype=bool)
    allowed[:, -1] = True  # none: past the last column
    allowed[:, :-1] = np.triu(~exclusive, k=1) | np.diag(~two_valued)
    return np.argmax(allowed, axis=1)


def _runs(outer, inner):
    """``(i, lo, hi, start)``: the kept pairs, listed by ``outer`` then ``inner`` index, as runs
    of consecutive ``inner`` indices ``lo..hi-1`` at one ``outer`` index ``i``, the first at
    ``start`` in the list. One-hot dummies are adjacent columns, so their pairs leave a row
    one run, which one product writes."""
    breaks = np.flatnonzero((np.diff(outer) != 0) | (np.diff(inner) != 1)) + 1
    starts, ends = np.concatenate([[0], breaks]), np.concatenate([breaks, [outer.size]])
    return tuple(zip(outer[starts].tolist(), inner[starts].tolist(), (inner[ends - 1] + 1).tolist(),
                     starts.tolist()))


class _PairBits(typing.NamedTuple):
    """Per pair ``(a, b)``, the bit masks (one bit per index of ``z``, at most 64) that say which
    products with another pair hold an exclusive pair or a repeated two-valued index."""

    members: np.ndarray  # a's and b's bits
    exclusive: np.ndarray  # the bits of the columns exclusive to a or b
    two_valued: np.ndarray  # a's and b's bits where two-valued
    dead: np.ndarray  # (a, b) is an exclusive pair
    square: np.ndarray  # a = b, two-valued

    @classmethod
    def of(cls, rows, cols, two_valued, exclusive):
        bit = np.left_shift(np.uint64(1), np.arange(two_valued.shape[0], dtype=np.uint64))
        exclusive_bits = np.bitwise_or.reduce(np.where(exclusive, bit, np.uint64(0)), axis=1)
        two_valued_bits = np.where(two_valued, bit, np.uint64(0))
        return cls(bit[rows] | bit[cols], exclusive_bits[rows] | exclusive_bits[cols],
                   two_valued_bits[rows] | two_valued_bits[cols], exclusive[rows, cols],
                   (rows == cols) & two_valued[rows])

    def of_rows(self, lo, hi):
        """``(zero, repeated)`` of the pairs ``lo..hi-1`` against all: their product holds an
        exclusive pair (its moment is 0), or else a two-valued index twice."""
        rows = slice(lo, hi)
        zero = (self.dead[rows, None] | self.dead[None, :]
                | ((self.exclusive[rows, None] & self.members[None, :]) != 0))
        repeated = (self.square[rows, None] | self.square[None, :]
                    | ((self.two_valued[rows, None] & self.members[None, :]) != 0))
        return zero, repeated & ~zero


def _canonical(s0, s1, s2, s3, two_valued):
    """The sorted quadruples ``s0 <= s1 <= s2 <= s3`` whose moments are computed for these:
    a repeated two-valued index becomes 0 (``z_a² = z_a``), then the four are sorted again."""
    repeats = [(later == earlier) & two_valued[later] for earlier, later in ((s0, s1), (s1, s2), (s2, s3))]
    return _sort4(s0, *(np.where(repeat, 0, x) for repeat, x in zip(repeats, (s1, s2, s3))))


def _sort4(a, b, c, d):
    """Four arrays sorted elementwise (a sorting network of five exchanges)."""
    a, b = np.minimum(a, b), np.maximum(a, b)
    c, d = np.minimum(c, d), np.maximum(c, d)
    a, c = np.minimum(a, c), np.maximum(a, c)
    b, d = np.minimum(b, d), np.maximum(b, d)
    return a, np.minimum(b, c), np.maximum(b, c), d


class _Workspace(typing.NamedTuple):
    """The scratch arrays of one fit, ``(rows, columns)`` each, for blocks of up to ``step`` rows."""

    z: np.ndarray  # [1, (x - c) / v] of a block, one row per entry
    weighted: np.ndarray  # z times the rows' weights (None with unit weights: z itself)
    pairs: np.ndarray  # the kept pair products, row-major order
    by_larger: np.ndarray  # the weighted kept pair products, by larger index

    @classmethod
    def of(cls, width, K, step, unit):
        weighted = None if unit else np.empty((width, step))
        return cls(np.empty((width, step)), weighted, np.empty((K, step)), np.empty((K, step)))

    def rows(self, m):
        """The views of a block of ``m`` rows."""
        return _Workspace(*(None if array is None else array[:, :m] for array in self))


def _block_moments(z, weighted, layout, out, work):
    """Add to ``out`` the flat moments ``Σ w z_a z_b z_c z_e`` of the rows ``z`` (width, m)
    whose weighted rows are ``weighted``, in the ``work`` arrays of ``m`` rows."""
    pairs, by_larger = work.pairs, work.by_larger
    for a, lo, hi, start in layout.row_runs:
        np.multiply(z[a], z[lo:hi], out=pairs[start : start + hi - lo])
    if weighted is z:  # unit weights: the same products in the other order, one gather
        np.take(pairs, layout.larger_order, axis=0, out=by_larger)
    else:
        for b, lo, hi, start in layout.larger_runs:
            np.multiply(z[lo:hi], weighted[b], out=by_larger[start : start + hi - lo])
    K = pairs.shape[0]
    for first, last, column_start, offset in layout.products:
        rows, columns = last - first, K - column_start
        block = out[offset : offset + rows * columns].reshape(rows, columns)
        block += by_larger[first:last] @ pairs[column_start:].T


def moment_normal_equations(X, Y, weight, mean, y_mean, pairs, dense_blocks):
    """``(G, R)`` of :func:`.quadratic_ridge.normal_equations` for every pair, from the moments.

    ``pairs``: ``triu_indices(d)``, the quadratic features' order. ``dense_blocks(X, width,
    elements)`` yields ``(start, dense float64 block)``, blocks of at most ``elements / width``
    rows (:func:`.quadratic_ridge._dense_blocks`). Sums over rows, as that function's.
    """
    d = X.shape[1]
    rows, cols = pairs
    structure = _column_structure(X, mean[:d], mean[d:][rows == cols], dense_blocks)
    layout = _layout(d + 1, structure.key())
    shift, scale = structure.shift, structure.scale
    scaled = bool(np.any(scale != 1.0))
    unit = bool(np.all(weight == 1.0))
    moments = np.zeros(layout.size + 1)  # the last stays 0: the exclusive multisets' moment
    K = layout.kept
    cross = np.zeros((K + 1, Y.shape[1]))
    workspace = None
    for start, block in dense_blocks(X, 2 * K, _BLOCK_ELEMENTS):
        stop = start + block.shape[0]
        if workspace is None:  # the first block is the longest
            workspace = _Workspace.of(d + 1, K, block.shape[0], unit)
        work = workspace.rows(block.shape[0])
        z = work.z
        z[0] = 1.0
        np.subtract(block.T, shift[:, None], out=z[1:])
        if scaled:
            np.divide(z[1:], scale[:, None], out=z[1:])
        weighted = z if unit else np.multiply(z, weight[start:stop], out=work.weighted)
        _block_moments(z, weighted, layout, moments, work)
        targets = Y[start:stop] - y_mean
        if not unit:
            targets *= weight[start:stop, None]
        cross[:K] += work.pairs @ targets  # Σ w ỹ z_a z_b, the block's pair products still at hand
    H, cross = moments[layout.index], cross[layout.pair_index]
    if scaled:
        _unscale(H, cross, scale, rows, cols)
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


def _unscale(H, cross, scale, rows, cols):
    """``z``'s Gram and cross products -> those of ``x - c``, in place: each pair ``(a, b)``'s
    row and column times ``v_a v_b`` (``v_0 = 1``, the constant's). ``rows, cols``: the
    quadratic features' pairs, which follow ``[1, x]``'s pairs with the constant."""
    pair_scale = np.concatenate([[1.0], scale, scale[rows] * scale[cols]])
    H *= pair_scale
    H *= pair_scale[:, None]
    cross *= pair_scale[:, None]


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


def _mean_shift(linear_mean, square_mean):
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
