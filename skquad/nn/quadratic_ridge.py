"""Ridge regression on the degree-2 features, without the n x d(d+3)/2 feature matrix.

The features are those of ``PolynomialFeatures(2, include_bias=False)``:
``φ(x) = [x_1, ..., x_d, x_1², x_1 x_2, ..., x_d²]`` (pairs ``a <= b`` in
row-major order), ``D = d (d + 3) / 2`` of them. The model
``y = b + φ(x)ᵀ c`` is ``y = b + wᵀx + xᵀQx`` with ``w`` the first ``d``
coefficients, ``Q_aa = c_aa`` and ``Q_ab = Q_ba = c_ab / 2``, and the
problem is Ridge's::

    minimise  Σ_i s_i (y_i - b - φ(x_i)ᵀ c)² + alpha ||w||² + alpha_q ||c_q||²

(``c = [w, c_q]``: the ``d`` linear and the ``D - d`` quadratic
coefficients; ``alpha_q = alpha`` unless a quadratic penalty is given, and
then it is Ridge's problem) with the intercept ``b`` unpenalised, that is, with ``φ`` and ``y``
centred by their ``s``-weighted means, as :class:`sklearn.linear_model.Ridge`
does. Three exact or convergent ways, all streaming over row blocks so
that at most ``_BLOCK_ELEMENTS`` expanded numbers exist at once:

* ``primal``: the ``D x D`` normal equations, accumulated block by block
  (``O(n D²)`` time, ``O(D²)`` memory; from the distinct degree-4 moments where
  :func:`.quadratic_moments.uses_moments` says so, 0.54 to 0.39 of the SYRK's products, fewer
  with one-hot columns),
  solved by Cholesky;
* ``kernel``: the dual ``(K + alpha I) a = y`` with the ``n x n`` Gram
  ``K = Φ Φᵀ = S + (S ∘ S + (X∘X)(X∘X)ᵀ) / 2``, ``S = X Xᵀ``, computed from
  ``X`` alone (``O(n² d)``); for ``n < D``;
* ``cg``: conjugate gradients on the normal equations, each product a pass
  over the row blocks of ``X`` with the quadratic-form products of quadratic
  logistic regression (``Φ c`` by a triangular ``X U`` product, ``Φᵀ v`` by
  a gram ``Xᵀ diag(v) X``: ``O(n d²)`` time, ``O(D)`` memory), with the
  Jacobi preconditioner; for systems too large to hold.
"""

import functools

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.linalg.lapack
import scipy.sparse
import scipy.sparse.linalg

from .._foundation._runtime import thread_count
from .._foundation._threads import limit_threads
from .._foundation._pair_products import write_pair_products
from .quadratic_moments import moment_normal_equations, two_valued_columns, uses_moments

__all__ = [
    "QuadraticRidgeLeaveOneOut",
    "coefficients_to_model",
    "computes_in_torch",
    "penalty_pairs",
    "degree2_kernel",
    "expansion_size",
    "fit_quadratic_ridge",
    "normal_equations",
    "pairs_of",
    "quadratic_model_scores",
    "solve_normal_equations",
    "weighted_sums",
]

_posv = scipy.linalg.lapack.get_lapack_funcs("posv", (np.zeros(1),))

# Expanded numbers per row block: 2**21 float64 = 16 MB of scratch.
_BLOCK_ELEMENTS = 2**21
# ... for the normal equations' SYRK, whose blocks share one workspace: 2**18 (2 MB), as
# fast a SYRK and an eighth of the pages to fault in.
_GRAM_BLOCK_ELEMENTS = 2**18
# The leave-one-out keeps the weighted features up to this many numbers (64 MB).
_CACHED_ELEMENTS = 2**23


def expansion_size(n_features, allowed=None):
    """``D = d (d + 3) / 2``: the number of degree-2 features (``d`` + the ``allowed`` pairs)."""
    if allowed is not None:
        return n_features + int(np.count_nonzero(np.triu(allowed)))
    return n_features * (n_features + 3) // 2


@functools.lru_cache(maxsize=16)
def _pairs(n_features):
    """``triu_indices(d)``, made once per ``d`` (read-only): a call costs a
    noticeable share of a small fit."""
    rows, cols = np.triu_indices(n_features)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def pairs_of(n_features, allowed=None):
    """The pairs ``(rows, cols)`` of ``φ``: all of them, or the ``allowed`` ones (row-major)."""
    if allowed is None:
        return _pairs(n_features)
    return np.nonzero(np.triu(allowed))


def _dense_blocks(X, width, elements=_BLOCK_ELEMENTS):
    """Row blocks of ``X`` as dense float64 arrays, each with at most ``elements / width`` rows."""
    n = X.shape[0]
    step = max(1, elements // max(1, width))
    for start in range(0, n, step):
        block = X[start : start + step]
        block = block.toarray() if scipy.sparse.issparse(block) else block
        yield start, np.asarray(block, dtype=np.float64)


def _expand(block, rows, cols, extra=0, out=None):
    """``φ`` of a row block: ``[x, x_a x_b (a <= b)]`` (:func:`write_pair_products`).

    Returned as the transposed view of a ``(D + extra, n)`` C-order array (or of ``out``, of
    that shape): each feature's products are written contiguously (into the rows of a
    C-order ``(n, D)`` array they would be strided writes), and ``features.T @ features`` is
    still one SYRK. The ``extra`` last columns are left for the caller.
    """
    n, d = block.shape
    if out is None:
        out = np.empty((d + rows.shape[0] + extra, n))
    columns = np.ascontiguousarray(block.T)
    out[:d] = columns
    # fewer pairs than all: the allowed ones of interaction constraints
    write_pair_products(columns, out[d : d + rows.shape[0]],
                        None if rows.shape[0] == d * (d + 1) // 2 else (rows, cols))
    return out.T


def _feature_sums(X, weight, rows, cols):
    """``Σ_i w_i φ(x_i)``, from ``Xᵀ w`` and ``Xᵀ diag(w) X``."""
    if scipy.sparse.issparse(X):
        linear = np.asarray(X.T @ weight).ravel()
        second = np.asarray((X.T @ X.multiply(weight[:, None])).todense())
    else:
        X = np.asarray(X, dtype=np.float64)
        linear = X.T @ weight
        # (unit weights, the usual case: no weighted copy of X)
        second = X.T @ (X if np.all(weight == 1.0) else X * weight[:, None])
    return np.concatenate([linear, second[rows, cols]])


def _feature_means(X, weight, rows, cols):
    """The ``weight``-weighted mean of ``φ``."""
    return _feature_sums(X, weight, rows, cols) / weight.sum()


def weighted_sums(X, Y, weight, allowed=None):
    """``(Σ w, Σ w φ(x), Σ w y)`` of a row block: the intercept's statistics.

    Sums over rows, so the statistics of row blocks add up to those of the
    whole data (what a data-parallel fit reduces, :mod:`skquad._dask`).
    ``allowed``: the interaction constraints' pairs only (as everywhere here).
    """
    weight = np.asarray(weight, dtype=np.float64)
    rows, cols = pairs_of(X.shape[1], allowed)
    return (
        weight.sum(),
        _feature_sums(X, weight, rows, cols),
        weight @ np.asarray(Y, dtype=np.float64),
    )


def normal_equations(X, Y, weight, mean, y_mean, allowed=None):
    """``G = Σ w (φ - m)(φ - m)ᵀ`` and ``R = Σ w (φ - m)(y - ȳ)ᵀ`` over row blocks.

    ``mean`` and ``y_mean`` are the weighted means of ``φ`` and ``y`` (zeros
    without an intercept). Sums over rows: the ``(G, R)`` of row blocks add up
    to the whole data's. ``O(n D²)`` time, ``O(D²)`` memory.
    """
    D = mean.shape[0]
    rows, cols = pairs_of(X.shape[1], allowed)
    Y = np.asarray(Y, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    if uses_moments(*X.shape, allowed):
        return moment_normal_equations(X, Y, weight, mean, y_mean, (rows, cols), _dense_blocks)
    root = None if np.all(weight == 1.0) else np.sqrt(weight)
    centre = np.concatenate([mean, y_mean])
    # [φ - m, y - ȳ] (times √w) in one buffer: A.T @ A of it is one BLAS SYRK, half the
    # flops of a GEMM, and its off-diagonal block is R, without a second pass over φ.
    A = np.zeros((D + Y.shape[1], D + Y.shape[1]))
    workspace = None  # one for every block: a fresh one would be faulted in page by page each time
    for start, block in _dense_blocks(X, D + Y.shape[1], _GRAM_BLOCK_ELEMENTS):
        stop = start + block.shape[0]
        if workspace is None:  # the first block is the longest
            workspace = np.empty((D + Y.shape[1], block.shape[0]))
        features = _expand(block, rows, cols, out=workspace[:, : block.shape[0]])
        features[:, D:] = Y[start:stop]
        features -= centre
        if root is not None:
            features *= root[start:stop, None]
        A += features.T @ features
    return A[:D, :D], A[:D, D:]


def solve_normal_equations(G, R, mean, y_mean, alpha, quadratic_alpha=None, n_features=0):
    """Ridge's ``(coefficients, intercept)`` from :func:`normal_equations`' ``G`` and ``R``.

    ``quadratic_alpha`` penalises the features after the first ``n_features``
    (the linear ones; the rest are the quadratic ones, allowed pairs or all).
    """
    if quadratic_alpha is not None and n_features == 0:
        raise ValueError("solve_normal_equations: quadratic_alpha needs n_features.")
    coefficients = _solve_symmetric(G, R, alpha, quadratic_alpha, n_features)
    return coefficients, y_mean - mean @ coefficients


def penalty_pairs(alpha, quadratic_alpha, n_targets):
    """``(alpha, alpha_q)`` per target, shape (n_targets, 2); ``alpha_q`` None: ``alpha``."""
    linear = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_targets,))
    quadratic = linear if quadratic_alpha is None else np.broadcast_to(
        np.asarray(quadratic_alpha, dtype=np.float64), (n_targets,))
    return np.column_stack([linear, quadratic])


def _transpose_product(X, V, rows, cols):
    """``Φᵀ V`` for ``V`` of shape (n, k), from ``Xᵀ V`` and ``Xᵀ diag(v) X``."""
    out = []
    for j in range(V.shape[1]):
        if scipy.sparse.issparse(X):
            linear = np.asarray(X.T @ V[:, j]).ravel()
            second = np.asarray((X.T @ X.multiply(V[:, j][:, None])).todense())
        else:
            linear = X.T @ V[:, j]
            second = X.T @ (X * V[:, j][:, None])
        out.append(np.concatenate([linear, second[rows, cols]]))
    return np.column_stack(out)


def _solve_symmetric(matrix, rhs, alpha, quadratic_alpha=None, n_linear=0):
    """``(matrix + P)⁻¹ rhs`` per column, Cholesky or least squares; ``P`` diagonal: ``alpha`` (per
    column), or with ``quadratic_alpha`` that on all but the first ``n_linear`` entries."""
    pairs = penalty_pairs(alpha, quadratic_alpha, rhs.shape[1])
    out = np.empty_like(rhs)
    diagonal = np.diag_indices(matrix.shape[0])
    penalty = np.empty(matrix.shape[0])
    # distinct pairs in plain Python: np.unique(axis=0) compares structured views, whose
    # C code turns an interrupt landing inside it into a TypeError
    for pair in dict.fromkeys(map(tuple, np.asarray(pairs).tolist())):
        columns = np.flatnonzero(np.all(pairs == pair, axis=1))
        penalty[:n_linear], penalty[n_linear:] = pair
        system = matrix.copy()
        system[diagonal] += penalty
        # LAPACK's POSV directly: scipy.linalg.solve also estimates the condition number, which
        # costs more than the solve. Under the thread rule for the solve's own flops.
        with limit_threads(None, blas=thread_count("auto", "cpu", matrix.shape[0] ** 3 / 3.0)):
            # (system.T: the Fortran-ordered view LAPACK takes without a copy; it is symmetric)
            _, solution, info = _posv(system.T, rhs[:, columns], lower=True, overwrite_a=True)
        if info == 0:
            out[:, columns] = solution
        else:
            # alpha = 0 with collinear features: the minimum-norm solution, as Ridge.
            system = matrix.copy()
            system[diagonal] += penalty
            out[:, columns] = scipy.linalg.lstsq(system, rhs[:, columns])[0]
    return out


def degree2_kernel(X, cross_weight=2.0, allowed=None, quadratic_scale=1.0):
    """The degree-2 Gram ``K = S + T + (S ∘ S - T) / c`` of dense ``X``, ``O(n² d)``.

    ``S = X Xᵀ``, ``T = (X∘X)(X∘X)ᵀ``: the inner products of the features
    ``[x, x_a², sqrt(2/c) x_a x_b (a < b)]`` (``Σ_{a<b} x_a x_b x'_a x'_b =
    (S² - T) / 2``). ``c = 2`` gives this module's ``φ`` (the module
    docstring's ``K``); quadratic logistic regression's dual solver
    (:mod:`.quadratic_dual`) passes its penalty's ``cross_weight``.

    ``allowed`` (symmetric boolean ``d x d``, interaction constraints) keeps
    the features of the allowed pairs only: every cross pair and no square
    is ``S + (S ∘ S - T) / c`` (``O(n² d)``); otherwise the allowed pairs'
    features are formed in blocks, ``O(n² P)`` for ``P`` pairs.

    ``quadratic_scale`` multiplies the quadratic features' part, ``S + s (K - S)``: the
    kernel of the quadratic features scaled by ``sqrt(s)``, whose coefficients a penalty
    ``1 / s`` times the linear ones' weighs alike.
    """
    if allowed is not None:
        return _constrained_kernel(X, cross_weight, allowed, quadratic_scale)
    S = X @ X.T
    # S + (S ∘ S + (c - 1) T) / c: c = 2 gives the ridge kernel's S + 0.5 (S ∘ S + T), c = 1 no T
    quadratic = S * S
    if cross_weight != 1.0:
        squares = X * X
        quadratic += (cross_weight - 1.0) * (squares @ squares.T)
    quadratic *= quadratic_scale / cross_weight
    return S + quadratic


def _constrained_kernel(X, cross_weight, allowed, quadratic_scale):
    """:func:`degree2_kernel` on the ``allowed`` pairs' features only."""
    S = X @ X.T
    off_diagonal = ~np.eye(X.shape[1], dtype=bool)
    if not np.diagonal(allowed).any() and allowed[off_diagonal].all():
        squares = X * X
        return S + (S * S - squares @ squares.T) * (quadratic_scale / cross_weight)
    rows, cols = np.nonzero(np.triu(allowed))
    scale = np.sqrt(np.where(rows == cols, 1.0, 2.0 / cross_weight) * quadratic_scale)
    step = max(1, _BLOCK_ELEMENTS // max(1, X.shape[0]))
    for start in range(0, rows.shape[0], step):
        pairs = slice(start, start + step)
        features = X[:, rows[pairs]] * X[:, cols[pairs]] * scale[pairs]
        S += features @ features.T
    return S


def _centred_kernel(dense, weight, fit_intercept, allowed=None, quadratic_scale=1.0):
    """``Φ Φᵀ`` from ``X`` (the module docstring's formula), centred by the weighted mean of ``φ``.

    ``quadratic_scale`` ``γ``: the kernel of ``[x, γ x_a x_b]``, ``S + γ² (K - S)``
    (``K`` that of the ``allowed`` pairs' features).
    """
    if quadratic_scale == 0.0:
        K = dense @ dense.T
    else:
        K = degree2_kernel(dense, 2.0, allowed, quadratic_scale**2)
    if fit_intercept:
        # Centring φ by its weighted mean: K_c = (I - 1 w̄ᵀ) K (I - w̄ 1ᵀ).
        share = weight / weight.sum()
        k_bar = K @ share
        K = K - k_bar[:, None] - k_bar[None, :] + share @ k_bar
    return K


def _quadratic_scales(D, n_features, scale):
    """``diag(Γ)``: 1 on the ``d`` linear features, ``scale`` on the quadratic ones."""
    out = np.full(D, float(scale))
    out[:n_features] = 1.0
    return out


def _kernel_solve(dense, Y_centred, weight, alpha, quadratic_alpha, fit_intercept, mean,
                  allowed=None):
    """The dual route: per penalty pair, ridge ``alpha`` on ``[x, γ φ_q]``, ``γ² = alpha / alpha_q``.

    Ridge on the scaled features with ``alpha`` penalises ``w`` by ``alpha``
    and the quadratic coefficients ``c_q = γ c'_q`` by ``alpha / γ²``, so
    ``c = Γ² Φ_cᵀ a`` with ``(Γ Φ_c Φ_cᵀ Γ + alpha I) a = ỹ`` (weighted).
    """
    n, d = dense.shape
    rows, cols = pairs_of(d, allowed)
    root = np.sqrt(weight)
    coefficients = np.empty((mean.shape[0], Y_centred.shape[1]))
    pairs = penalty_pairs(alpha, quadratic_alpha, Y_centred.shape[1])
    scales = [1.0] if quadratic_alpha is None else np.unique(
        np.sqrt(pairs[:, 0] / pairs[:, 1]))
    for scale in scales:
        columns = (slice(None) if quadratic_alpha is None
                   else np.flatnonzero(np.sqrt(pairs[:, 0] / pairs[:, 1]) == scale))
        K = _centred_kernel(dense, weight, fit_intercept, allowed, scale)
        dual = _solve_symmetric(root[:, None] * K * root[None, :],
                                root[:, None] * Y_centred[:, columns], pairs[columns, 0])
        V = root[:, None] * dual
        primal = _transpose_product(dense, V, rows, cols) - np.outer(mean, V.sum(axis=0))
        if scale != 1.0:
            primal *= _quadratic_scales(mean.shape[0], d, scale)[:, None] ** 2
        coefficients[:, columns] = primal
    return coefficients


def fit_quadratic_ridge(X, Y, weight, alpha, *, quadratic_alpha=None, fit_intercept=True,
                        solver="primal", tol=1e-4, max_iter=None, allowed=None):
    """Ridge coefficients of the degree-2 features.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    Y : ndarray of shape (n_samples, n_targets)
    weight : ndarray of shape (n_samples,)
        Non-negative sample weights.
    alpha : float or ndarray of shape (n_targets,)
    quadratic_alpha : float, ndarray of shape (n_targets,) or None, default=None
        The penalty of the quadratic coefficients; None: ``alpha`` (Ridge's
        problem). The ``"kernel"`` route needs both positive.
    fit_intercept : bool, default=True
    solver : {"primal", "kernel", "cg"}, default="primal"
    tol : float, default=1e-4
        ``cg``: relative residual at which it stops.
    max_iter : int, default=None
        ``cg``: largest number of iterations (None: scipy's default, 10 D).
    allowed : ndarray of shape (n_features, n_features), bool, optional
        Interaction constraints: ``φ`` holds the allowed pairs only
        (``D = d + their number``); None, all of them.

    Returns
    -------
    coefficients : ndarray of shape (D, n_targets)
    intercept : ndarray of shape (n_targets,)
    n_iter : ndarray of shape (n_targets,) or None
        ``cg`` only.
    """
    n, d = X.shape
    rows, cols = pairs_of(d, allowed)
    D = expansion_size(d, allowed)
    Y = np.asarray(Y, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    if computes_in_torch(X) and solver == "primal":  # the O(n D²) part where X lies
        G, R, mean, y_mean = _tensor_normal_equations(X, Y, weight, rows, cols, fit_intercept)
        coefficients = _solve_symmetric(G, R, alpha, quadratic_alpha, d)
        return coefficients, y_mean - mean @ coefficients, None
    if hasattr(X, "aminmax"):  # a tensor on the host (a view on the CPU): NumPy's routes
        X = X.cpu().numpy()
    if fit_intercept:
        mean = _feature_means(X, weight, rows, cols)
        y_mean = weight @ Y / weight.sum()
    else:
        mean, y_mean = np.zeros(D), np.zeros(Y.shape[1])
    Y_centred = Y - y_mean
    n_iter = None

    if solver == "kernel":
        dense = X.toarray() if scipy.sparse.issparse(X) else np.asarray(X, dtype=np.float64)
        coefficients = _kernel_solve(dense, Y_centred, weight, alpha, quadratic_alpha,
                                     fit_intercept, mean, allowed)
    elif solver == "primal":
        G, R = normal_equations(X, Y, weight, mean, y_mean, allowed)
        coefficients = _solve_symmetric(G, R, alpha, quadratic_alpha, d)
    elif solver == "cg":
        penalties = penalty_pairs(alpha, quadratic_alpha, Y.shape[1])
        coefficients, n_iter = _conjugate_gradients(
            X, Y_centred, weight, penalties, mean, rows, cols, tol, max_iter
        )
    else:  # pragma: no cover - validated by the estimator
        raise ValueError(f"Unknown solver {solver!r}.")
    intercept = y_mean - mean @ coefficients
    return coefficients, intercept, n_iter


def computes_in_torch(X):
    """Whether a torch ``X``'s normal equations and scores are computed in torch: off the CPU
    (on it NumPy's SYRK and einsum on a view of the tensor are the faster)."""
    return hasattr(X, "aminmax") and not X.is_cpu


def _tensor_normal_equations(X, Y, weight, rows, cols, fit_intercept):
    """``(G, R, mean, y_mean)`` of :func:`normal_equations` for a torch ``X``, computed on its
    device in float64 over the same row blocks; returned as NumPy (``D x D`` and smaller)."""
    import torch

    as64 = lambda array: torch.as_tensor(array, dtype=torch.float64, device=X.device)
    X, Y, weight = X.to(torch.float64), as64(Y), as64(weight)
    rows, cols = torch.tensor(rows, device=X.device), torch.tensor(cols, device=X.device)
    D, total = X.shape[1] + rows.shape[0], weight.sum()
    mean, y_mean = torch.zeros(D, dtype=torch.float64, device=X.device), torch.zeros_like(Y[0])
    if fit_intercept:
        mean = torch.cat([X.T @ weight, (X.T @ (X * weight[:, None]))[rows, cols]]) / total
        y_mean = weight @ Y / total
    G, R = torch.zeros_like(mean[:, None] * mean), torch.zeros_like(mean[:, None] * y_mean)
    root, step = weight.sqrt(), max(1, _BLOCK_ELEMENTS // max(1, D))
    for start in range(0, X.shape[0], step):
        block, scale = X[start : start + step], root[start : start + step, None]
        features = (torch.cat([block, block[:, rows] * block[:, cols]], dim=1) - mean) * scale
        G += features.T @ features
        R += features.T @ (scale * (Y[start : start + step] - y_mean))
    return tuple(array.cpu().numpy() for array in (G, R, mean, y_mean))


def _conjugate_gradients(X, Y_centred, weight, penalties, mean, rows, cols, tol, max_iter):
    """CG per target on ``(Φ_cᵀ W Φ_c + P) c = Φ_cᵀ W y_c``, ``P`` the target's penalty pair."""
    D = mean.shape[0]
    d = X.shape[1]
    if scipy.sparse.issparse(X):
        normal_product, diagonal, R = _expanded_normal_operator(
            X, Y_centred, weight, mean, rows, cols
        )
    else:
        normal_product, diagonal, R = _matrix_free_normal_operator(
            np.asarray(X, dtype=np.float64), Y_centred, weight, mean, rows, cols
        )
    coefficients = np.zeros_like(R)
    n_iter = np.zeros(R.shape[1], dtype=np.int64)
    for k, (linear, quadratic) in enumerate(penalties):
        value = np.full(D, quadratic)
        value[:d] = linear
        counter = [0]

        def count(_, counter=counter):
            counter[0] += 1

        operator = scipy.sparse.linalg.LinearOperator(
            (D, D), matvec=lambda v, value=value: normal_product(v) + value * v, dtype=np.float64
        )
        preconditioner = scipy.sparse.linalg.LinearOperator(
            (D, D), matvec=lambda v, value=value: v / np.maximum(diagonal + value, 1e-300),
            dtype=np.float64,
        )
        coefficients[:, k], _ = scipy.sparse.linalg.cg(
            operator, R[:, k], rtol=tol, atol=0.0, maxiter=max_iter, M=preconditioner,
            callback=count,
        )
        n_iter[k] = counter[0]
    return coefficients, n_iter


def _expanded_normal_operator(X, Y_centred, weight, mean, rows, cols):
    """``(c -> Φ_cᵀ W Φ_c c, diag(Φ_cᵀ W Φ_c), Φ_cᵀ W y_c)`` over expanded row blocks (sparse ``X``)."""
    D = mean.shape[0]

    def normal_product(vector):
        out = np.zeros(D)
        for start, block in _dense_blocks(X, D):
            features = _expand(block, rows, cols) - mean
            out += features.T @ (weight[start : start + block.shape[0]] * (features @ vector))
        return out

    diagonal = np.zeros(D)
    R = np.zeros((D, Y_centred.shape[1]))
    for start, block in _dense_blocks(X, D):
        features = _expand(block, rows, cols) - mean
        w = weight[start : start + block.shape[0]]
        diagonal += w @ (features * features)
        R += features.T @ (w[:, None] * Y_centred[start : start + block.shape[0]])
    return normal_product, diagonal, R


def _matrix_free_normal_operator(X, Y_centred, weight, mean, rows, cols):
    """:func:`_expanded_normal_operator` from products with ``X`` alone, never ``φ``.

    The quadratic-form engine of quadratic logistic regression applied to the
    normal equations: with ``c = [w, U]`` (``U`` the upper-triangular
    coefficients of the pairs), ``Φ c = X w + rowsum((X U) ∘ X)`` (``X U`` a
    triangular product, BLAS TRMM) and ``Φᵀ v = [Xᵀ v, (Xᵀ diag(v) X)_{a<=b}]``
    (a gram). Each product costs ``O(n d²)`` in BLAS, where the expanded
    blocks cost ``O(n D)`` memory traffic plus the expansion itself, in
    ``O(chunk d + d²)`` scratch. The centring is a rank-one correction:
    ``Φ_c c = Φ c - (mᵀ c) 1`` and ``Φ_cᵀ v = Φᵀ v - m (1ᵀ v)``.
    """
    n, d = X.shape
    trmm = scipy.linalg.blas.get_blas_funcs("trmm", (X,))
    step = max(1, _BLOCK_ELEMENTS // max(1, d))
    chunks = [(start, min(start + step, n)) for start in range(0, n, step)]

    def transpose_product(values_of_chunk):
        """``Φ_cᵀ v`` for ``v`` given chunk by chunk."""
        linear = np.zeros(d)
        gram = np.zeros((d, d))
        total = 0.0
        for start, stop in chunks:
            block = X[start:stop]
            v = values_of_chunk(start, stop, block)
            linear += v @ block
            gram += (block * v[:, None]).T @ block
            total += v.sum()
        return np.concatenate([linear, gram[rows, cols]]) - mean * total

    def normal_product(vector):
        upper = np.zeros((d, d))
        upper[rows, cols] = vector[d:]
        lower = upper.T  # Fortran order: TRMM reads it without a copy
        shift = mean @ vector

        def weighted_scores(start, stop, block):
            quadratic = np.einsum("ij,ij->i", trmm(1.0, lower, block.T, lower=1).T, block)
            return weight[start:stop] * (quadratic + block @ vector[:d] - shift)

        return transpose_product(weighted_scores)

    # Jacobi: diag = Σ w φ² - (Σ w) m² (m is the w-weighted mean, or 0): the
    # pairs' Σ w x_a² x_b² is the gram of X ∘ X.
    squares = np.zeros((d, d))
    linear_squares = np.zeros(d)
    for start, stop in chunks:
        block = X[start:stop] ** 2
        w = weight[start:stop]
        linear_squares += w @ block
        squares += (block * w[:, None]).T @ block
    centred = bool(np.any(mean))
    diagonal = np.concatenate([linear_squares, squares[rows, cols]])
    if centred:
        diagonal -= weight.sum() * mean**2
    R = np.column_stack([
        transpose_product(lambda start, stop, block, j=j: weight[start:stop] * Y_centred[start:stop, j])
        for j in range(Y_centred.shape[1])
    ])
    return normal_product, np.maximum(diagonal, 0.0), R


def _distinct_features(X, C, rows, cols):
    """``(columns, column_of)``: the features the leave-one-out keeps (ascending), and each
    feature's position among them (-1: dropped).

    Exact structure, found on the data: a feature identically zero in ``Φ_w`` (its diagonal of
    ``C = Φ_wᵀ Φ_w`` is 0: two levels of one categorical) is dropped, and the square of a
    column of zeros and ones, which is that column, goes with it. The ridge problem depends
    on the features only through ``Φ_w Γ² Φ_wᵀ``, so equal features merge into one whose
    ``Γ²`` is theirs summed, and a zero one changes nothing and gets the coefficient 0.
    """
    d, D = X.shape[1], C.shape[0]
    column_of = np.arange(D)
    binary = np.zeros(d, dtype=bool)
    columns, low, high, _ = two_valued_columns(X, _dense_blocks)
    if columns.size:
        binary[columns] = np.isin(low, (0.0, 1.0)) & np.isin(high, (0.0, 1.0))
    square = rows == cols
    squares = d + np.flatnonzero(square)  # the features x_a², in the pairs' order
    merged = binary[rows[square]]
    column_of[squares[merged]] = rows[square][merged]
    column_of[np.diag(C) == 0.0] = -1
    if not np.any(column_of == np.arange(D)):
        column_of[0] = 0  # every feature zero (one row holds all the weight): one column stays
    columns = np.flatnonzero(column_of == np.arange(D))
    position = np.full(D, -1)
    position[columns] = np.arange(columns.size)
    column_of = np.where(column_of >= 0, position[np.maximum(column_of, 0)], -1)
    return columns, column_of


def _eigh(matrix):
    """Eigenvalues and vectors of a symmetric matrix it may overwrite: LAPACK's divide and
    conquer (``syevd``), the fastest of scipy's drivers for all the vectors."""
    return scipy.linalg.eigh(matrix, driver="evd", overwrite_a=True, check_finite=False)


def _unit_errors(residual, denominator, weighted):
    """``residual / denominator`` (n, k, A) by (n, A); 0 on rows without weight and where the
    denominator is zero to rounding (leverage one: the prediction left out is undetermined)."""
    tiny = 64 * np.finfo(np.float64).eps
    kept = (denominator > tiny) & weighted[:, None]
    out = np.zeros_like(residual)
    np.divide(residual, denominator[:, None, :], out=out,
              where=np.broadcast_to(kept[:, None, :], residual.shape))
    return out


def coefficients_to_model(coefficients, n_features, allowed=None):
    """``(coef, Q)`` from degree-2 coefficients of shape (D, n_targets).

    Returns ``coef`` of shape (n_targets, d) and ``Q`` of shape
    (n_targets, d, d), symmetric, with ``xᵀQx`` the quadratic part (zero
    outside ``allowed``, whose pairs the coefficients are).
    """
    rows, cols = pairs_of(n_features, allowed)
    coef = coefficients[:n_features].T
    Q = np.zeros((coefficients.shape[1], n_features, n_features))
    Q[:, rows, cols] = coefficients[n_features:].T
    Q = 0.5 * (Q + np.transpose(Q, (0, 2, 1)))
    return coef, Q


def quadratic_model_scores(X, Q, coef, intercept):
    """``xᵀ Q_k x + coef_kᵀ x + intercept_k`` in row blocks, shape (n_samples, n_targets)."""
    n, d = X.shape
    out = np.empty((n, Q.shape[0]))
    for start, block in _dense_blocks(X, d * Q.shape[0] + d):
        quadratic = np.einsum("nk,tkl,nl->nt", block, Q, block, optimize=True)
        out[start : start + block.shape[0]] = quadratic + block @ coef.T + intercept
    return out


class QuadraticRidgeLeaveOneOut:
    """Exact leave-one-out errors of the degree-2 ridge problem for many ``alpha`` at once.

    :class:`sklearn.linear_model.RidgeCV`'s efficient leave-one-out
    (Rifkin & Lippert, "Notes on Regularized Least Squares", 2007) on the
    features ``φ`` of this module, without the ``n x D`` feature matrix. With
    ``Φ_w = diag(√s) (Φ - 1 mᵀ)`` and ``ỹ = √s (y - ȳ)`` (``m``, ``ȳ`` the
    ``s``-weighted means, zero without an intercept), one eigendecomposition
    serves every ``alpha``:

    * ``"gram"`` (``n <= D``): ``Φ_w Φ_wᵀ = Q Λ Qᵀ``, the ``n x n`` kernel
      from ``X`` alone (``O(n² d + n³)``); ``c = Q (Λ + α)⁻¹ Qᵀ ỹ``,
      ``looe = c / diag(Q (Λ + α)⁻¹ Qᵀ)``;
    * ``"cov"`` (``n > D``): ``Φ_wᵀ Φ_w = V Λ Vᵀ``, the ``D x D`` normal
      matrix accumulated over row blocks (``O(n D² + D³)``);
      ``H⁻¹ = V (Λ + α)⁻¹ Vᵀ``, ``α looe = (ỹ - Φ_w H⁻¹ Φ_wᵀ ỹ) /
      (1 - diag(Φ_w H⁻¹ Φ_wᵀ))``, the diagonal for all alphas in one more
      pass over the row blocks of ``Φ_w V``. Only distinct nonzero features
      enter (:func:`_distinct_features`: with one-hot columns, a dummy's
      square is the dummy and two levels' product is zero), which changes
      neither the errors nor the coefficients.

    :meth:`set_quadratic_scale` ``γ`` scales the quadratic features
    (``Φ Γ``, ``Γ = diag(1, γ)``): ridge ``alpha`` on them is the problem
    with ``alpha_q = alpha / γ²``, one more eigendecomposition per ``γ``.

    With an intercept both get RidgeCV's correction of the diagonal,
    ``d -= G⁻¹√s ∘ √s / Σs``. The errors are those of the weighted problem
    (scaled by ``√s``).

    ``leave_out`` says what one left-out unit is. ``"row"`` (RidgeCV's):
    the whole row ``i``, error ``r_i / (1 - s_i h_i)``. ``"unit"``: one unit
    of its weight, ``min(s_i, 1)``, error ``r_i / (1 - min(s_i, 1) h_i)``;
    ``h_i = φ_iᵀ (Φᵀ S Φ + P)⁻¹ φ_i`` is the unweighted leverage (with the
    intercept's ``1 / Σs``) and ``r_i`` the residual. Removing weight ``u``
    from row ``i`` is the rank-one downdate ``A - u φ_i φ_iᵀ`` of
    ``A = Φᵀ S Φ + P``, so (Sherman-Morrison) the row's new residual is
    ``r_i / (1 - u h_i)``; with integer weights, ``s_i`` copies each with
    that error, this is RidgeCV's leave-one-out on the data with every row
    repeated ``s_i`` times, and zero-weight rows contribute nothing (a
    weighted fit equals the fit on repeated rows, its selection too). Rows
    whose leverage is one (``1 - u h_i`` zero to rounding: nothing else
    determines their prediction) get error 0 under ``"unit"``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    Y : ndarray of shape (n_samples, n_targets)
    weight : ndarray of shape (n_samples,)
    fit_intercept : bool, default=True
    mode : {"gram", "cov"}, default="gram"
    leave_out : {"row", "unit"}, default="row"
    allowed : ndarray of shape (n_features, n_features), bool, optional
        Interaction constraints (see :func:`fit_quadratic_ridge`).
    """

    def __init__(self, X, Y, weight, *, fit_intercept=True, mode="gram", leave_out="row",
                 allowed=None):
        n, d = X.shape
        self._X = X
        self._features = None
        self._columns = None  # "cov": the features kept, and each feature's kept column
        self._rows, self._cols = pairs_of(d, allowed)
        self.mode = mode
        self.leave_out = leave_out
        D = expansion_size(d, allowed)
        Y = np.asarray(Y, dtype=np.float64)
        weight = np.asarray(weight, dtype=np.float64)
        self._root = np.sqrt(weight)
        self._weight_sum = weight.sum()
        self.fit_intercept = fit_intercept
        if fit_intercept:
            self._mean = _feature_means(X, weight, self._rows, self._cols)
            self.y_mean = weight @ Y / self._weight_sum
        else:
            self._mean, self.y_mean = np.zeros(D), np.zeros(Y.shape[1])
        # ỹ with √s appended as one more column: the intercept correction
        # needs G⁻¹√s (or Φ_w H⁻¹ Φ_wᵀ √s), computed alongside the targets.
        self._rhs = np.column_stack([self._root[:, None] * (Y - self.y_mean), self._root])
        if mode == "gram":
            self._dense = X.toarray() if scipy.sparse.issparse(X) else np.asarray(X, dtype=np.float64)
            # The linear and quadratic kernels apart, weighted: K(γ) = S + γ² (K - S).
            K = self._root[:, None] * _centred_kernel(
                self._dense, weight, fit_intercept, allowed) * self._root[None, :]
            self._linear = self._root[:, None] * _centred_kernel(
                self._dense, weight, fit_intercept, None, 0.0) * self._root[None, :]
            self._quadratic = K - self._linear
        elif mode == "cov":
            C = np.zeros((D, D))
            projected = np.zeros((D, self._rhs.shape[1]))
            self._scales = np.ones(D)
            # Φ_w kept when small (the passes of every scale then skip the expansion).
            kept = np.empty((n, D)) if n * D <= _CACHED_ELEMENTS else None
            for rows, features in self._weighted_feature_blocks():
                C += features.T @ features
                projected += features.T @ self._rhs[rows]
                if kept is not None:
                    kept[rows] = features
            self._columns = _distinct_features(X, C, self._rows, self._cols)
            columns = self._columns[0]
            self._cov, self._cov_projected = C[np.ix_(columns, columns)], projected[columns]
            self._features = None if kept is None else kept[:, columns]
        else:  # pragma: no cover - validated by the estimator
            raise ValueError(f"Unknown mode {mode!r}.")
        self.set_quadratic_scale(1.0)

    def set_quadratic_scale(self, scale):
        """Decompose the problem on ``[x, γ φ_q]``: ``alpha`` then penalises ``c_q`` by ``alpha / γ²``.

        One eigendecomposition per ``γ``; :meth:`errors` and
        :meth:`coefficients` then serve every ``alpha`` of that scale.
        """
        if getattr(self, "quadratic_scale", None) == float(scale):
            return self  # decomposed already
        self.quadratic_scale = float(scale)
        self._scales = _quadratic_scales(self._mean.shape[0], self._X.shape[1], scale)
        if self.mode == "cov":  # a kept column's scale: its features' Γ² summed (_distinct_features)
            columns, column_of = self._columns
            merged = column_of >= 0
            self._scales = np.sqrt(np.bincount(column_of[merged], weights=self._scales[merged] ** 2,
                                               minlength=columns.size))
        if self.mode == "gram":
            K = self._linear + scale**2 * self._quadratic
            self.eigenvalues, self._vectors = _eigh(K)
            del K
            self._projected = self._vectors.T @ self._rhs
        else:
            C = self._scales[:, None] * self._cov * self._scales[None, :]
            self.eigenvalues, self._vectors = _eigh(C)
            del C
            # Φ_wᵀ [ỹ, √s] in the eigenbasis.
            self._projected = self._vectors.T @ (self._scales[:, None] * self._cov_projected)
        return self

    def _weighted_feature_blocks(self):
        """Row blocks of ``Φ_w`` (never more than ``_BLOCK_ELEMENTS`` numbers), or the kept ``Φ_w``."""
        if self._features is not None:
            yield slice(None), self._features
            return
        D = self._mean.shape[0]
        for start, block in _dense_blocks(self._X, D):
            rows = slice(start, start + block.shape[0])
            features = _expand(block, self._rows, self._cols) - self._mean
            if self._columns is not None:
                features = features[:, self._columns[0]]
            features *= self._root[rows, None]
            yield rows, features

    def decomposition(self):
        """The current scale's decomposition, for :meth:`restore` (no copy)."""
        return (self.quadratic_scale, self._scales, self.eigenvalues, self._vectors,
                self._projected)

    def restore(self, decomposition):
        """Return to a scale decomposed before, as :meth:`decomposition` gave it."""
        (self.quadratic_scale, self._scales, self.eigenvalues, self._vectors,
         self._projected) = decomposition
        return self

    def errors(self, alphas):
        """Leave-one-out errors for every alpha.

        Parameters
        ----------
        alphas : ndarray of shape (n_alphas,)
            Positive penalties.

        Returns
        -------
        looe : ndarray of shape (n_samples, n_targets, n_alphas)
            ``√s_i`` times the error on sample ``i`` of the model fitted
            without it (``leave_out="unit"``: without one unit of its weight).
        """
        alphas = np.asarray(alphas, dtype=np.float64)
        inverse = 1.0 / (self.eigenvalues[:, None] + alphas[None, :])  # (r, A)
        n_targets = self._rhs.shape[1] - 1
        # The products for all alphas at once: (r, k + 1, A).
        scaled = self._projected[:, :, None] * inverse[:, None, :]
        if self.mode == "gram":
            n = self._vectors.shape[0]
            # c = G⁻¹ [ỹ, √s] and diag(G⁻¹), over row chunks of Q.
            values = np.empty((n, n_targets + 1, alphas.shape[0]))
            diagonal = np.empty((n, alphas.shape[0]))
            step = max(1, _BLOCK_ELEMENTS // max(1, n))
            flat = scaled.reshape(scaled.shape[0], -1)
            for start in range(0, n, step):
                Q = self._vectors[start : start + step]
                values[start : start + step] = (Q @ flat).reshape(Q.shape[0], n_targets + 1, -1)
                diagonal[start : start + step] = (Q * Q) @ inverse
            if self.fit_intercept:
                diagonal -= values[:, -1, :] * self._root[:, None] / self._weight_sum
            if self.leave_out == "row":
                return values[:, :n_targets, :] / diagonal[:, None, :]
            # α c = √s r and α diag(G⁻¹) = 1 - s h: 1 - t s h = t α diag + 1 - t.
            share = self._unit_share()[:, None]
            return _unit_errors(values[:, :n_targets, :] * alphas,
                                share * alphas * diagonal + (1.0 - share), self._root > 0)
        # "cov": α c = [ỹ, √s] - Φ_w H⁻¹ Φ_wᵀ [ỹ, √s], α d = 1 - diag(Φ_w H⁻¹ Φ_wᵀ).
        n = self._rhs.shape[0]
        fitted = np.empty((n, n_targets + 1, alphas.shape[0]))
        leverage = np.empty((n, alphas.shape[0]))
        flat = scaled.reshape(scaled.shape[0], -1)
        vectors = self._scales[:, None] * self._vectors  # Φ_w Γ V as Φ_w (Γ V)
        for rows, features in self._weighted_feature_blocks():
            P = features @ vectors
            fitted[rows] = (P @ flat).reshape(P.shape[0], n_targets + 1, -1)
            leverage[rows] = np.square(P, out=P) @ inverse
        residual = self._rhs[:, :, None] - fitted
        if self.fit_intercept:
            leverage += residual[:, -1, :] * self._root[:, None] / self._weight_sum
        if self.leave_out == "row":
            return residual[:, :n_targets, :] / (1.0 - leverage)[:, None, :]
        return _unit_errors(residual[:, :n_targets, :],
                            1.0 - self._unit_share()[:, None] * leverage, self._root > 0)

    def _unit_share(self):
        """``t_i = min(s_i, 1) / s_i``: the share of row ``i``'s weight left out (1 for ``s_i <= 1``)."""
        return 1.0 / np.maximum(self._root**2, 1.0)

    def coefficients(self, alpha):
        """The ridge solution for one alpha per target (of the current scale).

        Parameters
        ----------
        alpha : ndarray of shape (n_targets,)

        Returns
        -------
        coefficients : ndarray of shape (D, n_targets)
        intercept : ndarray of shape (n_targets,)
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        scaled = self._projected[:, :-1] / (self.eigenvalues[:, None] + alpha[None, :])
        if self.mode == "gram":
            # Φ_wᵀ c with c = G⁻¹ ỹ: Φᵀ(√s c) less the mean's share.
            V = self._root[:, None] * (self._vectors @ scaled)
            coefficients = _transpose_product(self._dense, V, self._rows, self._cols) - np.outer(
                self._mean, V.sum(axis=0)
            )
            coefficients *= (self._scales**2)[:, None]
        else:
            # a kept column's coefficient b, shared by its features as Γ² / (its Γ² summed)
            merged = self._scales[:, None] * (self._vectors @ scaled)
            columns, column_of = self._columns
            share = np.zeros(column_of.shape[0])
            kept = column_of >= 0
            share[kept] = (_quadratic_scales(column_of.shape[0], self._X.shape[1],
                                             self.quadratic_scale)[kept] / self._scales[column_of[kept]]) ** 2
            coefficients = share[:, None] * merged[np.maximum(column_of, 0)]
        intercept = self.y_mean - self._mean @ coefficients
        return coefficients, intercept
