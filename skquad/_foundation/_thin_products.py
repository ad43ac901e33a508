"""Products of a large matrix with a few columns, in the orientation BLAS runs fastest.

``H @ a`` and ``Hᵀ @ g``, for ``H`` of shape (n, m) with n and m large and ``a``, ``g`` of a
few columns, are taken as ``(aᵀ Hᵀ)ᵀ`` and ``(gᵀ H)ᵀ``: the few columns become the
product's rows. A GEMM kernel fills its output in tiles of many rows by few columns, so an
output of many rows and a few columns leaves most of each tile empty, while a few long
rows fill them; both orientations read ``H`` once. The results are transposed views (no
copy). The figures per BLAS kernel are in the CHANGELOG.
"""

__all__ = ["ThinProducts"]


class ThinProducts:
    """``H`` (2-D ndarray) whose products ``H @ a`` and ``H.T @ g`` are taken with ``a``,
    ``g`` as the product's rows (module docstring). ``shape`` is ``H``'s."""

    def __init__(self, H):
        self.matrix = H
        self.shape = H.shape

    def __matmul__(self, other):
        if other.ndim == 1:
            return self.matrix @ other
        return (other.T @ self.matrix.T).T

    @property
    def T(self):
        return _TransposedThinProducts(self.matrix)


class _TransposedThinProducts:
    """``Hᵀ`` of :class:`ThinProducts`, for ``Hᵀ @ g``."""

    def __init__(self, H):
        self.matrix = H
        self.shape = H.shape[::-1]

    def __matmul__(self, other):
        if other.ndim == 1:
            return self.matrix.T @ other
        return (other.T @ self.matrix).T
