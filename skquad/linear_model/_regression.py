"""Quadratic regression: one quadratic neuron per output, Ridge's penalty."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._foundation._atomic import atomic_fit
from .._array_api import is_tensor, numpy_dtype, to_host
from .._base import BaseQuadraticRegressor, dispatch_inputs
from .._dask_dispatch import is_dask_collection
from .._foundation._docstrings import shared_docstring
from .._foundation._memory import check_memory
from .._foundation._threads import limit_threads
from .._foundation._runtime import thread_count
from ._interactions import INTERACTION_CST_CONSTRAINT, estimator_entries, indexed_groups
from ._sparse_q import (
    SPARSE_PENALTIES,
    check_sparse_settings,
    publish_interactions,
    regression_path,
)
from ..nn.quadratic_ridge import (
    coefficients_to_model,
    computes_in_torch,
    expansion_size,
    fit_quadratic_ridge,
    quadratic_model_scores,
)

__all__ = ["QuadraticRegression"]

# solver="auto": the D x D normal equations are formed up to this D
# (D² float64 = 288 MB); beyond, conjugate gradients that hold O(D).
_PRIMAL_MAX_SIZE = 6000
# ... and the n x n dual Gram (when n < D) up to this many samples (800 MB).
_KERNEL_MAX_SAMPLES = 10_000

# alpha="auto": the grids of the exact leave-one-out. Free along alpha (one
# eigendecomposition serves every alpha); one eigendecomposition per ratio
# alpha_q / alpha of the quadratic block's penalty.
AUTO_ALPHAS = tuple(np.logspace(-3, 6, 37))
QUADRATIC_RATIOS = (1.0, 10.0, 100.0, 1e3, 1e4)
# ... on at most this many rows (every k-th), so that each decomposition is of
# at most this size; a larger fit scales the chosen penalties by n / m.
_AUTO_MAX_ROWS = 2000


@shared_docstring
class QuadraticRegression(BaseQuadraticRegressor):
    """Least squares with a quadratic form: ``y = xᵀQx + wᵀx + b`` per output.

    It is ridge regression on the degree-2 features, with the linear and the
    quadratic coefficients penalised apart:

    .. math::

        \\sum_i s_i \\big(y_i - x_i^\\top Q x_i - w^\\top x_i - b\\big)^2
        + \\alpha \\lVert w \\rVert^2 + \\alpha_q \\Big(\\sum_a Q_{aa}^2
        + \\sum_{a<b} (2 Q_{ab})^2\\Big)

    (the coefficient of ``x_a x_b`` is ``2 Q_ab``; the intercept is not
    penalised). With a number ``alpha`` and ``quadratic_alpha=None``
    (``alpha_q = alpha``) it minimises exactly the objective of
    ``make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge(alpha))``,
    so it has the pipeline's optimum, and its predictions wherever
    ``clip_inputs`` and ``clip_outputs`` leave them (on every row with both
    off), but it never builds the ``n x d(d+3)/2`` feature matrix: it
    streams over row blocks of bounded memory.

    By default (``alpha="auto"``) both penalties are chosen by the exact
    leave-one-out error (RidgeCV's efficient one, see
    :class:`QuadraticRegressionCV`): ``alpha`` on a log grid from ``1e-3`` to
    ``1e6`` and the ratio ``alpha_q / alpha`` among 1, 10, 100, 10³ and 10⁴. One penalty
    for all ``D = d(d+3)/2`` coefficients lets the ``d(d+1)/2`` quadratic
    ones, ``d/2`` times as many as the linear ones, take as much of the fit as
    the data allow, and with ``n`` near or below ``D`` they interpolate; a
    larger ``alpha_q`` is the prior of the degree-2 kernel ``(xᵀx'/d + 1)²``,
    which weighs the quadratic terms about ``2d`` times less than the linear
    ones. Ridge on ``[x, γ φ_q]`` is this problem with ``alpha_q = alpha /
    γ²``, so each ratio costs one eigendecomposition and every ``alpha`` of it
    is free. The selection sees at most 2 000 rows (every ``k``-th row,
    ``k = ceil(n / 2000)``); with more, the chosen penalties are multiplied by
    the weight of all the rows over theirs (``n / m``: the same penalty per
    row) for the fit on all of them. With ``sample_weight`` the
    leave-one-out leaves one unit of a row's weight out (``min(s_i, 1)``),
    so that on up to 2 000 rows integer weights choose what the rows
    repeated that many times choose, and rows of weight zero count for
    nothing (:class:`QuadraticRegressionCV` keeps RidgeCV's convention:
    the whole row out).

    Parameters
    ----------
    alpha : "auto", float or array-like of shape (n_targets,), default="auto"
        ``"auto"``: ``alpha`` and ``quadratic_alpha`` chosen by the exact
        leave-one-out (above): the default, for data of any size; costs a
        few eigendecompositions of the ``min(n, D)``-sized problem. A number:
        Ridge's regularization strength (per target when an array);
        ``alpha=1.0`` is Ridge's default.
    quadratic_alpha : float or None, default=None
        The penalty of the quadratic coefficients, positive (with a positive
        ``alpha``). None: ``alpha`` (the pipeline's problem), or chosen with
        ``alpha="auto"``.
    penalty : {"l2", "l1", "elasticnet", "group"}, default="l2"
        ``"l2"``: the ridge problem above. ``"l1"``, ``"elasticnet"``:
        :class:`~sklearn.linear_model.Lasso`'s and ``ElasticNet``'s objective
        on the degree-2 features (``alpha`` a number, their scaling
        ``1 / (2 sum(s))`` of the squared error), which selects few pairs
        (``interactions_``); ``"group"``: the L2 norms of whole rows of
        ``Q`` (:ref:`sparse-q`). Solved by FISTA on the implicit features
        to a duality gap of ``tol`` times the zero model's loss, at most
        ``max_iter`` iterations (None: 1000); not on Dask collections.
    l1_ratio : float in [0, 1] or None, default=None
        The L1 share of ``"elasticnet"`` and ``"group"`` (None: 1).
    fit_intercept : bool, default=True
        Fit ``b`` (centring the features and targets by their weighted
        means, as :class:`~sklearn.linear_model.Ridge`).
    solver : {"auto", "cholesky", "kernel", "cg"}, default="auto"
        ``"cholesky"``: the ``D x D`` normal equations (``D = d(d+3)/2``),
        exact, ``O(n D²)`` time and ``O(D²)`` memory. ``"kernel"``: the dual
        ``n x n`` system with the degree-2 kernel computed from ``X``
        (``O(n² d)``), exact; for ``n < D``. ``"cg"``: conjugate gradients on
        the normal equations, ``O(D)`` memory, to ``tol``. ``"auto"``, as
        ``Ridge(solver="auto")`` chooses by shape: ``"kernel"`` when
        ``n < D`` (and ``n <= 10 000``), else ``"cholesky"`` when
        ``D <= 6000``, else ``"cg"``.
    tol : float, default=1e-4
        ``"cg"``: the relative residual at which it stops.
    max_iter : int, default=None
        ``"cg"``: largest number of iterations per target (None: ``10 D``).
    [shared: interaction_only]
    interaction_cst : {"pairwise", "no_interactions"} or sequence of groups, default=None
        Which features may interact, with
        :class:`~sklearn.ensemble.HistGradientBoostingRegressor`'s meaning
        (see :class:`QuadraticLogisticRegression`): ``Q_ab`` (``a != b``) may
        be nonzero only when some group (feature indices or names) holds both
        ``a`` and ``b``, the features no group lists forming one more group.
        The model is then ``Ridge`` on ``PolynomialFeatures(2)``'s columns of
        the allowed pairs, ``D = d + (their number)``, which every solver
        (and ``"auto"``'s choice) works with.
    [shared: clip_inputs clip_outputs:QuadraticRegression]

    Attributes
    ----------
    alpha_ : float or ndarray of shape (n_targets,)
        The penalty of the linear coefficients used (``alpha``, or the one
        chosen).
    quadratic_alpha_ : float or ndarray of shape (n_targets,)
        The penalty of the quadratic coefficients used.
    Q_ : ndarray of shape (n_features, n_features) or (n_targets, n_features, n_features)
        Symmetric quadratic forms (one per target when ``y`` has more than one
        column).
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Linear coefficients (1-D for one target, as Ridge's).
    intercept_ : float or ndarray of shape (n_targets,)
        In the input's float dtype, as ``coef_`` and ``Q_`` (and as Ridge's).
    n_interactions_ : int
        Only with a sparse ``penalty``: the pairs ``a < b`` with a nonzero
        ``Q_ab`` (for some target).
    interactions_ : ndarray of shape (n_interactions_, 2)
        Only with a sparse ``penalty``: those pairs.
    n_iter_ : ndarray of shape (n_targets,)
        Iterations of ``"cg"`` per target; 1 for the direct solvers (one
        exact solve: scikit-learn's checks want ``n_iter_ >= 1`` wherever
        there is a ``max_iter``; Ridge reports None).
    solver_ : str
        The solver used.
    [shared-tight: n_outputs_ n_features_in_ feature_names_in_ data_min_:QuadraticRegression
        data_max_]

    [shared-tight: target_min_ target_max_]

    See Also
    --------
    QuadraticLogisticRegression : the same quadratic neuron as a classifier.
    sklearn.linear_model.Ridge : the same penalty on linear features.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import QuadraticRegression
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(200, 3))
    >>> y = X[:, 0] * X[:, 1] - X[:, 2] ** 2 + 0.5 * X[:, 0]
    >>> model = QuadraticRegression(alpha=1e-6).fit(X, y)
    >>> round(model.score(X, y), 6)
    1.0
    >>> np.round(model.Q_[0, 1], 3)
    np.float64(0.5)
    """

    _parameter_constraints = {
        "alpha": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left"), np.ndarray, list],
        "quadratic_alpha": [Interval(Real, 0, None, closed="neither"), None],
        "penalty": [StrOptions({"l2", *SPARSE_PENALTIES})],
        "l1_ratio": [Interval(Real, 0, 1, closed="both"), None],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"auto", "cholesky", "kernel", "cg"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "interaction_only": ["boolean"],
        "interaction_cst": INTERACTION_CST_CONSTRAINT,
        "clip_inputs": ["boolean"],
        "clip_outputs": ["boolean"],
    }

    _accept_sparse = True
    _array_api_support = True
    # a torch X: normal equations and scores where it lies (nn.quadratic_ridge.computes_in_torch)
    _computes_on_tensors = ("fit", "predict")

    # Dask collections: the normal equations are reduced over the row blocks
    # and solved on the driver (linear_model/_dask.py).
    _fits_dask_collections = True

    def __init__(self, alpha="auto", *, quadratic_alpha=None, penalty="l2", l1_ratio=None,
                 fit_intercept=True, solver="auto", tol=1e-4, max_iter=None,
                 interaction_only=False, interaction_cst=None, clip_inputs=True,
                 clip_outputs=True):
        self.alpha = alpha
        self.quadratic_alpha = quadratic_alpha
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.interaction_only = interaction_only
        self.interaction_cst = interaction_cst
        self.clip_inputs = clip_inputs
        self.clip_outputs = clip_outputs

    def _choose_solver(self, n_samples, n_features, allowed=None):
        if self.solver != "auto":
            return self.solver
        D = expansion_size(n_features, allowed)
        if n_samples < D and n_samples <= _KERNEL_MAX_SAMPLES:
            return "kernel"
        return "cholesky" if D <= _PRIMAL_MAX_SIZE else "cg"

    def _checked_alpha(self, n_targets):
        alpha = np.asarray(self.alpha, dtype=np.float64)
        if alpha.ndim == 0:
            return float(alpha)
        alpha = alpha.ravel()
        if alpha.shape[0] not in (1, n_targets):
            raise ValueError(
                f"Number of targets and number of penalties do not correspond: "
                f"{alpha.shape[0]} != {n_targets}"
            )
        if not np.all(np.isfinite(alpha)) or np.any(alpha < 0):
            raise ValueError(f"alpha values must be finite and non-negative, got {self.alpha!r}.")
        return alpha

    def _penalties(self, X, Y, sample_weight):
        """``(alpha, quadratic_alpha)`` of the fit: the given ones, or those of the leave-one-out."""
        if not isinstance(self.alpha, str):
            alpha = self._checked_alpha(Y.shape[1])
            if self.quadratic_alpha is not None and np.any(np.asarray(alpha) == 0):
                raise ValueError("quadratic_alpha needs a positive alpha; got alpha=0.")
            return alpha, self.quadratic_alpha
        if self.quadratic_alpha is not None:
            raise ValueError(
                "alpha='auto' chooses quadratic_alpha too; pass a number as alpha with "
                f"quadratic_alpha={self.quadratic_alpha!r}, or leave quadratic_alpha=None."
            )
        check_degree4_range(self, X)
        n = X.shape[0]
        rows = slice(None, None, -(-n // _AUTO_MAX_ROWS))  # every k-th row, k = ceil(n / m)
        return self._selected_penalties(to_host(X[rows]), Y[rows], sample_weight[rows], sample_weight.sum())

    def _selected_penalties(self, X, Y, weight, total_weight):
        """The leave-one-out's penalties on the rows given, scaled by the weights' ratio to a fit of
        ``total_weight`` (the loss is a sum over rows)."""
        from ._regression_cv import UnitLeaveOneOutCV

        search = UnitLeaveOneOutCV(
            AUTO_ALPHAS, quadratic_ratios=QUADRATIC_RATIOS, fit_intercept=self.fit_intercept,
            interaction_only=self.interaction_only,
            # the rows here are an array: the groups by index, not by name
            interaction_cst=indexed_groups(
                self.interaction_cst, X.shape[1], getattr(self, "feature_names_in_", None)),
        ).fit(X, Y, weight)
        share = total_weight / weight.sum()
        return search.alpha_ * share, search.quadratic_alpha_ * share

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        """Solve the ridge problem on the degree-2 features.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : QuadraticRegression
        """
        if self.penalty != "l2":
            return self._fit_sparse(X, y, sample_weight)
        if is_dask_collection(X, y, sample_weight):
            from ._dask import fit_quadratic_regression, gathered_if_kernel

            gathered = gathered_if_kernel(self, X, y, sample_weight)
            if gathered is None:
                return fit_quadratic_regression(self, X, y, sample_weight)
            X, y, sample_weight = gathered
        X, Y, sample_weight = self._validate_training_data(X, y, sample_weight)
        allowed = estimator_entries(self, X.shape[1])
        solver = self._choose_solver(*X.shape, allowed)
        check_regression_memory(solver, expansion_size(X.shape[1], allowed), *Y.shape)
        alpha, quadratic_alpha = self._penalties(X, Y, sample_weight)
        # numpy's BLAS under the project's one thread rule: small products run
        # slower on two threads than on one when the cores are busy.
        n, D = X.shape[0], expansion_size(X.shape[1], allowed)
        flops = 2.0 * n * min(n, D) * (min(n, D) if solver == "kernel" else D)
        # (numpy computes here: the runtime policy's thread rule, for BLAS)
        threads = thread_count("auto", "cpu", flops)
        # Overflow is checked on the result below, with a message that says what to do.
        with limit_threads(None, blas=threads), np.errstate(over="ignore", invalid="ignore"):
            coefficients, intercept, n_iter = fit_quadratic_ridge(
                X, Y, sample_weight, alpha, quadratic_alpha=quadratic_alpha,
                fit_intercept=bool(self.fit_intercept),
                solver="primal" if solver == "cholesky" else solver,
                tol=float(self.tol),
                max_iter=self.max_iter,
                allowed=allowed,
            )
        check_finite_solution(self, coefficients, intercept, X)
        publish_quadratic_model(self, coefficients, intercept, X.shape[1], X.dtype, allowed)
        self.n_iter_ = np.ones(Y.shape[1], dtype=np.int64) if n_iter is None else n_iter
        self.solver_ = solver
        publish_penalties(self, alpha, quadratic_alpha)
        return self

    def _fit_sparse(self, X, y, sample_weight):
        """Lasso's objective with the sparse ``penalty`` (:mod:`._sparse_q`), by FISTA."""
        check_sparse_settings(self, is_dask_collection(X, y, sample_weight))
        if isinstance(self.alpha, str) or self.quadratic_alpha is not None:
            raise ValueError(f"penalty={self.penalty!r} takes one number as alpha (Lasso's) "
                             f"and quadratic_alpha=None; got alpha={self.alpha!r}, "
                             f"quadratic_alpha={self.quadratic_alpha!r}.")
        X, Y, sample_weight = self._validate_training_data(X, y, sample_weight)
        X, allowed = to_host(X), estimator_entries(self, X.shape[1])
        alpha = self._checked_alpha(1)
        (coefficients, intercept, n_iter), = regression_path(
            X, Y, sample_weight, [alpha], self.penalty, self.l1_ratio, allowed,
            fit_intercept=bool(self.fit_intercept), tol=float(self.tol),
            max_iter=self.max_iter or 1000)
        publish_quadratic_model(self, coefficients, intercept, X.shape[1], X.dtype, allowed)
        self.n_iter_, self.solver_ = n_iter, "proximal"
        publish_penalties(self, alpha, None)
        publish_interactions(self)
        return self

    def _raw_scores(self, X):
        return fitted_quadratic_scores(self, X)


def check_regression_memory(solver, D, n_samples, n_targets, *, copies=1):
    """Refuse a fit whose arrays, which grow with ``D`` (about ``d² / 2``), do not fit.

    Every solver holds per target the coefficients, CG's work vectors and the
    published ``d x d`` ``Q_`` (about 12 of ``D``); ``kernel`` its ``n x n``
    kernels; ``cholesky`` ``copies`` of the ``D x D`` normal equations, the
    factor and the ``n x D`` feature rows (at ``d = 2000`` numpy asked for 29
    TiB and raised its own MemoryError).
    """
    required = 12.0 * D * n_targets + (3.0 * n_samples**2 if solver == "kernel" else 0.0)
    if solver == "cholesky":
        required += D * (D * (copies + 2.0) + n_samples)
    check_memory(
        8.0 * required, "solver", solver,
        f"the {D} x {D} normal equations" if solver == "cholesky"
        else f"{D} quadratic coefficients per target",
        advice="use solver='cg' (it holds O(D)), or fewer features." if solver == "cholesky"
        else "select fewer features or constrain the pairs (interaction_cst).",
    )


def publish_penalties(estimator, alpha, quadratic_alpha):
    """``alpha_`` and ``quadratic_alpha_``: floats, or arrays per target where they differ."""

    def value(penalty):
        penalty = np.asarray(penalty, dtype=np.float64)
        return float(penalty) if penalty.ndim == 0 else penalty.copy()

    estimator.alpha_ = value(alpha)
    estimator.quadratic_alpha_ = value(alpha if quadratic_alpha is None else quadratic_alpha)


def check_degree4_range(estimator, X):
    """Refuse ``X`` whose degree-4 products overflow, before any is formed (as below)."""
    largest = float(abs(X).max()) if X.shape[0] else 0.0
    with np.errstate(over="ignore"):
        total = np.float64(largest) ** 4 * X.shape[0]
    if not np.isfinite(total):
        check_finite_solution(estimator, np.array([np.inf]), np.zeros(1), X)


def check_finite_solution(estimator, coefficients, intercept, X):
    """Refuse coefficients that overflowed, naming the cause and the remedy."""
    if not (np.all(np.isfinite(coefficients)) and np.all(np.isfinite(intercept))):
        # The normal equations hold degree-4 products of the features:
        # entries beyond ~1e77 overflow them into NaN coefficients.
        raise ValueError(
            f"{type(estimator).__name__} could not fit X: its largest entry, "
            f"{float(abs(X).max()):.3g}, overflows the degree-4 products of the "
            "quadratic features. Scale the features, e.g. with "
            "StandardScaler in a Pipeline."
        )


def publish_quadratic_model(estimator, coefficients, intercept, n_features, dtype, allowed=None):
    """Set ``coef_``, ``Q_`` and ``intercept_`` from degree-2 coefficients (D, n_targets).

    In the input's float ``dtype``, as scikit-learn's estimators, and in the
    shape of the fitted ``y`` (1-D: one model, a numpy scalar intercept, as
    Ridge); ``allowed``: the interaction constraints the coefficients' pairs follow.
    """
    coef, Q = coefficients_to_model(coefficients, n_features, allowed)
    dtype = numpy_dtype(dtype)
    # Ridge's shapes: one target (1-D y, or a 2-D y of one column) has a 1-D
    # coef_ (and a (d, d) Q_); the intercept is a scalar for a 1-D y only.
    one_target = coef.shape[0] == 1
    estimator.coef_ = (coef[0] if one_target else coef).astype(dtype)
    estimator.Q_ = (Q[0] if one_target else Q).astype(dtype)
    if estimator._fitted_y_ndim == 1:
        estimator.intercept_ = dtype.type(intercept[0])
    else:
        estimator.intercept_ = np.asarray(intercept).astype(dtype)


def fitted_quadratic_scores(estimator, X):
    """``(n_samples, n_targets)`` predictions of a fitted ``Q_``, ``coef_``, ``intercept_``.

    Computed in float64; returned in ``result_type(X, coef_)``, as Ridge predicts. For a
    tensor, a tensor computed in torch where :func:`computes_in_torch` (off the CPU), else
    NumPy's scores of its view, which the prediction methods return as a tensor
    (skquad/_array_api.py).
    """
    dtype = np.result_type(numpy_dtype(X.dtype), numpy_dtype(estimator.coef_.dtype))
    if is_tensor(X):
        import torch

        if not computes_in_torch(X):
            return fitted_quadratic_scores(estimator, X.numpy())

        from ..nn.quadratic_form import chunked_quadratic_form_scores

        as64 = lambda array: torch.as_tensor(array, dtype=torch.float64, device=X.device)
        Q = as64(estimator.Q_).reshape(-1, X.shape[1], X.shape[1])
        with torch.no_grad():
            scores = chunked_quadratic_form_scores(X.to(torch.float64), Q, as64(estimator.coef_).reshape(
                Q.shape[0], -1), as64(estimator.intercept_).reshape(-1))
        return scores.to(getattr(torch, dtype.name))
    Q = np.asarray(estimator.Q_, dtype=np.float64).reshape(-1, X.shape[1], X.shape[1])
    coef = np.asarray(estimator.coef_, dtype=np.float64).reshape(Q.shape[0], -1)
    intercept = np.asarray(estimator.intercept_, dtype=np.float64).reshape(-1)
    scores = quadratic_model_scores(X, Q, coef, intercept)
    return scores.astype(dtype, copy=False)
