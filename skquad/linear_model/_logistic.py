"""Quadratic logistic regression: one quadratic neuron per class score."""

import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse
import torch
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions

from .._atomic import atomic_fit
from .._base import BaseQuadraticClassifier
from .._dask_dispatch import is_dask_collection
from .._reporting import progress_line, warn_user
from .._rows import duplicate_groups
from .._torch_utils import as_tensor, prediction_device, to_numpy
from .._training import (
    SparseRows,
    SubtaskReporter,
    Trainer,
    TrainingConfig,
    callback_data,
    limit_threads,
    reporting_epochs,
    runtime_policy,
    thread_count,
)
from ..nn.quadratic_dual import dual_to_primal, kernel_newton_logistic
from ..nn.quadratic_form import (
    QuadraticScores,
    chunked_quadratic_form_scores,
    log_loss_per_sample,
    low_rank_quadratic_scores,
    low_rank_to_dense,
    quadratic_logistic_loss_and_gradient,
    quadratic_penalty,
)
from ..nn.quadratic_ridge import expansion_size

__all__ = ["QuadraticLogisticRegression"]


# Column magnitudes outside [1e-4, 1e4] put the quadratic terms' scale (their
# squares) beyond 1e8 away from the intercept's 1: a Hessian with that spread
# is past what L-BFGS resolves at ftol = 64 eps, and the absolute gradient test
# (tol) stops before tiny terms learn anything (issue 19: X * 1e8 fitted to
# 0.575 accuracy against 0.775, X * 1e-80 to the zero model, both silently).
_WELL_SCALED = (1e-4, 1e4)

# solver="auto" on binary problems: Newton's method on the dual coefficients
# (skquad.nn.quadratic_dual) when the distinct rows are at most the d(d+3)/2
# degree-2 features and at most this many. Its steps cost n^3/3 (a Cholesky),
# L-BFGS's evaluations about 3 n d^2: measured (synthetic binary sets, CPU
# time, one thread, medians of 5 interleaved, under load), the dual took 0.36
# to 0.71x the L-BFGS fit for n <= 263 (d = 5 to 57, n up to d(d+3)/2), 0.99x
# at 500 x 57, and 1.3 to 3x at 400 x 34, 600 x 100, 855 x 57.
_KERNEL_NEWTON_MAX_ROWS = 300

# Numbers of X per row block converted to float64 at prediction (128 MB).
_PREDICTION_ROW_ELEMENTS = 1 << 24


def _check_feature_scale(X, name):
    """Refuse features whose squares overflow; warn where the fit is ill-conditioned."""
    if scipy.sparse.issparse(X):
        magnitude = abs(X).max(axis=0).toarray()
    else:
        # two reductions instead of abs(X): no n x d temporary (0.8 GB at 1e6 x 200 float32)
        magnitude = np.maximum(X.max(axis=0), -X.min(axis=0))
    magnitude = np.asarray(magnitude, dtype=np.float64).ravel()
    magnitude = magnitude[magnitude > 0]
    if magnitude.size == 0:
        return
    largest, smallest = float(magnitude.max()), float(magnitude.min())
    if not np.isfinite(largest * largest):
        raise ValueError(
            f"X has values up to {largest:.3g}, whose squares overflow float64: {name} "
            "cannot compute its quadratic terms. Rescale X, e.g. with StandardScaler "
            "(or MaxAbsScaler for sparse X) in a Pipeline."
        )
    low, high = _WELL_SCALED
    if largest > high or smallest < low:
        warn_user(
            f"X's columns have magnitudes from {smallest:.3g} to {largest:.3g}: {name}'s "
            f"quadratic terms then span {smallest * smallest:.3g} to {largest * largest:.3g}, "
            "and its solver may stop at a poor model without converging. Standardize the "
            "features (StandardScaler, or MaxAbsScaler for sparse X, in a Pipeline).",
            UserWarning,
        )


class QuadraticLogisticRegression(BaseQuadraticClassifier):
    """Logistic regression with a quadratic form: one quadratic neuron per score.

    Each class score is ``z = x^T Q x + w^T x + b`` with ``Q`` symmetric
    (Noel et al., section 2). Binary problems have one score and the logistic
    loss, ``K > 2`` classes have ``K`` scores and the multinomial (softmax)
    loss, as in :class:`~sklearn.linear_model.LogisticRegression`. The model
    minimises

    .. math::

        C \\sum_i s_i \\, \\ell_i
        + \\tfrac12 \\sum_k \\left(P(Q_k) + \\lVert w_k \\rVert^2\\right)

    (the intercepts are not penalised). It is logistic regression on degree-2
    features, so the problem is convex and ``solver="lbfgs"`` reaches its
    global optimum; but the ``n x d(d+1)/2`` feature matrix is not built
    beyond 8 MB: scores and gradients are computed in matrix form (``X Q``
    and ``X^T diag(r) X``), with ``O(n d + K d^2)`` memory. (Small problems,
    whose degree-2 matrix has at most 2**20 numbers, are fitted on it: one
    product each way, where the matrix form's time went to its calls.)

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
    solver : {"auto", "lbfgs", "sgd"}, default="auto"
        ``"auto"``: ``"lbfgs"``, except on the small binary problems below,
        which are solved by Newton's method on the dual; ``solver_`` says
        which ran.
        ``"lbfgs"``: full-batch L-BFGS on the loss and gradient in closed
        form (the training engine's numpy L-BFGS: scipy's L-BFGS-B's
        iterates without its bookkeeping); reaches the global optimum when
        ``rank`` is None.
        A full ``Q_k`` is optimised as its packed upper triangle (``sqrt(2)
        Q_ij`` off the diagonal: the steps L-BFGS takes on the symmetric
        matrix, on half the numbers), with a memory of 20 correction pairs
        (``LogisticRegression`` keeps scipy's 10; with 20 the benchmark's UCI
        fits took 7 to 22 % fewer iterations: optdigits 27 -> 25, ionosphere
        44 -> 37, spambase 270 -> 218, vehicle 204 -> 160, means of 3 splits).
        With ``"auto"``, binary problems with a full ``Q`` and at most 300
        distinct rows, and no more than the ``d(d+3)/2`` degree-2 features,
        are solved by Newton's method on the dual (kernel) coefficients
        instead, as ``Ridge(solver="auto")`` chooses by shape
        (:func:`skquad.nn.quadratic_dual.kernel_newton_logistic`: one
        ``n x n`` Cholesky per step, 5 to 8 steps where L-BFGS takes 20 to
        40): the same objective and the same optimum, with the same gradient
        test at ``tol``, in 0.4 to 0.7 of L-BFGS's time on such problems
        (ionosphere, 263 x 34). It applies from a cold start (``Q_init="zeros"``,
        no ``warm_start`` model to continue), with finite ``C``, on dense
        rows on the CPU; each Newton step counts as one iteration
        (``n_iter_``, ``verbose``, callbacks) and ``max_fun`` does not apply.
        ``"sgd"``: Noel et al.'s stochastic gradient updates (their equations
        8, 11 and 21: the step for ``Q`` is taken with respect to its
        ``d(d+1)/2`` free entries, i.e. ``2 G - diag(G)`` for the gradient
        ``G`` with respect to the symmetric matrix), plain SGD without
        momentum on shuffled mini-batches of ``batch_size`` samples. Both run
        in skquad's training engine (``skquad._training``), with
        MLPClassifier's stopping rule, warnings and divergence guard.
    max_iter : int, default=500
        Iterations of L-BFGS (Newton steps where the dual solver is chosen,
        see ``solver``), or epochs of SGD; 0 returns the starting model
        (``Q_init``, or the previous one with ``warm_start``) with
        ``n_iter_ = [0]`` and a ConvergenceWarning. Higher than
        ``LogisticRegression``'s 100: on real data with many degree-2 terms
        (e.g. spambase, 1 710 of them) L-BFGS needs 200 to 300 iterations.
    tol : float, default=1e-4
        L-BFGS stops when the largest gradient entry of the objective divided
        by ``C * sum(sample_weight)`` is below ``tol`` (as in
        ``LogisticRegression``); so does the dual Newton solver (the same
        test on the same primal gradient). SGD stops when the epoch's mean loss has not
        improved by ``tol`` for more than ``n_iter_no_change`` epochs in a row
        (MLPClassifier's rule).
    learning_rate : {"constant", "invscaling", "adaptive"}, default="constant"
        SGD learning-rate schedule, as in
        :class:`~sklearn.neural_network.MLPClassifier`: ``"constant"`` keeps
        ``learning_rate_init``; ``"invscaling"`` uses
        ``learning_rate_init / (t + 1) ** power_t`` after ``t`` samples;
        ``"adaptive"`` divides the rate by 5 each time the loss stops
        improving, instead of stopping, until it is below 1e-6. A float is
        still accepted as the step size with a FutureWarning (deprecated in
        0.2, removed in 0.4: use ``learning_rate_init``).
    learning_rate_init : float, default=0.01
        SGD step size (unused by L-BFGS). Each step follows the mean gradient
        of the mini-batch.
    power_t : float, default=0.5
        Exponent of the ``"invscaling"`` schedule.
    batch_size : int or "auto", default="auto"
        SGD mini-batch size; ``"auto"`` is ``min(200, n_samples)``. Noel et
        al. use ``batch_size=1``.
    n_iter_no_change : int, default=5
        SGD epochs without improvement (more than this many) before stopping.
    max_fun : int, default=15000
        The most loss evaluations of L-BFGS (MLPClassifier's ``max_fun``).
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
        Print the objective once per iteration (L-BFGS) or epoch (SGD), in
        skquad's one progress format (``elapsed`` counts from the start of
        the fit).
    random_state : int, RandomState instance or None, default=None
        Seeds ``Q_init="random"`` and the low-rank factors, and (an
        independent stream) SGD shuffling, through local torch generators
        (torch's global one is never touched; see
        ``skquad._training._runtime``).
    device : {"auto", "cpu", "cuda"} or str, default="auto"
        Where torch computes; ``"auto"`` means the CPU. Learned arrays are
        numpy, so a model fitted on a GPU predicts anywhere: predictions run
        on ``device_``, or on the CPU after unpickling on a machine without it.
    n_threads : "auto" or int, default="auto"
        CPU threads of torch during fit. ``"auto"`` uses one thread for
        products under 2e8 flops (faster on small problems, see
        ``skquad._training.choose_thread_count()``) and all of torch's
        threads above; an int fixes the count. The previous setting is
        restored after the fit, also when fits run concurrently in threads.

    dtype : {"float32", "float64"} or None, default=None
        Precision of the computation. None follows the input, as
        ``LogisticRegression`` does: float32 data are trained in float32,
        anything else in float64. Measured on spambase (3 680 x 57, C=1,
        default ``tol``): float32 fits took 1.5 s against 2.1 s, reached the
        same objective (0.073666 against 0.073670, both within ``tol``) and
        the same test accuracy. float32 cannot resolve a tighter ``tol``
        (below about 1e-6 L-BFGS stops when the objective no longer changes
        in float32: at ``tol=1e-8`` it stopped after 418 iterations where
        float64 ran 791), so pass ``dtype="float64"`` when the optimum is
        needed to high accuracy. float64 L-BFGS fits on dense CPU rows run
        their first iterations on float32 copies of the products (about
        half the time per evaluation) and go on in float64 from where
        float32's precision runs out; they always end on a float64
        evaluation and its gradient test, so ``tol`` keeps its float64
        meaning. The fitted arrays (``Q_``, ``coef_``,
        ``intercept_``) are in the training dtype, and the scores and
        probabilities in ``numpy.result_type(X, coef_)``, as
        ``LogisticRegression``'s.

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
    solver_ : str
        The method that fitted the model: ``"lbfgs"``, ``"newton-dual"``
        (Newton's method on the dual coefficients, see ``solver``) or
        ``"sgd"``.
    n_iter_ : ndarray of shape (1,)
        L-BFGS iterations (Newton steps), or SGD epochs, run (int32, in an array as
        ``LogisticRegression``'s, binary or multinomial).
    loss_ : float
        The final objective divided by ``C * sum(sample_weight)`` (L-BFGS), or
        the last epoch's mean objective (SGD).
    loss_curve_ : list of float
        Only for ``solver="sgd"``: mean objective of each epoch (divided by
        ``C * sum(sample_weight)``).
    t_ : int
        Only for ``solver="sgd"``: training samples seen (the ``"invscaling"``
        schedule's ``t``, as MLPClassifier's ``t_``).
    diverged_ : bool
        True when training diverged (the loss or the parameters overflowed,
        or the loss grew by orders of magnitude); the better of the best
        parameters seen and the starting ones were kept and a
        ConvergenceWarning said what to try.
    device_ : str
        The device the model was fitted on (``"cpu"``, ``"cuda:0"``), where
        it predicts (the CPU when that device is missing).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit, when ``X`` has string column names.
    data_min_ : ndarray of shape (n_features_in_,)
        Per-feature minimum of the training rows with a positive weight
        (implicit zeros of sparse ``X`` included), float64, widened by each
        ``partial_fit``: the range ``clip_inputs`` clips to.
    data_max_ : ndarray of shape (n_features_in_,)
        Per-feature maximum, likewise.

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

    # CSR/CSC input: scores and gradients run on dense row chunks (see fit).
    _accept_sparse = True

    # L-BFGS's memory (scipy's maxcor; LogisticRegression keeps scipy's 10).
    _LBFGS_MAXCOR = 20
    # The L-BFGS driver's numpy engine: L-BFGS-B's iterates (the same line
    # search), without setulb's bookkeeping, which was a fifth to a third of a
    # fit on the benchmark's UCI sets (optdigits' 21 450 parameters: about 1.5
    # ms a call, two calls an iteration, against 10 ms an evaluation).
    _LBFGS_ENGINE = "compact"

    # Dask collections: fit is data-parallel over the row blocks (skquad/_dask.py).
    _fits_dask_collections = True

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="right")],
        "penalty": [StrOptions({"polynomial", "frobenius"})],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"auto", "lbfgs", "sgd"})],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [
            StrOptions({"constant", "invscaling", "adaptive"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "power_t": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "max_fun": [Interval(Integral, 1, None, closed="left")],
        "Q_init": [StrOptions({"zeros", "identity", "random"})],
        "rank": [Interval(Integral, 1, None, closed="left"), None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "device": [str, torch.device],
        "n_threads": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "dtype": [StrOptions({"float32", "float64"}), None],

        "clip_inputs": ["boolean"],
    }

    def __init__(
        self,
        C=1.0,
        *,
        penalty="polynomial",
        fit_intercept=True,
        solver="auto",
        max_iter=500,
        tol=1e-4,
        learning_rate="constant",
        learning_rate_init=0.01,
        power_t=0.5,
        batch_size="auto",
        n_iter_no_change=5,
        max_fun=15000,
        Q_init="zeros",
        rank=None,
        class_weight=None,
        warm_start=False,
        verbose=0,
        random_state=None,
        device="auto",
        n_threads="auto",
        dtype=None,
        clip_inputs=True,
    ):
        self.C = C
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.learning_rate = learning_rate
        self.learning_rate_init = learning_rate_init
        self.power_t = power_t
        self.batch_size = batch_size
        self.n_iter_no_change = n_iter_no_change
        self.max_fun = max_fun
        self.Q_init = Q_init
        self.rank = rank
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads
        self.dtype = dtype
        self.clip_inputs = clip_inputs

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
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
        if is_dask_collection(X, y, sample_weight):
            from .._dask import fit_quadratic_logistic_regression

            return fit_quadratic_logistic_regression(self, X, y, sample_weight)
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
    @atomic_fit
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
        if previous is not None and not self._previous_fits(previous, X.shape[1]):
            # Issue 19: a changed rank used to restart training silently (n_iter_,
            # t_ and loss_curve_ reset); like the networks, refuse and say how.
            fitted_rank = None if previous["vectors"] is None else previous["vectors"].shape[2]
            raise ValueError(
                f"rank={self.rank!r} differs from the fitted model's rank={fitted_rank!r}: "
                "partial_fit continues the fitted model, so it cannot change its shape. "
                f"Set rank={fitted_rank!r} back to continue, or call fit to start over "
                "with the new rank."
            )
        return self._train(X, y_encoded, sample_weight, previous, partial=True)

    def _step_size(self):
        """``(learning_rate_init, schedule)``, accepting the deprecated float ``learning_rate``."""
        if isinstance(self.learning_rate, str):
            return self.learning_rate_init, self.learning_rate
        warn_user(
            "Passing a float as learning_rate is deprecated in 0.2 and will be "
            "removed in 0.4: learning_rate is now the schedule ('constant', "
            "'invscaling', 'adaptive'), as in MLPClassifier. Use "
            f"learning_rate_init={self.learning_rate!r} instead.",
            FutureWarning,
        )
        return float(self.learning_rate), "constant"

    def _required_memory(self, n_features, n_rows):
        """Bytes a fit needs, checked before allocating (issue 19).

        Parameters: ``n_scores * (d * d + d + 1)`` (full rank) or
        ``n_scores * (d * rank + rank + d + 1)``, held by L-BFGS as about 26
        float64 vectors (scipy's 10 correction pairs, the point, its gradient,
        the best and starting snapshots, torch's copies); each step also forms
        the ``(rows, width)`` products ``X Q_k`` per score. 10 000 features at
        full rank: 1e8 parameters, about 20 GiB.
        """
        d, n_scores = int(n_features), self._n_scores
        width = d if self.rank is None else min(int(self.rank), d)
        n_parameters = n_scores * (d * width + (width if self.rank is not None else 0) + d + 1)
        return 8.0 * (26 * n_parameters + 2 * n_scores * n_rows * width)

    def _flops_per_step(self, n_rows, n_features):
        """Per score, ``X Q_k`` (2 n d w) and the Gram gradient (n d w as SYRK)."""
        width = n_features if self.rank is None else min(self.rank, n_features)
        return 3.0 * self._n_scores * n_rows * n_features * width

    def _train(self, X, y_encoded, sample_weight, previous, *, partial=False):
        """Fit from validated data through the training engine."""
        _check_feature_scale(X, type(self).__name__)
        learning_rate_init, schedule = self._step_size()
        if previous is not None and not self._previous_fits(previous, X.shape[1]):
            previous = None
        # The callbacks score against the data as the user gave them (labels, all rows).
        user_data = (X, self.classes_[y_encoded], sample_weight)
        stochastic = partial or self.solver == "sgd"
        rows = np.arange(X.shape[0])
        if not stochastic:
            # L-BFGS sees the weighted distribution: duplicates merged, rows in
            # a canonical order, so sample_weight=k is exactly k repetitions.
            rows, sample_weight = duplicate_groups(X, y_encoded, sample_weight)
            y_encoded = y_encoded[rows]

        # Rows sorted by class: the residual of each score then has one sign
        # per contiguous block, which the symmetric gradient products exploit.
        order = np.argsort(y_encoded, kind="stable")
        # The merged and sorted rows are gathered from X once (one copy of X).
        rows = rows[order]
        counts = np.bincount(y_encoded, minlength=self.classes_.shape[0])
        bounds = np.concatenate([[0], np.cumsum(counts)])
        class_blocks = [(int(bounds[k]), int(bounds[k + 1])) for k in range(counts.shape[0])]
        total_weight = float(sample_weight.sum())
        # The objective is divided by C * sum(s) (as LogisticRegression does)
        # so that its scale, and the meaning of tol, do not depend on n or C.
        l2 = 0.0 if np.isinf(self.C) else 1.0 / (self.C * total_weight)

        batch_rows = X.shape[0]
        if stochastic:
            batch_rows = min(200 if self.batch_size == "auto" else self.batch_size, batch_rows)
        policy = runtime_policy(
            X.dtype,
            dtype=self.dtype,
            fitted_dtype=None if previous is None else previous["Q"].dtype,
            device=self.device,
            n_threads=self.n_threads,
            flops_per_step=self._flops_per_step(batch_rows, X.shape[1]),
            random_state=self.random_state,
            # partial_fit call k shuffles with its own stream (len(loss_curve_) counts the calls)
            call=len(getattr(self, "loss_curve_", [])) if partial and previous is not None else 0,
        )
        if self._kernel_newton_applies(X, rows.shape[0], previous, stochastic, policy.device):
            return self._train_kernel_newton(
                X[rows], y_encoded[order], sample_weight[order], l2, policy, user_data
            )
        policy.require_memory(
            self._required_memory(X.shape[1], batch_rows), "rank", self.rank,
            f"fitting {type(self).__name__} on {X.shape[1]} features",
            advice="set a small rank (e.g. rank=8: d * rank parameters per score instead "
            "of d * d) or select fewer features.",
        )
        device = policy.device
        tensors = self._initial_params(X.shape[1], device, previous, policy.init_generator)
        if not self.fit_intercept:
            tensors[-1].zero_()
        # full-batch L-BFGS on a full Q: each Q_k packed (its d(d+1)/2 upper
        # triangle), the same iterates at half the optimizer's work
        module = QuadraticScores(
            tensors, fit_intercept=self.fit_intercept,
            packed=not stochastic and self.rank is None,
        )
        config = TrainingConfig(
            solver="sgd" if stochastic else "lbfgs",
            learning_rate=learning_rate_init,
            learning_rate_schedule=schedule,
            power_t=self.power_t,
            batch_size=None if self.batch_size == "auto" else self.batch_size,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            # Noel et al.'s update is plain SGD
            momentum=0.0,
            nesterov=False,
            max_fun=self.max_fun,
            verbose=bool(self.verbose),
            n_threads="auto" if policy.n_threads is None else policy.n_threads,
            warn_on_max_iter=not partial,
            # LogisticRegression's L-BFGS settings
            lbfgs_ftol=64 * np.finfo(float).eps,
            lbfgs_maxls=50,
            lbfgs_maxcor=self._LBFGS_MAXCOR,
            lbfgs_engine=self._LBFGS_ENGINE,
            divergence_advice=(
                "standardized features (e.g. StandardScaler in a Pipeline), a smaller C"
                + (" or solver='lbfgs'" if stochastic else "")
            ),
            convergence_advice=(
                "Increase max_iter or learning_rate_init, or standardise the "
                "features (e.g. StandardScaler)." if stochastic else
                "Standardise the features (e.g. StandardScaler) or lower C."
            ),
        )
        if partial:
            done = int(self.n_iter_[0]) if previous is not None else 0
        trainer = Trainer(
            module,
            log_loss_per_sample,
            config=config,
            device=device,
            dtype=policy.dtype,
            generator=policy.shuffle_generator,
            loss_and_gradient=quadratic_logistic_loss_and_gradient(
                module,
                l2,
                cross_weight=self._cross_weight,
                class_blocks=None if stochastic else class_blocks,
                free_entry_gradient=stochastic,
            ),
        )
        X_sorted, y_sorted, w_sorted = X[rows], y_encoded[order], sample_weight[order]
        fitted = lambda: {**self._fitted_arrays(module.tensors()), "device_": policy.device_name}
        if partial:
            seen = getattr(self, "t_", 0) if previous is not None else 0
            trainer.history.n_samples_seen = seen
            if seen:
                trainer.schedule.epoch_ends(seen)
            with reporting_epochs(trainer, self, *user_data, fitted_attributes=fitted):
                history = trainer.partial_fit(X_sorted, y_sorted, w_sorted)
            if previous is None or not hasattr(self, "loss_curve_"):
                self.loss_curve_ = []
            self.loss_curve_.extend(history.loss_curve)
            n_iter = done + history.n_iter
        else:
            with reporting_epochs(trainer, self, *user_data, fitted_attributes=fitted):
                history = trainer.fit(X_sorted, y_sorted, w_sorted, max_iter=self.max_iter)
            n_iter = history.n_iter
            if stochastic:
                self.loss_curve_ = list(history.loss_curve)
            elif hasattr(self, "loss_curve_"):
                del self.loss_curve_  # from an earlier SGD fit
        if stochastic:
            self.t_ = int(history.n_samples_seen)
        elif hasattr(self, "t_"):
            del self.t_
        self._store_params(module.tensors())
        self.device_ = policy.device_name
        if history.loss is None:
            # max_iter=0 with SGD: no epoch ran, the model is the starting one.
            history.loss = self._objective(X, y_encoded, sample_weight, l2)
        # LogisticRegression's shape and dtype: (1,) int32, multinomial included.
        self.n_iter_ = np.array([n_iter], dtype=np.int32)
        self.solver_ = "sgd" if stochastic else "lbfgs"
        self.loss_ = float(history.loss)
        self.diverged_ = bool(history.diverged)
        return self

    def _callback_max_subtasks(self, method_name):
        # L-BFGS (scipy's last, empty iteration) and the dual Newton steps both
        # report up to max_iter + 1 subtasks; SGD one per epoch.
        if method_name == "fit" and self.solver != "sgd":
            return int(self.max_iter) + 1
        return super()._callback_max_subtasks(method_name)

    def _kernel_newton_applies(self, X, n_rows, previous, stochastic, device):
        """Whether ``solver="auto"`` fits by Newton's method on the dual (see ``solver``).

        Only where that gives the L-BFGS path's optimum from the same start
        (a cold start from ``Q = 0``; the penalty makes the optimum unique),
        on the problems where it is faster: binary, full ``Q``, finite ``C``,
        dense rows on the CPU, and at most as many distinct rows as degree-2
        features and ``_KERNEL_NEWTON_MAX_ROWS``.
        """
        return bool(
            not stochastic
            and self.solver == "auto"
            and self._n_scores == 1
            and self.rank is None
            and previous is None
            and self.Q_init == "zeros"
            and np.isfinite(self.C)
            and not scipy.sparse.issparse(X)
            and torch.device(device).type == "cpu"
            and n_rows <= min(_KERNEL_NEWTON_MAX_ROWS, expansion_size(X.shape[1]))
        )

    def _train_kernel_newton(self, X, y_encoded, sample_weight, l2, policy, user_data):
        """Fit a binary full-``Q`` model by :func:`~skquad.nn.quadratic_dual.kernel_newton_logistic`.

        ``X`` holds the merged, class-sorted rows. The solver computes in
        float64 (its ``n x n`` systems are small); the fitted arrays are in
        the computation dtype, as the L-BFGS path's. Each Newton step is one
        iteration: ``n_iter_``, the verbose lines and the callbacks' subtasks
        count them.
        """
        started = time.perf_counter()
        n, d = X.shape
        # the kernel and its factor (n^2 each), X in float64, and the primal
        # gradient test's and the fitted Q's d x d arrays
        policy.require_memory(
            8.0 * (3 * n * n + 2 * n * d + 4 * d * d), "rank", self.rank,
            f"fitting {type(self).__name__} on {d} features",
            advice="set a small rank (e.g. rank=8) or select fewer features.",
        )
        X64 = np.asarray(X, dtype=np.float64)
        weight = np.asarray(sample_weight, dtype=np.float64)
        weight = weight / weight.sum()
        dtype = policy.numpy_dtype

        def arrays(alpha, intercept):
            Q, coef = dual_to_primal(X64, alpha, self._cross_weight)
            return {
                "Q_vectors_": None,
                "Q_scales_": None,
                "Q_": Q[None].astype(dtype),
                "coef_": coef[None].astype(dtype),
                "intercept_": np.array([intercept if self.fit_intercept else 0.0], dtype=dtype),
            }

        point = {"alpha": np.zeros(X64.shape[0]), "intercept": 0.0}
        reporter = SubtaskReporter(
            getattr(self, "_callback_fit_ctx", None),
            estimator=self,
            task_name="newton-iter",
            fitted_attributes=lambda: {
                **arrays(point["alpha"], point["intercept"]), "device_": policy.device_name
            },
            **callback_data(*user_data),
        )

        def on_iteration(iteration, loss, alpha, intercept):
            if self.verbose:
                print(progress_line(iteration, loss, time.perf_counter() - started), flush=True)
            if not reporter.active:
                return False
            point.update(alpha=alpha.copy(), intercept=intercept)
            stop = reporter.end()
            if not stop:
                reporter.begin()
            return stop

        # numpy's BLAS under the one thread rule, on one step's work (the
        # Cholesky and the primal gradient test)
        threads = thread_count(self.n_threads, "cpu", n**3 / 3.0 + 2.0 * n * d * d)
        reporter.begin()
        with limit_threads(None, blas=threads), np.errstate(over="ignore", under="ignore"):
            result = kernel_newton_logistic(
                X64, y_encoded, weight, l2, cross_weight=self._cross_weight,
                fit_intercept=self.fit_intercept, tol=self.tol, max_iter=self.max_iter,
                on_iteration=on_iteration,
            )
        reporter.close()
        if result["status"] == "max_iter":
            warn_user(
                f"Newton's method on the dual coefficients (solver='auto' on a binary problem "
                f"with fewer rows than degree-2 features) failed to converge after "
                f"{result['n_iter']} iteration(s).\nIncrease the number of iterations to "
                f"improve the convergence (max_iter={self.max_iter}), or use solver='lbfgs'.",
                ConvergenceWarning,
            )
        elif result["status"] == "line_search":
            warn_user(
                "Newton's method on the dual coefficients stopped after "
                f"{result['n_iter']} iteration(s): no step decreased the objective (largest "
                f"gradient entry {result['gradient']:.3g}, tol={self.tol}). Standardise the "
                "features (e.g. StandardScaler) or lower C.",
                ConvergenceWarning,
            )
        for name, value in arrays(result["alpha"], result["intercept"]).items():
            if value is not None:
                setattr(self, name, value)
            elif hasattr(self, name):
                delattr(self, name)
        for name in ("loss_curve_", "t_"):  # from an earlier SGD fit
            if hasattr(self, name):
                delattr(self, name)
        self.device_ = policy.device_name
        self.n_iter_ = np.array([result["n_iter"]], dtype=np.int32)
        self.solver_ = "newton-dual"
        self.loss_ = float(result["loss"])
        self.diverged_ = False
        return self

    def _objective(self, X, y_encoded, sample_weight, l2):
        """The training objective at the stored model: weighted mean log-loss plus the penalty."""
        with torch.no_grad():
            scores = torch.as_tensor(self._raw_scores(X))
            losses = log_loss_per_sample(scores, torch.as_tensor(y_encoded, dtype=torch.int64))
            data = float(losses.double().numpy() @ sample_weight) / float(sample_weight.sum())
            penalty = float(quadratic_penalty(torch.as_tensor(self.Q_), self._cross_weight))
        return data + 0.5 * l2 * (penalty + float(np.sum(self.coef_**2)))

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

    def _initial_params(self, n_features, device, previous, generator):
        """Starting tensors: ``[Q, coef, intercept]`` or ``[V, s, coef, intercept]``.

        Drawn in float64 from ``generator`` (the runtime policy's CPU
        initialization stream): the same model on every device and dtype.
        """
        n_scores, d = self._n_scores, n_features
        as_t = lambda a: torch.as_tensor(np.array(a, dtype=np.float64), device=device)
        if previous is not None:
            tail = [as_t(previous["coef"]), as_t(previous["intercept"])]
            if self.rank is None:
                return [as_t(previous["Q"])] + tail
            return [as_t(previous["vectors"]), as_t(previous["scales"])] + tail

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

    def _fitted_arrays(self, params):
        """The fitted attributes (numpy) for the tensors ``params``."""
        arrays = {"Q_vectors_": None, "Q_scales_": None}
        if self.rank is None:
            Q, coef, intercept = params
            Q = 0.5 * (Q + Q.transpose(1, 2))  # remove rounding asymmetry
        else:
            vectors, scales, coef, intercept = params
            arrays["Q_vectors_"] = to_numpy(vectors)
            arrays["Q_scales_"] = to_numpy(scales)
            Q = low_rank_to_dense(vectors, scales)
        # In the computation dtype, as LogisticRegression keeps float32 in coef_.
        arrays["Q_"] = to_numpy(Q)
        arrays["coef_"] = to_numpy(coef)
        arrays["intercept_"] = to_numpy(intercept)
        if not self.fit_intercept:
            arrays["intercept_"][:] = 0.0
        return arrays

    def _store_params(self, params):
        for name, value in self._fitted_arrays(params).items():
            if value is not None:
                setattr(self, name, value)
            elif hasattr(self, name):
                delattr(self, name)

    @property
    def _cross_weight(self):
        """Penalty weight of the off-diagonal entries of ``Q`` (see ``penalty``)."""
        return 1.0 if self.penalty == "frobenius" else 2.0

    # -------------------------------------------------------------- predict
    def _raw_scores(self, X):
        """Scores computed in float64, returned in ``result_type(X, coef_)`` (LogisticRegression's dtype)."""
        device = prediction_device(self.device_)
        if not scipy.sparse.issparse(X) and X.shape[0] * X.shape[1] > _PREDICTION_ROW_ELEMENTS:
            # Row blocks, each converted to float64 on its own: the whole of a
            # 1e6 x 200 float32 X in float64 was 1.6 GB, twice the data.
            step = max(1, _PREDICTION_ROW_ELEMENTS // X.shape[1])
            return np.concatenate(
                [self._raw_scores(X[start : start + step]) for start in range(0, X.shape[0], step)]
            )
        if scipy.sparse.issparse(X):
            X_t = SparseRows(X, device, torch.float64)
        else:
            # C order, as in training: the summation order (and so the last
            # bit of every score) does not depend on the input's memory layout
            X_t = as_tensor(np.ascontiguousarray(X), dtype=torch.float64, device=device)
        as_float64 = lambda array: torch.as_tensor(np.asarray(array, dtype=np.float64), device=device)
        coef, intercept = as_float64(self.coef_), as_float64(self.intercept_)
        with torch.no_grad():
            if getattr(self, "Q_vectors_", None) is not None:
                scores = low_rank_quadratic_scores(
                    X_t,
                    as_float64(self.Q_vectors_),
                    as_float64(self.Q_scales_),
                    coef,
                    intercept,
                )
            else:
                scores = chunked_quadratic_form_scores(X_t, as_float64(self.Q_), coef, intercept)
        return to_numpy(scores).astype(np.result_type(X.dtype, self.coef_.dtype), copy=False)
