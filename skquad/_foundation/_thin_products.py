"""Products of a large matrix with a few columns, in the orientation BLAS runs fastest.

``H @ a`` and ``Hᵀ @ g``, for ``H`` of shape (n, m) with n and m large and ``a``, ``g`` of a
few columns, are taken as ``(aᵀ Hᵀ)ᵀ`` and ``(gᵀ H)ᵀ``: the few columns become the
product's rows. A GEMM kernel fills its output in tiles of many rows by few columns, so an
output of many rows and a few columns leaves most of each tile empty, while a few long
rows fill them; both orientations read ``H`` once. ``H`` may be given as factors
``H = F_1 F_2 ... F_k``, multiplied in turn. The results are copied back to C order (a
small copy): numpy's row-wise work on a transposed view of few columns is several times
slower. The figures per BLAS kernel are in the CHANGELOG.
"""

import numpy as np

__all__ = ["ThinProducts"]


class ThinProducts:
    """``H`` (a 2-D ndarray, or the product of the 2-D ndarrays ``factors``) whose products
    ``H @ a`` and ``H.T @ g`` are taken with ``a``, ``g`` as the product's rows (module
    docstring); a vector is multiplied factor by factor. ``shape`` is ``H``'s."""

    def __init__(self, *factors):
        self.factors = factors
        self.shape = (factors[0].shape[0], factors[-1].shape[1])

    def __matmul__(self, other):
        if other.ndim == 1:
            for factor in reversed(self.factors):
                other = factor @ other
            return other
        rows = other.T
        for factor in reversed(self.factors):
            rows = rows @ factor.T
        return np.ascontiguousarray(rows.T)

    @property
    def T(self):
        # Hᵀ = F_kᵀ ... F_1ᵀ, the same products
        return ThinProducts(*(factor.T for factor in reversed(self.factors)))
