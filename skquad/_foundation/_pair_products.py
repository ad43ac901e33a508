"""The products ``x_i x_j`` (``i <= j``) of rows of features, written in place.

A pure numpy module: the quadratic models' lifted features (``skquad.nn``) and the
SDP's weighted lifted matrices (``skquad.convex``) form the same upper-triangle
products in the same order, ``PolynomialFeatures(2)``'s.
"""

import numpy as np

__all__ = ["write_pair_products"]


def write_pair_products(columns, out, pairs=None):
    """``x_i x_j`` for ``i <= j`` into ``out``, one row per pair, in row-major upper-triangle order.

    ``columns`` is ``(d, n)`` (one row per feature) and ``out`` is
    ``(d(d+1)/2, n)``; transposed views of ``(n, d)`` and ``(n, D)`` arrays
    work too. Each ``x_i`` times the block ``x_i..x_d`` is written in place:
    two fancy-indexed ``n x D`` gathers cost more than the products. The
    order is that of ``skquad.nn``'s packed triangles and ``PolynomialFeatures(2)``'s.
    ``pairs`` ``(rows, cols)`` (row-major, ``rows <= cols``) writes only those
    pairs (interaction constraints), ``out`` then one row per pair.
    """
    d = columns.shape[0]
    if pairs is not None:
        rows, cols = pairs
        for i in np.unique(rows):
            # the pairs of row i are contiguous in row-major order
            first, last = np.searchsorted(rows, [i, i + 1])
            np.multiply(columns[i], columns[cols[first:last]], out=out[first:last])
        return out
    start = 0
    for i in range(d):
        np.multiply(columns[i], columns[i:], out=out[start : start + d - i])
        start += d - i
    return out
