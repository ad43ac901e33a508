"""The geometry of one quadric ``x^T Q x + w^T x + b = level`` (pure numpy).

Classification used (the affine classification of real quadrics, in ``d``
dimensions). With ``Q`` symmetric, ``r = rank(Q)`` and ``w_N`` the part of
``w`` in the null space of ``Q``:

* ``w_N = 0``: the quadric has a *center* ``c = -Q^+ w / 2`` (a line, plane, ...
  of centers when ``r < d``; the one of minimum norm is reported) and reads
  ``y^T Q y = -b'`` in ``y = x - c``, with ``b' = f(c) - level``.

  - ``b' != 0``, ``Q`` definite and ``-b'`` of the sign of its eigenvalues:
    **ellipsoid** (an ellipse in 2-D); of the other sign: **empty** (no real
    point: the score never reaches the level).
  - ``b' != 0``, ``Q`` indefinite: a **hyperboloid**. Let ``k`` be the number of
    eigenvalues with the sign of ``-b'``; the level set is ``S^{k-1} x R^{r-k}``:
    **two sheets** when ``k = 1`` (so a hyperbola in 2-D has "two sheets", its
    two branches), **one sheet** (connected) when ``k >= 2``.
  - ``b' = 0``: degenerate. ``Q`` semidefinite: the set of centers, a
    **point** (``r = d``), a **double hyperplane** (``r = 1``: the square of
    an affine function) or an **affine subspace**. ``Q`` indefinite: a
    **pair of hyperplanes** when ``r = 2`` (the product of two affine
    functions, e.g. every RPQNN neuron ``(w^T a + b)(u^T a + c)``), else a
    **cone**.
* ``w_N != 0``: no center: a **paraboloid**, **elliptic** when ``Q`` is
  semidefinite, **hyperbolic** when it has eigenvalues of both signs.
* ``Q = 0``: a **hyperplane** (``w != 0``) or **constant** (``w = 0``).

Flat directions the equation does not depend on (``d - r`` with a center,
``d - r - 1`` for a paraboloid) make the surface a *cylinder* over the base
quadric above: then the type is **elliptic cylinder** (base ellipsoid),
**hyperbolic cylinder** (base hyperboloid, ``base_type`` says how many sheets)
or **parabolic cylinder** (base paraboloid); ``n_cylinder_directions`` counts
the flat directions. Zero eigenvalues are those below ``tol`` (default:
``d * eps * max |eigenvalue|``, numpy's rank rule); ``w_N`` and ``b'`` are zero
when below ``1e-9`` relative to the size of the terms they come from.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["QuadricAnalysis", "analyze_quadric"]

HYPERBOLIC_TYPES = (
    "hyperboloid of one sheet",
    "hyperboloid of two sheets",
    "hyperbolic paraboloid",
    "hyperbolic cylinder",
    "cone",
    "pair of hyperplanes",
)
_RELATIVE_ZERO = 1e-9


@dataclass(frozen=True)
class QuadricAnalysis:
    """What the level set ``x^T Q x + w^T x + b = level`` is, and where.

    Attributes
    ----------
    name : str
        Which neuron (e.g. ``"score 0"``, ``"layer 0, neuron 3"``).
    Q : ndarray of shape (d, d)
        The symmetric quadratic coefficients (``x_j x_k`` has coefficient
        ``2 Q[j, k]`` for ``j != k``).
    w : ndarray of shape (d,)
    b : float
    level : float
        The level whose surface is analysed (0: the decision surface of a
        binary score or a ReLU neuron's switching surface).
    feature_names : ndarray of str, shape (d,)
    eigenvalues : ndarray of shape (d,)
        Of ``Q``, in decreasing order.
    axes : ndarray of shape (d, d)
        Principal axes: column ``i`` is the unit eigenvector of
        ``eigenvalues[i]`` (sign chosen so its largest entry is positive).
    inertia : tuple of int
        ``(n_positive, n_negative, n_zero)`` eigenvalues.
    surface_type : str
        See the module docstring for the classification.
    base_type : str
        The type of the base quadric of a cylinder (equal to ``surface_type``
        when there are no flat directions).
    n_cylinder_directions : int
    center : ndarray of shape (d,) or None
        The (minimum-norm) center, or None for a paraboloid / hyperplane.
    center_value : float or None
        ``f(center) - level`` (``b'`` above): in ``y = x - center`` the
        surface is ``y^T Q y = -center_value``.
    semi_axes : ndarray of shape (d,)
        ``sqrt(-center_value / eigenvalue)`` along each axis where that is
        real and finite (the ellipsoid's semi-axis lengths, a hyperboloid's
        real semi-axes), else ``inf`` (zero eigenvalue) or ``nan``.
    """

    name: str
    Q: np.ndarray
    w: np.ndarray
    b: float
    level: float
    feature_names: np.ndarray
    eigenvalues: np.ndarray
    axes: np.ndarray
    inertia: tuple
    surface_type: str
    base_type: str
    n_cylinder_directions: int
    center: object
    center_value: object
    semi_axes: np.ndarray = field(repr=False)

    @property
    def is_hyperbolic(self):
        """True for the types with both curvature signs (saddles, cones)."""
        return self.surface_type in HYPERBOLIC_TYPES or self.base_type in HYPERBOLIC_TYPES

    def value(self, X):
        """``x^T Q x + w^T x + b`` for each row of ``X`` (the neuron's score)."""
        X = np.asarray(X, dtype=np.float64)
        return np.einsum("ni,ij,nj->n", X, self.Q, X) + X @ self.w + self.b

    def top_features(self, axis, n=3):
        """Names and loadings of the ``n`` features that load most on an axis.

        Parameters
        ----------
        axis : int
            Index into ``eigenvalues`` / the columns of ``axes``.
        n : int, default=3

        Returns
        -------
        list of (str, float)
        """
        vector = self.axes[:, axis]
        order = np.argsort(-np.abs(vector), kind="stable")[:n]
        return [(str(self.feature_names[i]), float(vector[i])) for i in order]

    def summary(self, n_axes=3, n_features=3, n_center=8):
        """A few lines of text: type, inertia, center and the main axes.

        Parameters
        ----------
        n_axes : int, default=3
            Axes shown, largest ``|eigenvalue|`` first.
        n_features : int, default=3
            Top-loading features shown per axis.
        n_center : int, default=8
            Center coordinates shown (the largest in absolute value).

        Returns
        -------
        str
        """
        positive, negative, zero = self.inertia
        lines = [
            f"{self.name}: {self.surface_type}"
            + (f" (base: {self.base_type})" if self.base_type != self.surface_type else ""),
            f"  inertia: {positive} positive, {negative} negative, {zero} zero eigenvalues",
        ]
        if self.center is not None:
            # the largest coordinates first when there are many
            order = np.argsort(-np.abs(self.center), kind="stable")[:n_center]
            shown = ", ".join(f"{self.feature_names[i]}={self.center[i]:.3g}" for i in sorted(order))
            more = "" if self.center.size <= n_center else f", ... ({self.center.size - n_center} more)"
            lines.append(f"  center: {shown}{more}")
        order = np.argsort(-np.abs(self.eigenvalues), kind="stable")[:n_axes]
        for i in order:
            loads = ", ".join(f"{name} {value:+.2f}" for name, value in self.top_features(i, n_features))
            lines.append(f"  axis {i}: eigenvalue {self.eigenvalues[i]:+.4g}; {loads}")
        return "\n".join(lines)


def _sign_fixed(vectors):
    """Eigenvectors with their largest-magnitude entry positive (deterministic)."""
    index = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[index, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def analyze_quadric(Q, w, b, *, level=0.0, feature_names=None, name="quadric", tol=None):
    """Classify the level surface ``x^T Q x + w^T x + b = level``.

    Parameters
    ----------
    Q : array-like of shape (d, d)
        Quadratic coefficients (symmetrised if needed).
    w : array-like of shape (d,)
    b : float
    level : float, default=0.0
    feature_names : array-like of str, default=None
        ``x0, x1, ...`` when None.
    name : str, default="quadric"
    tol : float, default=None
        Eigenvalues with ``|lambda| <= tol`` count as zero; None is
        ``d * eps * max |lambda|``.

    Returns
    -------
    QuadricAnalysis

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.inspection import analyze_quadric
    >>> a = analyze_quadric(np.diag([1.0, 4.0]), np.zeros(2), -4.0)
    >>> a.surface_type, a.semi_axes.tolist()
    ('ellipsoid', [1.0, 2.0])
    """
    Q, w = _checked_coefficients(Q, w, b, level)
    d = Q.shape[0]
    feature_names = np.asarray([f"x{i}" for i in range(d)] if feature_names is None else feature_names,
                               dtype=object)
    eigenvalues, vectors = np.linalg.eigh(Q)
    order = np.argsort(-eigenvalues, kind="stable")
    eigenvalues, vectors = eigenvalues[order], _sign_fixed(vectors[:, order])
    if tol is None:
        tol = d * np.finfo(np.float64).eps * (float(np.max(np.abs(eigenvalues))) if d else 0.0)
    zero_mask = np.abs(eigenvalues) <= tol
    n_pos, n_neg = int(np.sum(eigenvalues > tol)), int(np.sum(eigenvalues < -tol))
    n_zero = int(zero_mask.sum())
    # w in the eigenbasis: its null-space part decides center vs paraboloid
    w_eig = vectors.T @ w
    w_null = float(np.linalg.norm(w_eig[zero_mask]))
    semi_axes = np.full(d, np.nan)
    semi_axes[zero_mask] = np.inf
    center = center_value = None
    if n_pos + n_neg == 0:
        surface = base = "hyperplane" if np.linalg.norm(w) > 0 else "constant"
        flat = 0
    elif w_null <= _RELATIVE_ZERO * max(float(np.linalg.norm(w)), 1e-300):
        center, center_value = _center(eigenvalues, vectors, w_eig, ~zero_mask, float(b) - float(level))
        ratio = -center_value / eigenvalues[~zero_mask]
        semi_axes[~zero_mask] = np.sqrt(ratio, where=ratio >= 0, out=np.full(ratio.shape, np.nan))
        flat = n_zero
        surface, base = _centered_type(n_pos, n_neg, flat, center_value)
    else:
        base = "elliptic paraboloid" if (n_pos == 0 or n_neg == 0) else "hyperbolic paraboloid"
        flat = n_zero - 1
        surface = "parabolic cylinder" if flat else base
    return QuadricAnalysis(
        name=name, Q=Q, w=w, b=float(b), level=float(level), feature_names=feature_names,
        eigenvalues=eigenvalues, axes=vectors, inertia=(n_pos, n_neg, n_zero),
        surface_type=surface, base_type=base, n_cylinder_directions=int(flat), center=center,
        center_value=center_value, semi_axes=semi_axes,
    )


def _checked_coefficients(Q, w, b, level):
    """``Q`` symmetrised and ``w`` flat (float64); a ValueError names a bad shape or value."""
    Q = np.asarray(Q, dtype=np.float64)
    Q = 0.5 * (Q + Q.T)
    w = np.asarray(w, dtype=np.float64).reshape(-1)
    d = Q.shape[0]
    if Q.shape != (d, d) or w.shape != (d,):
        raise ValueError(f"Q must be (d, d) and w (d,), got {Q.shape} and {w.shape}.")
    # eigh of a NaN matrix answers NaN eigenvalues, read as "constant":
    # a non-finite quadric has no type.
    for label, value in (("Q", Q), ("w", w), ("b", b), ("level", level)):
        if not np.all(np.isfinite(np.asarray(value, dtype=np.float64))):
            raise ValueError(
                f"{label} has non-finite values (NaN or inf): the quadric is undefined. "
                "Was the model fitted to a diverged (non-finite) solution?"
            )
    return Q, w


def _center(eigenvalues, vectors, w_eig, nonzero, constant):
    """The minimum-norm center ``-Q^+ w / 2`` and ``b' = f(center) - level`` (0 below rounding)."""
    center_eig = np.zeros(vectors.shape[0])
    center_eig[nonzero] = -0.5 * w_eig[nonzero] / eigenvalues[nonzero]
    shift = 0.25 * float(np.sum(w_eig[nonzero] ** 2 / eigenvalues[nonzero]))
    center_value = constant - shift
    if abs(center_value) <= _RELATIVE_ZERO * max(abs(constant), abs(shift), 1e-300):
        center_value = 0.0
    return vectors @ center_eig, center_value


def _centered_type(n_pos, n_neg, flat, center_value):
    """``(surface_type, base_type)`` of a quadric with a center, ``y^T Q y = -center_value``."""
    rank, definite = n_pos + n_neg, n_pos == 0 or n_neg == 0
    if center_value == 0.0:
        # the center alone (times the flat directions), or a cone, which for
        # rank 2 is a pair of hyperplanes (a product of two affine functions,
        # e.g. every RPQNN neuron without power term)
        if definite:
            base = "point" if not flat else ("double hyperplane" if rank == 1 else "affine subspace")
        else:
            base = "pair of hyperplanes" if rank == 2 else "cone"
    elif definite:
        base = "ellipsoid" if (n_pos > 0) == (-center_value > 0) else "empty"
    else:
        k = n_pos if -center_value > 0 else n_neg
        base = "hyperboloid of two sheets" if k == 1 else "hyperboloid of one sheet"
    if flat and base == "ellipsoid":
        return "elliptic cylinder", base
    if flat and base.startswith("hyperboloid"):
        return "hyperbolic cylinder", base
    return base, base
