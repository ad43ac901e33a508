"""Quadratic logistic regression: one quadratic neuron per class score."""

import time
import warnings
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np
import scipy.optimize
import torch
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from ._base import BaseQuadraticClassifier
from ._torch_utils import make_generator, resolve_device, seed_from, to_numpy
from .nn.quadratic_form import (
    chunked_quadratic_form_scores,
    low_rank_log_loss,
    low_rank_quadratic_scores,
    low_rank_to_dense,
    quadratic_log_loss_gradient,
)

__all__ = ["QuadraticLogisticRegression"]

# Below this many flops in the largest single product (``X Q_k``), one torch
# thread is faster: every parallel region ends at a barrier, which costs more
# than small products save, and far more on a loaded machine where the other
# OpenMP thread waits for a busy core (measured: 8x slower fits at load 8).
_PARALLEL_FLOPS = 1e9


@contextmanager
def _compute_threads(flops_per_product):
    """Thread settings for one fit, restored afterwards.

    The heavy products run in torch; scipy's L-BFGS-B bookkeeping runs in the
    numpy/scipy BLAS on vectors where its threads only add overhead, so that
    BLAS is limited to one thread for the duration of the fit.
    """
    previous = torch.get_num_threads()
    single = flops_per_product < _PARALLEL_FLOPS and previous > 1
    try:
        if single:
            torch.set_num_threads(1)
        with threadpool_limits(1, user_api="blas"):
            yield
    finally:
        if single:
            torch.set_num_threads(previous)


class QuadraticLogisticRegression(BaseQuadraticClassifier):
    """Logistic regression with a quadratic form: one quadratic neuron per score.

    Each class score is ``z = x^T Q x + w^T x + b`` with ``Q`` symmetric
    (paper 001, section 2). Binary problems have one score and the logistic
    loss, ``K > 2`` classes have ``K`` scores and the multinomial (softmax)
    loss, as in :class:`~sklearn.linear_model.LogisticRegression`. The model
    minimises

    .. math::

        C \\sum_i s_i \\, \\ell_i
        + \\tfrac12 \\sum_k \\left(P(Q_k) + \\lVert w_k \\rVert^2\\right)

    (the intercepts are not penalised). It is logistic regression on degree-2
    features, so the problem is convex and ``solver="lbfgs"`` reaches its
    global optimum; but the ``n x d(d+1)/2`` feature matrix is never built:
    scores and gradients are computed in matrix form (``X Q`` and
    ``X^T diag(r) X``), with ``O(n d + K d^2)`` memory.

    With the default ``penalty="polynomial"``, ``P(Q)`` is the sum of the
    squared coefficients of the degree-2 features (``Q_ii`` for ``x_i^2``,
    ``2 Q_ij`` for ``x_i x_j``), so the model *is*
    ``make_pipeline(PolynomialFeatures(2, include_bias=False),
    LogisticRegression(C=C))``: the same optimum, without the feature matrix.
    ``penalty="frobenius"`` uses ``P(Q) = ||Q||_F^2`` instead, which does not
    depend on the orientation of the feature axes but penalises the cross
    terms half as much (``2 Q_ij^2`` against ``(2 Q_ij)^2``) (measured: -2 percentage points of test accuracy on
    ionosphere at ``C=1``, see ``skquad.benchmarks``).

    Quadratic models grow with the square of the input, so standardise the
    features (e.g. ``StandardScaler`` in a pipeline).

    Parameters
    ----------
    C : float, default=1.0
        Inverse of the L2 regularisation strength on ``Q`` and ``w``, as in
        ``LogisticRegression``. ``np.inf`` fits without regularisation (on
        separable data the optimum is then at infinity and the result depends
        on ``Q_init``, ``max_iter`` and ``tol``).
    penalty : {"polynomial", "frobenius"}, default="polynomial"
        ``"polynomial"``: ``P(Q) = sum_i Q_ii^2 + 4 sum_{i<j} Q_ij^2``, the L2
        norm of the coefficients of ``PolynomialFeatures(2)``'s features.
        ``"frobenius"``: ``P(Q) = ||Q||_F^2 = sum_i Q_ii^2 + 2 sum_{i<j} Q_ij^2``,
        invariant under rotations of the features.
    fit_intercept : bool, default=True
        Whether to fit the intercepts ``b``.
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        ``"lbfgs"``: full-batch L-BFGS-B (scipy) on the loss and gradient
        computed in torch; reaches the global optimum when ``rank`` is None.
        ``"sgd"``: the paper's stochastic gradient updates (its equations 8,
        11 and 21: the step for ``Q`` is taken with respect to its
        ``d(d+1)/2`` free entries, i.e. ``2 G - diag(G)`` for the gradient
        ``G`` with respect to the symmetric matrix), on shuffled mini-batches of ``batch_size`` samples
        with a constant ``learning_rate``.
    max_iter : int, default=500
        Iterations of L-BFGS, or epochs of SGD. Higher than
        ``LogisticRegression``'s 100: on real data with many degree-2 terms
        (e.g. spambase, 1 710 of them) L-BFGS needs 200 to 300 iterations.
    tol : float, default=1e-4
        L-BFGS stops when the largest gradient entry of the objective divided
        by ``C * sum(sample_weight)`` is below ``tol`` (as in
        ``LogisticRegression``). SGD stops when the epoch's mean loss has not
        improved by ``tol`` for ``n_iter_no_change`` epochs in a row.
    learning_rate : float, default=0.01
        SGD step size (unused by L-BFGS). Each step follows the mean gradient
        of the mini-batch.
    batch_size : int or "auto", default="auto"
        SGD mini-batch size; ``"auto"`` is ``min(200, n_samples)``. The paper
        uses ``batch_size=1``.
    n_iter_no_change : int, default=5
        SGD epochs without improvement before stopping.
    Q_init : {"zeros", "identity", "random"}, default="zeros"
        Starting ``Q`` of every score (ignored when ``warm_start`` reuses a
        previous fit). ``"random"`` draws a symmetric Gaussian matrix from
        ``random_state``. It matters for the unregularised and low-rank
        (non-convex) problems and for SGD; the regularised full-rank L-BFGS
        optimum does not depend on it.
    rank : int or None, default=None
        None learns a full symmetric ``Q``. An integer ``r`` learns
        ``Q = sum_{j<=r} s_j v_j v_j^T`` (factors ``Q_vectors_``,
        ``Q_scales_``) at ``O(n d r)`` cost per iteration. This problem is
        **not convex**: the solvers find a local optimum that depends on
        ``Q_init`` and ``random_state``. The penalty ``P(Q)`` is the same as
        for a full ``Q``, computed from the factors.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied into ``sample_weight``.
    warm_start : bool, default=False
        Start from the previous fit's ``Q_``, ``coef_`` and ``intercept_``
        (when the classes and features are unchanged).
    verbose : int, default=0
        Print the objective once per iteration (L-BFGS) or epoch (SGD).
    random_state : int, RandomState instance or None, default=None
        Seeds ``Q_init="random"``, the low-rank factors and SGD shuffling,
        through a local torch generator (torch's global one is never touched).
    device : {"auto", "cpu", "cuda"} or str, default="auto"
        Where torch computes; ``"auto"`` takes CUDA when available. Learned
        arrays are numpy, so a model fitted on a GPU works anywhere.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    Q_ : ndarray of shape (n_scores, n_features, n_features)
        Symmetric quadratic coefficients; ``n_scores`` is 1 for binary
        problems, else ``n_classes``.
    coef_ : ndarray of shape (n_scores, n_features)
        Linear coefficients ``w``.
    intercept_ : ndarray of shape (n_scores,)
        Intercepts ``b`` (zeros when ``fit_intercept=False``).
    Q_vectors_ : ndarray of shape (n_scores, n_features, rank)
        Only when ``rank`` is set: the vectors ``v_j`` (columns).
    Q_scales_ : ndarray of shape (n_scores, rank)
        Only when ``rank`` is set: the scales ``s_j``.
    n_iter_ : int
        L-BFGS iterations or SGD epochs run.
    loss_curve_ : list of float
        Only for ``solver="sgd"``: mean objective of each epoch (divided by
        ``C * sum(sample_weight)``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : the linear model.
    sklearn.preprocessing.PolynomialFeatures : the explicit degree-2 features.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from skquad import QuadraticLogisticRegression
    >>> X, y = make_circles(n_samples=200, noise=0.05, factor=0.5, random_state=0)
    >>> clf = QuadraticLogisticRegression(C=10.0).fit(X, y)
    >>> round(clf.score(X, y), 2)
    1.0
    >>> clf.Q_.shape
    (1, 2, 2)
    """

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="right")],
        "penalty": [StrOptions({"polynomial", "frobenius"})],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"lbfgs", "sgd"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "Q_init": [StrOptions({"zeros", "identity", "random"})],
        "rank": [Interval(Integral, 1, None, closed="left"), None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "device": [str],
    }

    def __init__(
        self,
        C=1.0,
        *,
        penalty="polynomial",
        fit_intercept=True,
        solver="lbfgs",
        max_iter=500,
        tol=1e-4,
        learning_rate=0.01,
        batch_size="auto",
        n_iter_no_change=5,
        Q_init="zeros",
        rank=None,
        class_weight=None,
        warm_start=False,
        verbose=0,
        random_state=None,
        device="auto",
    ):
        self.C = C
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_iter_no_change = n_iter_no_change
        self.Q_init = Q_init
        self.rank = rank
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.device = device

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (standardise it: the model is quadratic in ``X``).
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights; a weight of 2 counts a sample twice.

        Returns
        -------
        self : QuadraticLogisticRegression
            The fitted estimator.
        """
        previous = self._previous_solution() if self.warm_start else None
        X, y_encoded, sample_weight = self._validate_training_data(X, y, sample_weight)
        return self._train(X, y_encoded, sample_weight, previous)

    def _sgd_only(self):
        if self.solver != "sgd":
            raise AttributeError(
                f"partial_fit is only available for solver='sgd', not {self.solver!r}."
            )
        return True

    @available_if(_sgd_only)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One SGD epoch over ``(X, y)``, continuing from the current model.

        For data that arrive in parts or do not fit in memory. No early
        stopping and no ``ConvergenceWarning``: the caller decides how many
        calls to make. The penalty is scaled as if ``(X, y)`` were the whole
        training set (as in :meth:`fit`, the objective is divided by
        ``C * sum(sample_weight)``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All the classes; required on the first call, when a part of the
            data may not contain all of them.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : QuadraticLogisticRegression
        """
        first_call = not hasattr(self, "classes_")
        if first_call and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        if not first_call and classes is not None and not np.array_equal(
            np.unique(np.asarray(classes)), self.classes_
        ):
            raise ValueError(
                f"`classes={np.unique(np.asarray(classes)).tolist()}` is not the same as "
                f"on the first call to partial_fit: {self.classes_.tolist()}."
            )
        X, y_encoded, sample_weight = self._validate_training_data(
            X, y, sample_weight, reset=first_call, classes=classes if first_call else None
        )
        previous = None if first_call else self._previous_solution()
        return self._train(X, y_encoded, sample_weight, previous, partial=True)

    def _train(self, X, y_encoded, sample_weight, previous, *, partial=False):
        """Fit from validated data, starting from ``previous`` when it fits."""
        device = resolve_device(self.device)
        if previous is not None and not self._previous_fits(previous, X.shape[1]):
            previous = None

        # Rows sorted by class: the residual of each score then has one sign
        # per contiguous block, which the symmetric gradient products exploit.
        order = np.argsort(y_encoded, kind="stable")
        counts = np.bincount(y_encoded, minlength=self.classes_.shape[0])
        bounds = np.concatenate([[0], np.cumsum(counts)])
        class_blocks = [(int(bounds[k]), int(bounds[k + 1])) for k in range(counts.shape[0])]
        X_t = torch.as_tensor(np.ascontiguousarray(X[order], dtype=np.float64), device=device)
        y_t = torch.as_tensor(y_encoded[order], device=device)
        total_weight = float(sample_weight.sum())
        # The objective is divided by C * sum(s) (as LogisticRegression does)
        # so that its scale, and the meaning of tol, do not depend on n or C.
        weight_t = torch.as_tensor(sample_weight[order] / total_weight, device=device)
        l2 = 0.0 if np.isinf(self.C) else 1.0 / (self.C * total_weight)

        params = self._initial_params(X.shape[1], device, previous)
        if not self.fit_intercept:
            params[-1].zero_()
        n_features = X.shape[1]
        width = n_features if self.rank is None else min(self.rank, n_features)
        rows = X.shape[0]
        if self.solver == "sgd":
            rows = min(200 if self.batch_size == "auto" else self.batch_size, rows)
        flops = 2.0 * rows * n_features * width
        with _compute_threads(flops if device.type == "cpu" else np.inf):
            if partial:
                done = self.n_iter_ if previous is not None else 0
                if previous is None or not hasattr(self, "loss_curve_"):
                    self.loss_curve_ = []
                # a new shuffle per call, reproducible from random_state
                generator = torch.Generator().manual_seed(seed_from(self.random_state) + done)
                params, epochs = self._fit_sgd(
                    X_t, y_t, weight_t, l2, params,
                    generator=generator, max_epochs=1, stop_early=False,
                )
                n_iter = done + epochs
            elif self.solver == "lbfgs":
                if hasattr(self, "loss_curve_"):
                    del self.loss_curve_  # from an earlier SGD fit
                params, n_iter = self._fit_lbfgs(
                    X_t, y_t, weight_t, l2, params, class_blocks
                )
            else:
                self.loss_curve_ = []
                params, n_iter = self._fit_sgd(
                    X_t, y_t, weight_t, l2, params,
                    generator=make_generator(self.random_state, "cpu"),
                    max_epochs=self.max_iter, stop_early=True,
                )
        self._store_params(params)
        self.n_iter_ = int(n_iter)
        return self

    def _previous_solution(self):
        if not hasattr(self, "Q_"):
            return None
        return {
            "classes": self.classes_,
            "Q": self.Q_,
            "coef": self.coef_,
            "intercept": self.intercept_,
            "vectors": getattr(self, "Q_vectors_", None),
            "scales": getattr(self, "Q_scales_", None),
        }

    def _previous_fits(self, previous, n_features):
        same_classes = previous["classes"].shape == self.classes_.shape and np.all(
            previous["classes"] == self.classes_
        )
        same_shape = previous["coef"].shape[1] == n_features
        same_rank = (self.rank is None) == (previous["vectors"] is None) and (
            self.rank is None or previous["vectors"].shape[2] == self.rank
        )
        return bool(same_classes and same_shape and same_rank)

    def _initial_params(self, n_features, device, previous):
        """Starting tensors: ``[Q, coef, intercept]`` or ``[V, s, coef, intercept]``."""
        n_scores, d = self._n_scores, n_features
        as_t = lambda a: torch.as_tensor(np.array(a, dtype=np.float64), device=device)
        if previous is not None:
            tail = [as_t(previous["coef"]), as_t(previous["intercept"])]
            if self.rank is None:
                return [as_t(previous["Q"])] + tail
            return [as_t(previous["vectors"]), as_t(previous["scales"])] + tail

        # Random draws on a CPU generator: the same model on every device.
        generator = make_generator(self.random_state, "cpu")
        gauss = lambda *shape: torch.randn(*shape, generator=generator, dtype=torch.float64)
        coef = torch.zeros(n_scores, d, dtype=torch.float64)
        intercept = torch.zeros(n_scores, dtype=torch.float64)
        if self.rank is None:
            if self.Q_init == "zeros":
                Q = torch.zeros(n_scores, d, d, dtype=torch.float64)
            elif self.Q_init == "identity":
                Q = torch.eye(d, dtype=torch.float64).repeat(n_scores, 1, 1)
            else:
                A = gauss(n_scores, d, d)
                Q = (A + A.transpose(1, 2)) / (2.0 * np.sqrt(d))
            params = [Q, coef, intercept]
        else:
            r = self.rank
            # Q = V diag(s) V^T: V is always random (V = 0 would be a saddle
            # point where no gradient reaches V), the scales set the start.
            vectors = gauss(n_scores, d, r) / np.sqrt(d)
            if self.Q_init == "zeros":
                scales = torch.zeros(n_scores, r, dtype=torch.float64)
            elif self.Q_init == "identity":
                # orthonormal columns with unit scales: a projection, the
                # closest rank-r matrix to the identity
                m = min(r, d)
                basis, _ = torch.linalg.qr(gauss(n_scores, d, m))
                vectors[:, :, :m] = basis
                scales = torch.zeros(n_scores, r, dtype=torch.float64)
                scales[:, :m] = 1.0
            else:
                scales = gauss(n_scores, r)
            params = [vectors, scales, coef, intercept]
        return [p.to(device) for p in params]

    def _store_params(self, params):
        if self.rank is None:
            Q, coef, intercept = params
            Q = 0.5 * (Q + Q.transpose(1, 2))  # remove rounding asymmetry
            for name in ("Q_vectors_", "Q_scales_"):
                if hasattr(self, name):
                    delattr(self, name)
        else:
            vectors, scales, coef, intercept = params
            self.Q_vectors_ = to_numpy(vectors)
            self.Q_scales_ = to_numpy(scales)
            Q = low_rank_to_dense(vectors, scales)
        self.Q_ = to_numpy(Q)
        self.coef_ = to_numpy(coef)
        self.intercept_ = to_numpy(intercept)
        if not self.fit_intercept:
            self.intercept_[:] = 0.0

    # -------------------------------------------------------------- solvers
    def _objective(self, X, y, weight, l2, params, class_blocks=None, scratch=None):
        """Objective and gradients (closed form for full Q, autograd for low rank)."""
        if self.rank is None:
            Q, coef, intercept = params
            loss, gQ, gcoef, gintercept = quadratic_log_loss_gradient(
                X, y, weight, Q, coef, intercept, l2, cross_weight=self._cross_weight,
                class_blocks=class_blocks, scratch=scratch,
            )
            return loss, [gQ, gcoef, gintercept]
        leaves = [p.detach().requires_grad_(True) for p in params]
        loss = low_rank_log_loss(X, y, weight, *leaves, l2, cross_weight=self._cross_weight)
        grads = torch.autograd.grad(loss, leaves)
        return loss.detach(), list(grads)

    @property
    def _cross_weight(self):
        """Penalty weight of the off-diagonal entries of ``Q`` (see ``penalty``)."""
        return 1.0 if self.penalty == "frobenius" else 2.0

    def _fit_lbfgs(self, X, y, weight, l2, params, class_blocks):
        shapes = [p.shape for p in params]
        sizes = [int(np.prod(s)) for s in shapes]
        device = X.device
        n_free = len(params) if self.fit_intercept else len(params) - 1
        fixed_intercept = params[-1]
        # one n x d buffer reused by every score and gradient product
        scratch = torch.empty_like(X) if self.rank is None else None

        def unpack(flat):
            flat_t = torch.as_tensor(flat, device=device)
            pieces = list(torch.split(flat_t, sizes[:n_free]))
            tensors = [p.reshape(s) for p, s in zip(pieces, shapes)]
            if not self.fit_intercept:
                tensors.append(fixed_intercept)
            return tensors

        def fun(flat):
            loss, grads = self._objective(
                X, y, weight, l2, unpack(flat), class_blocks, scratch
            )
            grad = torch.cat([g.reshape(-1) for g in grads[:n_free]])
            return float(loss), to_numpy(grad).astype(np.float64, copy=False)

        iteration = [0]
        start = time.perf_counter()

        def callback(intermediate_result):
            iteration[0] += 1
            if self.verbose:
                # scipy < 1.11 passes the parameter vector, without the objective
                objective = getattr(intermediate_result, "fun", float("nan"))
                print(
                    f"[QuadraticLogisticRegression] iter {iteration[0]:4d}  "
                    f"objective {objective:.8g}  "
                    f"{time.perf_counter() - start:.2f}s"
                )

        x0 = to_numpy(torch.cat([p.reshape(-1) for p in params[:n_free]]))
        result = scipy.optimize.minimize(
            fun,
            x0,
            method="L-BFGS-B",
            jac=True,
            callback=callback,
            options={
                "maxiter": self.max_iter,
                "maxfun": max(15000, 2 * self.max_iter),
                "gtol": self.tol,
                "ftol": 64 * np.finfo(float).eps,
                "maxls": 50,
            },
        )
        if not np.all(np.isfinite(result.x)) or not np.isfinite(result.fun):
            raise ValueError(
                "QuadraticLogisticRegression (lbfgs) diverged: the objective is not "
                "finite (the quadratic scores overflowed). Standardise the features "
                "(e.g. StandardScaler) or use a finite C."
            )
        if result.status != 0:
            if result.nit >= self.max_iter:
                message = (
                    f"lbfgs failed to converge after {result.nit} iterations "
                    f"(max_iter={self.max_iter}). Increase max_iter, standardise "
                    "the features (e.g. StandardScaler) or lower C."
                )
            else:
                message = (
                    f"lbfgs stopped without converging: {result.message}. "
                    "Standardise the features (e.g. StandardScaler), lower C, or "
                    "relax tol."
                )
            warnings.warn(message, ConvergenceWarning)
        return unpack(result.x), result.nit

    def _fit_sgd(self, X, y, weight, l2, params, *, generator, max_epochs, stop_early):
        """SGD epochs; appends each epoch's mean objective to ``loss_curve_``."""
        n_samples = X.shape[0]
        batch_size = min(200, n_samples) if self.batch_size == "auto" else min(
            self.batch_size, n_samples
        )
        # Weights of mean 1: a step follows the mean gradient of the batch,
        # plus the penalty's gradient (objective / (C sum(s)), as for lbfgs).
        unit_weight = weight * n_samples
        params = [p.clone() for p in params]
        best_loss, stall = np.inf, 0
        converged = False
        epoch = 0
        for epoch in range(1, max_epochs + 1):
            order = torch.randperm(n_samples, generator=generator).to(X.device)
            epoch_loss = 0.0
            for start in range(0, n_samples, batch_size):
                index = order[start : start + batch_size]
                batch_weight = unit_weight[index] / index.shape[0]
                loss, grads = self._objective(X[index], y[index], batch_weight, l2, params)
                epoch_loss += float(loss) * index.shape[0]
                self._sgd_step(params, grads)
            epoch_loss /= n_samples
            self.loss_curve_.append(epoch_loss)
            if not np.isfinite(epoch_loss) or not all(
                bool(torch.isfinite(p).all()) for p in params
            ):
                raise ValueError(
                    f"QuadraticLogisticRegression (sgd) diverged at epoch {epoch}: "
                    "the loss is not finite. Lower learning_rate, standardise the "
                    "features (e.g. StandardScaler), or use solver='lbfgs'."
                )
            if self.verbose:
                print(f"[QuadraticLogisticRegression] epoch {epoch:4d}  loss {epoch_loss:.8g}")
            if epoch_loss > best_loss - self.tol:
                stall += 1
            else:
                stall = 0
            best_loss = min(best_loss, epoch_loss)
            if stall >= self.n_iter_no_change:
                converged = True
                break
        if stop_early and not converged:
            warnings.warn(
                f"sgd reached max_iter={self.max_iter} epochs before the loss "
                "stopped improving. Increase max_iter or learning_rate.",
                ConvergenceWarning,
            )
        return params, epoch

    def _sgd_step(self, params, grads):
        n_steps = len(params) if self.fit_intercept else len(params) - 1
        with torch.no_grad():
            for k in range(n_steps):
                grad = grads[k]
                if self.rank is None and k == 0:
                    # the paper's update (21): the gradient with respect to the
                    # d(d+1)/2 free entries of Q is M = 2 G - diag(G)
                    grad = 2.0 * grad - torch.diag_embed(torch.diagonal(grad, dim1=1, dim2=2))
                params[k].sub_(grad, alpha=self.learning_rate)

    # -------------------------------------------------------------- predict
    def _raw_scores(self, X):
        device = resolve_device(self.device)
        # a writeable array: torch warns on read-only ones (e.g. memmaps)
        X_t = torch.as_tensor(np.require(X, np.float64, ["C", "W"]), device=device)
        coef = torch.as_tensor(self.coef_, device=device)
        intercept = torch.as_tensor(self.intercept_, device=device)
        with torch.no_grad():
            if getattr(self, "Q_vectors_", None) is not None:
                scores = low_rank_quadratic_scores(
                    X_t,
                    torch.as_tensor(self.Q_vectors_, device=device),
                    torch.as_tensor(self.Q_scales_, device=device),
                    coef,
                    intercept,
                )
            else:
                Q = torch.as_tensor(self.Q_, device=device)
                scores = chunked_quadratic_form_scores(X_t, Q, coef, intercept)
        return to_numpy(scores)
