"""Quadratic regression: one quadratic neuron per output, Ridge's penalty."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .._atomic import atomic_fit
from .._base import BaseQuadraticRegressor
from .._dask_dispatch import is_dask_collection
from .._memory import check_memory
from .._training import limit_threads, thread_count
from ._interactions import INTERACTION_CST_CONSTRAINT, estimator_entries
from ..nn.quadratic_ridge import (
    coefficients_to_model,
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


class QuadraticRegression(BaseQuadraticRegressor):
    """Least squares with a quadratic form: ``y = xᵀQx + wᵀx + b`` per output.

    It is ridge regression on the degree-2 features: with ``alpha`` it
    minimises exactly the objective of
    ``make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge(alpha))``,

    .. math::

        \\sum_i s_i \\big(y_i - x_i^\\top Q x_i - w^\\top x_i - b\\big)^2
        + \\alpha \\Big(\\lVert w \\rVert^2 + \\sum_a Q_{aa}^2
        + \\sum_{a<b} (2 Q_{ab})^2\\Big),

    (the coefficient of ``x_a x_b`` is ``2 Q_ab``; the intercept is not
    penalised), so it has the pipeline's optimum and predictions, but it never
    builds the ``n x d(d+3)/2`` feature matrix: it streams over row blocks of
    bounded memory.

    Parameters
    ----------
    alpha : float or array-like of shape (n_targets,), default=1.0
        Ridge's regularization strength (per target when an array).
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
    interaction_only : bool, default=False
        Learn no squared terms: ``Q_aa = 0`` (``PolynomialFeatures``'
        ``interaction_only``).
    interaction_cst : {"pairwise", "no_interactions"} or sequence of groups, default=None
        Which features may interact, with
        :class:`~sklearn.ensemble.HistGradientBoostingRegressor`'s meaning
        (see :class:`QuadraticLogisticRegression`): ``Q_ab`` (``a != b``) may
        be nonzero only when some group (feature indices or names) holds both
        ``a`` and ``b``, the features no group lists forming one more group.
        The model is then ``Ridge`` on ``PolynomialFeatures(2)``'s columns of
        the allowed pairs, ``D = d + (their number)``, which every solver
        (and ``"auto"``'s choice) works with.
    clip_inputs : bool, default=True
        Clip each feature of ``X`` to its training range ``[data_min_,
        data_max_]`` before every prediction (``predict``, ``score``, and the
        other prediction methods), so that the model, quadratic in ``X``,
        stays bounded on inputs outside the range it was trained on. No
        prediction on the training rows changes: they lie inside the range.
        For sparse ``X`` the stored values are clipped; implicit zeros stay
        zero (the range includes the training rows' implicit zeros).
        False predicts with the unbounded quadratic model.

    Attributes
    ----------
    Q_ : ndarray of shape (n_features, n_features) or (n_targets, n_features, n_features)
        Symmetric quadratic forms (one per target when ``y`` has more than one
        column).
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Linear coefficients (1-D for one target, as Ridge's).
    intercept_ : float or ndarray of shape (n_targets,)
        In the input's float dtype, as ``coef_`` and ``Q_`` (and as Ridge's).
    n_iter_ : ndarray of shape (n_targets,)
        Iterations of ``"cg"`` per target; 1 for the direct solvers (one
        exact solve: scikit-learn's checks want ``n_iter_ >= 1`` wherever
        there is a ``max_iter``; Ridge reports None).
    solver_ : str
        The solver used.
    n_outputs_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has string feature names.
    data_min_ : ndarray of shape (n_features_in_,)
        Per-feature minimum of the training rows with a positive weight
        (implicit zeros of sparse ``X`` included), float64: the range
        ``clip_inputs`` clips to.
    data_max_ : ndarray of shape (n_features_in_,)
        Per-feature maximum, likewise.

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
        "alpha": [Interval(Real, 0, None, closed="left"), np.ndarray, list],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"auto", "cholesky", "kernel", "cg"})],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "interaction_only": ["boolean"],
        "interaction_cst": INTERACTION_CST_CONSTRAINT,
        "clip_inputs": ["boolean"],
    }

    _accept_sparse = True

    # Dask collections: the normal equations are reduced over the row blocks
    # and solved on the driver (skquad/_dask.py).
    _fits_dask_collections = True

    def __init__(self, alpha=1.0, *, fit_intercept=True, solver="auto", tol=1e-4, max_iter=None,
                 interaction_only=False, interaction_cst=None, clip_inputs=True):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.interaction_only = interaction_only
        self.interaction_cst = interaction_cst
        self.clip_inputs = clip_inputs

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
        if is_dask_collection(X, y, sample_weight):
            from .._dask import fit_quadratic_regression, gathered_if_kernel

            gathered = gathered_if_kernel(self, X, y, sample_weight)
            if gathered is None:
                return fit_quadratic_regression(self, X, y, sample_weight)
            X, y, sample_weight = gathered
        X, Y, sample_weight = self._validate_training_data(X, y, sample_weight)
        alpha = self._checked_alpha(Y.shape[1])
        allowed = estimator_entries(self, X.shape[1])
        solver = self._choose_solver(*X.shape, allowed)
        if solver == "cholesky":
            check_normal_equations_memory(expansion_size(X.shape[1], allowed), X.shape[0], copies=1)
        # numpy's BLAS under the project's one thread rule: small products on
        # two threads ran 10-100x slower than on one on a loaded 2-core machine.
        n, D = X.shape[0], expansion_size(X.shape[1], allowed)
        flops = 2.0 * n * min(n, D) * (min(n, D) if solver == "kernel" else D)
        # (numpy computes here: the runtime policy's thread rule, for BLAS)
        threads = thread_count("auto", "cpu", flops)
        # Overflow is checked on the result below, with a message that says what to do.
        with limit_threads(None, blas=threads), np.errstate(over="ignore", invalid="ignore"):
            coefficients, intercept, n_iter = fit_quadratic_ridge(
                X, Y, sample_weight, alpha,
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
        return self

    def _raw_scores(self, X):
        return fitted_quadratic_scores(self, X)


def check_normal_equations_memory(D, n_samples, *, copies):
    """Refuse the ``D x D`` normal equations (``copies`` of them at once) when they do not fit.

    They grow with ``d⁴``: at ``d = 2000`` numpy asked for 29 TiB and raised
    its own MemoryError. Counted: each copy, the Cholesky factor and the
    ``n x D`` feature rows.
    """
    check_memory(
        8.0 * D * (D * (copies + 2) + n_samples), "solver", "cholesky",
        f"the {D} x {D} normal equations",
        advice="use solver='cg' (it holds O(D)), or fewer features.",
    )


def check_finite_solution(estimator, coefficients, intercept, X):
    """Refuse coefficients that overflowed, naming the cause and the remedy."""
    if not (np.all(np.isfinite(coefficients)) and np.all(np.isfinite(intercept))):
        # The normal equations hold degree-4 products of the features:
        # entries beyond ~1e77 overflow them (issue 19: NaN coefficients).
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
    dtype = np.dtype(dtype)
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

    Computed in float64; returned in ``result_type(X, coef_)``, as Ridge predicts.
    """
    Q = np.asarray(estimator.Q_, dtype=np.float64).reshape(-1, X.shape[1], X.shape[1])
    coef = np.asarray(estimator.coef_, dtype=np.float64).reshape(Q.shape[0], -1)
    intercept = np.asarray(estimator.intercept_, dtype=np.float64).reshape(-1)
    scores = quadratic_model_scores(X, Q, coef, intercept)
    return scores.astype(np.result_type(X.dtype, estimator.coef_.dtype), copy=False)
