"""Quadratic logistic regression: one quadratic neuron per class score."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse
import torch
from sklearn.base import _fit_context
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions

from .._foundation._atomic import atomic_fit
from .._array_api import is_tensor, namespace_of, numpy_dtype
from .._base import BaseQuadraticClassifier, dispatch_inputs
from .._dask_dispatch import is_dask_collection
from .._foundation._docstrings import shared_docstring
from .._foundation._reporting import warn_user
from .._foundation._torch_utils import as_tensor, prediction_device, resolve_device, to_numpy
from .._training import SparseRows
from .._foundation._lbfgs_compact import PathMemory
from .._foundation._runtime import thread_count
from .._foundation._threads import limit_threads
from ..nn.quadratic_form import (
    PATH_MEMORY,
    chunked_quadratic_form_scores,
    low_rank_quadratic_scores,
)
from ..nn.quadratic_ridge import expansion_size
from ._interactions import INTERACTION_CST_CONSTRAINT, estimator_entries
from ._qlr_drivers import LBFGS, NEWTON, PROXIMAL, SGD, SGD_EPOCH, training_rows
from ._sparse_q import SPARSE_PENALTIES, check_sparse_settings, publish_interactions
from ._qlr_problem import PATH_MAXCOR, build_problem, check_feature_scale
from ._qlr_quadratic_c import fit_quadratic_C, fixed_quadratic_C

__all__ = ["QuadraticLogisticRegression"]


# solver="auto" on binary problems: Newton's method on the dual coefficients
# (skquad.nn.quadratic_dual) when the distinct rows are at most the d(d+3)/2
# degree-2 features and at most this many. Its steps cost n^3/3 (a Cholesky),
# L-BFGS's evaluations about 3 n d^2, so it is the faster on few rows.
_KERNEL_NEWTON_MAX_ROWS = 300

# Numbers of X per row block converted to float64 at prediction (128 MB).
_PREDICTION_ROW_ELEMENTS = 1 << 24


@shared_docstring
class QuadraticLogisticRegression(BaseQuadraticClassifier):
    """Logistic regression with a quadratic form: one quadratic neuron per score.

    Each class score is ``z = x^T Q x + w^T x + b`` with ``Q`` symmetric
    (Noel et al., section 2). Binary problems have one score and the logistic
    loss, ``K > 2`` classes have ``K`` scores and the multinomial (softmax)
    loss, as in :class:`~sklearn.linear_model.LogisticRegression`. The model
    minimises

    .. math::

        C \\sum_i s_i \\, \\ell_i
        + \\tfrac12 \\sum_k \\left(\\frac{C}{C_Q} P(Q_k) + \\lVert w_k \\rVert^2\\right)

    (the intercepts are not penalised; ``C_Q`` is ``quadratic_C``). It is
    logistic regression on degree-2 features, so the problem is convex and
    ``solver="lbfgs"`` reaches its global optimum; but the ``n x d(d+1)/2``
    feature matrix is not built beyond 8 MB: scores and gradients are computed in matrix form (``X Q``
    and ``X^T diag(r) X``), with ``O(n d + K d^2)`` memory. (Small problems,
    whose degree-2 matrix has at most 2**20 numbers, are fitted on it: one
    product each way, where the matrix form's time went to its calls.)

    With the default ``penalty="polynomial"``, ``P(Q)`` is the sum of the
    squared coefficients of the degree-2 features (``Q_ii`` for ``x_i^2``,
    ``2 Q_ij`` for ``x_i x_j``), so with ``quadratic_C=None`` the model *is*
    ``make_pipeline(PolynomialFeatures(2, include_bias=False),
    LogisticRegression(C=C))``: the same optimum, without the feature matrix.
    The default ``quadratic_C="auto"`` weighs the quadratic part's penalty on
    held-out rows (below).
    ``penalty="frobenius"`` uses ``P(Q) = ||Q||_F^2`` instead, which does not
    depend on the orientation of the feature axes but penalises the cross
    terms half as much (``2 Q_ij^2`` against ``(2 Q_ij)^2``).

    Quadratic models grow with the square of the input, so standardise the
    features (e.g. ``StandardScaler`` in a pipeline).

    Parameters
    ----------
    C : float, default=1.0
        Inverse of the L2 regularisation strength on ``Q`` and ``w``, as in
        ``LogisticRegression``. ``np.inf`` fits without regularisation (on
        separable data the optimum is then at infinity and the result depends
        on ``Q_init``, ``max_iter`` and ``tol``).
    quadratic_C : "auto", float or None, default="auto"
        The same for ``Q`` alone (its penalty is ``C / quadratic_C`` times
        ``w``'s). None: ``C``, the pipeline's problem. A number: that
        strength, with ``C`` on ``w`` (the pipeline on the degree-2 columns
        scaled by ``sqrt(quadratic_C / C)``); not with a sparse ``penalty``
        or ``C=np.inf``. ``"auto"``: the one of ``C``, ``0.1 C``, ``0.01 C``
        and ``0.001 C`` whose fits on four fifths of the rows score the
        smallest log-loss on the rows held out, up to one standard error
        towards the stronger penalty (:ref:`qlr-quadratic-c`); it costs the
        four candidates' fits on each fifth held out (enough fifths to score
        100 rows). It searches in ``fit`` by
        L-BFGS or Newton's method with a full ``Q``, an L2 ``penalty`` and a
        finite ``C``, on at least 20 rows, standardised features and
        objectives of at most 1e9 flops an evaluation (``3 K n d^2``);
        elsewhere (``partial_fit``, ``solver="sgd"``, ``rank``, Dask, larger
        problems) it is ``C``.
    penalty : {"polynomial", "frobenius", "l1", "elasticnet", "group"}, default="polynomial"
        ``"polynomial"``: ``P(Q) = sum_i Q_ii^2 + 4 sum_{i<j} Q_ij^2``, the L2
        norm of the coefficients of ``PolynomialFeatures(2)``'s features.
        ``"frobenius"``: ``P(Q) = ||Q||_F^2 = sum_i Q_ii^2 + 2 sum_{i<j} Q_ij^2``,
        invariant under rotations of the features.
        ``"l1"``, ``"elasticnet"``: ``LogisticRegression``'s L1 and
        elastic-net penalties on the coefficients of ``PolynomialFeatures(2)``'s
        columns and ``w`` (``l1_ratio ||θ||₁ + (1 - l1_ratio) / 2 ||θ||²``),
        so that few pairs are selected (``interactions_``); ``"group"``: the
        L1 norms of whole rows of ``Q`` (with ``l1_ratio``'s L2 share),
        selecting features whose every interaction is zero. These are solved
        on the implicit features (OWL-QN; FISTA for ``"group"``), to a duality gap below ``tol``
        times the log-loss of the zero model (the
        :ref:`user guide <sparse-q>`); ``solver`` then does not
        apply, and ``max_iter`` counts its iterations.
    l1_ratio : float in [0, 1] or None, default=None
        The L1 share of ``"elasticnet"`` and ``"group"`` (None: 1), as
        ``LogisticRegression``'s.
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
        (``LogisticRegression`` keeps scipy's 10; 20 saves iterations on
        problems with many degree-2 terms).
        With ``"auto"``, binary problems with a full ``Q`` and at most 300
        distinct rows, and no more than the ``d(d+3)/2`` degree-2 features,
        are solved by Newton's method on the dual (kernel) coefficients
        instead, as ``Ridge(solver="auto")`` chooses by shape
        (:func:`skquad.nn.quadratic_dual.kernel_newton_logistic`: one
        ``n x n`` Cholesky per step, 5 to 8 steps where L-BFGS takes 20 to
        40): the same objective and the same optimum, with the same gradient
        test at ``tol``, in less time on such problems. It applies from a cold start (``Q_init="zeros"``,
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
    [shared: interaction_only]
    interaction_cst : {"pairwise", "no_interactions"} or sequence of groups, default=None
        Which features may interact, with
        :class:`~sklearn.ensemble.HistGradientBoostingClassifier`'s meaning:
        each group (a list, tuple or set of feature indices, or of names of
        ``feature_names_in_``) lists features that may interact, so
        ``Q_ab`` (``a != b``) may be nonzero only when some group holds both
        ``a`` and ``b``; the features no group lists form one more group.
        ``"no_interactions"`` allows no cross term, ``"pairwise"`` (like
        None) all of them. The squares ``Q_aa`` are left to
        ``interaction_only``. Every solver keeps the other entries of ``Q``
        at exactly zero, so the model is logistic regression on
        ``PolynomialFeatures(2)``'s columns of the allowed pairs; L-BFGS
        optimises the allowed entries only, and on few allowed pairs it
        computes on their products instead of the ``d x d`` matrix
        products, at a cost that falls with their number. Not with ``rank``.
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
        ``skquad._foundation._runtime``).
    device : {"auto", "cpu", "cuda"} or str, default="auto"
        Where torch computes; ``"auto"`` means the CPU. Learned arrays are
        numpy, so a model fitted on a GPU predicts anywhere: predictions run
        on ``device_``, or on the CPU after unpickling on a machine without it.
    n_threads : "auto" or int, default="auto"
        CPU threads of torch during fit. ``"auto"`` uses one thread for
        products under 2e8 flops (faster on small problems, see
        ``skquad._foundation._threads.choose_thread_count()``) and all of torch's
        threads above; an int fixes the count. The previous setting is
        restored after the fit, also when fits run concurrently in threads.

    dtype : {"float32", "float64"} or None, default=None
        Precision of the computation. None follows the input, as
        ``LogisticRegression`` does: float32 data are trained in float32
        (faster, to the same objective within the default ``tol``),
        anything else in float64. float32 cannot resolve a ``tol`` below
        about 1e-6 (L-BFGS stops when the objective no longer changes in
        float32), so pass ``dtype="float64"`` when the optimum is needed to
        high accuracy. float64 L-BFGS fits on dense CPU rows run
        their first iterations on float32 copies of the products (about
        half the time per evaluation) and go on in float64 from where
        float32's precision runs out; they always end on a float64
        evaluation and its gradient test, so ``tol`` keeps its float64
        meaning. The fitted arrays (``Q_``, ``coef_``,
        ``intercept_``) are in the training dtype, and the scores and
        probabilities in ``numpy.result_type(X, coef_)``, as
        ``LogisticRegression``'s.

    [shared: clip_inputs]

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
    quadratic_C_ : float
        The ``quadratic_C`` of the fit: the number given, the one
        ``"auto"`` chose, or ``C``.
    Q_vectors_ : ndarray of shape (n_scores, n_features, rank)
        Only when ``rank`` is set: the vectors ``v_j`` (columns).
    Q_scales_ : ndarray of shape (n_scores, rank)
        Only when ``rank`` is set: the scales ``s_j``.
    n_interactions_ : int
        Only with a sparse ``penalty``: the number of pairs ``a < b`` with a
        nonzero ``Q_ab`` (in some score).
    interactions_ : ndarray of shape (n_interactions_, 2)
        Only with a sparse ``penalty``: those pairs.
    solver_ : str
        The method that fitted the model: ``"proximal"`` (sparse penalties), ``"lbfgs"``, ``"newton-dual"``
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
    [shared-tight: data_min_ data_max_]

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
    _array_api_support = True
    _computes_on_tensors = ("fit", "predict")

    # Dask collections: fit is data-parallel over the row blocks (linear_model/_dask.py).
    _fits_dask_collections = True

    _parameter_constraints = {
        "C": [Interval(Real, 0, None, closed="right")],
        "quadratic_C": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "penalty": [StrOptions({"polynomial", "frobenius", *SPARSE_PENALTIES})],
        "l1_ratio": [Interval(Real, 0, 1, closed="both"), None],
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
        "interaction_only": ["boolean"],
        "interaction_cst": INTERACTION_CST_CONSTRAINT,
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
        quadratic_C="auto",
        penalty="polynomial",
        l1_ratio=None,
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
        interaction_only=False,
        interaction_cst=None,
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
        self.quadratic_C = quadratic_C
        self.penalty = penalty
        self.l1_ratio = l1_ratio
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
        self.interaction_only = interaction_only
        self.interaction_cst = interaction_cst
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads
        self.dtype = dtype
        self.clip_inputs = clip_inputs

    # ------------------------------------------------------------------ fit
    @dispatch_inputs
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
        previous = self._previous_solution() if self.warm_start else None
        if is_dask_collection(X, y, sample_weight):
            from ._dask import logistic_training_blocks

            # validated and persisted on the workers, released after the fit
            with logistic_training_blocks(self, X, y, sample_weight) as data:
                return self._solve(data, previous, quadratic_C=fixed_quadratic_C(self))
        X, y_encoded, sample_weight = self._validate_training_data(X, y, sample_weight)
        quadratic_C = fit_quadratic_C(self, X, y_encoded, sample_weight)
        return self._train(X, y_encoded, sample_weight, previous, quadratic_C=quadratic_C)

    def _sgd_only(self):
        if self.solver != "sgd":
            raise AttributeError(
                f"partial_fit is only available for solver='sgd', not {self.solver!r}."
            )
        return True

    @available_if(_sgd_only)
    @dispatch_inputs
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
            # A changed rank cannot continue the fitted model (restarting would
            # reset n_iter_, t_ and loss_curve_ silently); like the networks, refuse.
            fitted_rank = None if previous["vectors"] is None else previous["vectors"].shape[2]
            raise ValueError(
                f"rank={self.rank!r} differs from the fitted model's rank={fitted_rank!r}: "
                "partial_fit continues the fitted model, so it cannot change its shape. "
                f"Set rank={fitted_rank!r} back to continue, or call fit to start over "
                "with the new rank."
            )
        return self._train(X, y_encoded, sample_weight, previous, partial=True,
                           quadratic_C=fixed_quadratic_C(self))

    def _fit_path(self, X, y, sample_weight, Cs, quadratic_Cs=None):
        """Fit at each ``C`` of ``Cs`` in turn (with ``quadratic_Cs``' entry, None: ``C``), each
        from the previous solution; yields after each. The data are prepared once for the path
        (the folds of the CV and of ``quadratic_C="auto"``, whose own fit is the atomic one)."""
        X, y_encoded, sample_weight = self._validate_training_data(X, y, sample_weight)
        self._check_feature_scale(X, every_row=False)
        data = training_rows(X, y_encoded, sample_weight, self.classes_, merge=True)
        # the fits differ by the penalty only: L-BFGS carries its pairs from C to C
        data.design_cache[PATH_MEMORY] = PathMemory(size=PATH_MAXCOR)
        allowed = self._allowed_entries(data.n_features)
        for C, quadratic_C in zip(Cs, [None] * len(Cs) if quadratic_Cs is None else quadratic_Cs):
            self.C = float(C)
            # where the rule solves a cold start by Newton's method on the dual, each fit starts
            # cold: its few Cholesky steps cost less than L-BFGS from the last fit
            cold = self._route(data, None, False, allowed) is NEWTON
            yield self._solve(data, None if cold else self._previous_solution(),
                              step_size=self._step_size(), quadratic_C=quadratic_C)

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

    def _train(self, X, y_encoded, sample_weight, previous, *, partial=False, quadratic_C=None):
        """Fit from validated in-memory data: the rows the drivers read, then :meth:`_solve`."""
        step_size = self._step_size()
        stochastic = partial or self.solver == "sgd"
        self._check_feature_scale(X, every_row=stochastic)
        data = training_rows(X, y_encoded, sample_weight, self.classes_, merge=not stochastic)
        return self._solve(data, previous, step_size=step_size, partial=partial,
                           quadratic_C=quadratic_C)

    def _check_feature_scale(self, X, *, every_row):
        """:func:`check_feature_scale` over the rows the driver reads. A full-batch driver reads the
        rows of positive weight (the merge drops the others), whose range validation recorded;
        SGD and ``partial_fit`` (``every_row``) read every row of ``X``, and ``partial_fit``'s
        recorded range spans its earlier calls too."""
        bounds = None if every_row else (self.data_min_, self.data_max_)
        check_feature_scale(X, type(self).__name__, bounds)

    def _solve(self, data, previous, *, step_size=None, partial=False, quadratic_C=None):
        """Choose the driver, build the problem, solve it and publish the solution
        (``quadratic_C`` None: ``C``)."""
        if previous is not None and not self._previous_fits(previous, data.n_features):
            previous = None
        allowed = self._allowed_entries(data.n_features)
        route = self._route(data, previous, partial, allowed)
        problem = build_problem(
            self, route, data, previous, step_size=step_size, allowed=allowed,
            # partial_fit call k shuffles with its own stream (len(loss_curve_) counts the calls)
            call=len(getattr(self, "loss_curve_", [])) if partial and previous is not None else 0,
            quadratic_C=quadratic_C,
        )
        problem.publish(route.solve(problem, data), route.solver, data.given)
        self.quadratic_C_ = float(self.C if quadratic_C is None else quadratic_C)
        if route is PROXIMAL:
            publish_interactions(self)
        return self

    def _allowed_entries(self, n_features):
        """The entries of ``Q`` the constraints allow (None: all), refused with ``rank``."""
        allowed = estimator_entries(self, n_features)
        if allowed is not None and self.rank is not None:
            raise ValueError(
                f"rank={self.rank!r} cannot be combined with interaction_only or "
                "interaction_cst: a low-rank Q = V diag(s) V^T has no fixed zero entries. "
                "Set rank=None to constrain the interactions."
            )
        return allowed

    def _route(self, data, previous, partial, allowed=None):
        """The driver of a fit: the one rule (see ``solver``).

        Dask blocks: L-BFGS over the blocks. ``partial_fit`` and ``solver="sgd"``: SGD.
        ``solver="auto"`` takes Newton's method on the dual where it gives the L-BFGS
        optimum from a cold start and is the faster: binary, full ``Q``, finite ``C``,
        dense CPU rows, at most as many distinct rows as degree-2 features and
        ``_KERNEL_NEWTON_MAX_ROWS``. Else L-BFGS.
        """
        if self.penalty in SPARSE_PENALTIES:
            check_sparse_settings(self, data.distributed or partial or self.solver == "sgd")
            return PROXIMAL
        if data.distributed:
            from ._dask import DATA_PARALLEL

            return DATA_PARALLEL
        if partial or self.solver == "sgd":
            return SGD_EPOCH if partial else SGD
        newton = (
            self.solver == "auto"
            and self._n_scores == 1
            and self.rank is None
            and previous is None
            and self.Q_init == "zeros"
            and np.isfinite(self.C)
            and not scipy.sparse.issparse(data.X)
            and resolve_device(self.device).type == "cpu"
            and data.n_rows
            <= min(_KERNEL_NEWTON_MAX_ROWS, expansion_size(data.n_features, allowed))
        )
        return NEWTON if newton else LBFGS

    def _callback_max_subtasks(self, method_name):
        # L-BFGS (scipy's last, empty iteration) and the dual Newton steps both
        # report up to max_iter + 1 subtasks; SGD one per epoch.
        if method_name == "fit" and self.solver != "sgd":
            return int(self.max_iter) + 1
        return super()._callback_max_subtasks(method_name)

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

    # -------------------------------------------------------------- predict
    def _raw_scores(self, X):
        """Scores computed in float64, returned in ``result_type(X, coef_)`` (LogisticRegression's dtype)."""
        tensor = is_tensor(X)  # (array API input: computed on its device, returned as a tensor)
        device = X.device if tensor else prediction_device(self.device_)
        if not scipy.sparse.issparse(X) and X.shape[0] * X.shape[1] > _PREDICTION_ROW_ELEMENTS:
            # Row blocks, each converted to float64 on its own: the whole of a
            # float32 X in float64 would be twice the data.
            step = max(1, _PREDICTION_ROW_ELEMENTS // X.shape[1])
            return namespace_of(X).concat(
                [self._raw_scores(X[start : start + step]) for start in range(0, X.shape[0], step)]
            )
        if scipy.sparse.issparse(X):
            X_t = SparseRows(X, device, torch.float64)
        elif tensor:
            X_t = X.to(torch.float64).contiguous()
        else:
            # C order, as in training: the summation order (and so the last
            # bit of every score) does not depend on the input's memory layout
            X_t = as_tensor(np.ascontiguousarray(X), dtype=torch.float64, device=device)
        as_float64 = lambda array: torch.as_tensor(
            array if is_tensor(array) else np.asarray(array, dtype=np.float64), dtype=torch.float64, device=device)
        coef, intercept = as_float64(self.coef_), as_float64(self.intercept_)
        # the fits' thread rule (thread_count by flops): a small prediction, such as a CV
        # fold's scoring, runs on one thread, whose products cost less than a second one's sync
        flops = 2.0 * X_t.shape[0] * X_t.shape[1] * (X_t.shape[1] + 1) * coef.shape[0]
        with torch.no_grad(), limit_threads(thread_count("auto", device, flops)):
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
        dtype = np.result_type(numpy_dtype(X.dtype), numpy_dtype(self.coef_.dtype))
        return scores.to(getattr(torch, dtype.name)) if tensor else to_numpy(scores).astype(dtype, copy=False)
