"""QuadraticRegressionCV: QuadraticRegression with ``alpha`` chosen as RidgeCV chooses it."""

import copy
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.model_selection import GridSearchCV, check_cv
from sklearn.utils import check_scalar
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metadata_routing import _routing_enabled

from .._foundation._atomic import atomic_fit
from .._foundation._cv_routing import splitter_params, splitter_router
from .._base import BaseQuadraticRegressor, dispatch_inputs
from .._foundation._docstrings import shared_docstring
from .._foundation._held_out import SELECTION_RULES
from .._foundation._memory import check_memory
from .._foundation._runtime import separate_calls_blas
from ..nn.quadratic_ridge import (
    QuadraticRidgeLeaveOneOut,
    coefficients_to_model,
    expansion_size,
    quadratic_model_scores,
)
from ._interactions import (
    INTERACTION_CST_CONSTRAINT,
    estimator_entries,
    indexed_groups,
    pair_groups,
)
from ._sparse_q import SPARSE_PENALTIES, alpha_grid, regression_path, selected_pairs
from ._regression import (
    QUADRATIC_RATIOS,
    QuadraticRegression,
    check_finite_solution,
    fitted_quadratic_scores,
    publish_penalties,
    publish_quadratic_model,
)

__all__ = ["QuadraticRegressionCV", "UnitLeaveOneOutCV"]


class _PredictionsAsInput(RegressorMixin, BaseEstimator):
    """A "regressor" whose predictions are its input: scores given predictions with a scorer."""

    def predict(self, predictions):
        return predictions


@shared_docstring
class QuadraticRegressionCV(BaseQuadraticRegressor):
    """:class:`QuadraticRegression` with its penalties chosen by cross-validation, as RidgeCV.

    Every pair of an ``alpha`` of ``alphas`` (the linear coefficients'
    penalty) and a ratio of ``quadratic_ratios`` (the quadratic block's
    penalty over ``alpha``) is scored. With ``quadratic_ratios=(1.0,)`` it is
    :class:`~sklearn.linear_model.RidgeCV` on the degree-2 features of
    ``PolynomialFeatures(2, include_bias=False)``, so ``alpha_``,
    ``best_score_`` and the predictions are RidgeCV's on the expanded data,
    without forming the ``n x d(d+3)/2`` feature matrix.

    By default (``cv=None``) the selection is RidgeCV's efficient
    leave-one-out: one eigendecomposition, of the ``n x n`` kernel (computed
    from ``X``, ``O(n² d + n³)``) when ``n <= D = d(d+3)/2``, else of the
    ``D x D`` normal matrix (``O(n D² + D³)``, streamed over row blocks),
    gives the exact leave-one-out errors of every ``alpha`` at once, at about
    the cost of two or three fits instead of ``n`` per ``alpha``; one more per
    ratio (ridge on ``[x, γ φ_q]`` is the problem with ``quadratic_alpha =
    alpha / γ²``). With ``cv`` an integer or a splitter, each pair is
    fitted on each fold by
    :class:`QuadraticRegression` through
    :class:`~sklearn.model_selection.GridSearchCV`, as RidgeCV does.

    Both selections score the unclipped model on the held-out rows (the
    leave-one-out's closed form cannot clip), so that ``alpha_`` and
    ``best_score_`` are RidgeCV's; ``clip_inputs`` and ``clip_outputs`` act
    on the predictions of the model refitted with ``alpha_``.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,), default=(0.1, 1.0, 10.0)
        The ``alpha`` values to try (Ridge's meaning). Strictly positive for
        the leave-one-out (``cv=None``).
    quadratic_ratios : array-like of shape (n_ratios,), default=(1.0, 10.0, 100.0, 1e3, 1e4)
        The ratios ``quadratic_alpha / alpha`` to try with every ``alpha``
        (see :class:`QuadraticRegression`: the quadratic block's own
        penalty); positive. ``(1.0,)``: one penalty, RidgeCV's search on the
        degree-2 features. The leave-one-out costs one eigendecomposition
        per ratio.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept.
    scoring : str, callable or None, default=None
        None: the negative mean squared leave-one-out error (``cv=None``,
        weighted by ``sample_weight``) or R² (``cv`` given), as RidgeCV. Else
        a scorer name or callable, given the leave-one-out predictions
        (``cv=None``) or each fold's model.
    cv : int, cross-validation generator, iterable or None, default=None
        None: the efficient leave-one-out. Otherwise the folds of
        :class:`~sklearn.model_selection.GridSearchCV` (an integer is a
        :class:`~sklearn.model_selection.KFold`).
    gcv_mode : {"auto", "eigen", "gram", "cov"} or None, default=None
        The decomposition of the leave-one-out. None, ``"auto"`` and
        ``"eigen"``: as RidgeCV's ``"eigen"``, the ``n x n`` kernel when
        ``n <= D``, else the ``D x D`` normal matrix. ``"gram"`` or ``"cov"``
        force one of them.
    store_cv_results : bool, default=False
        Keep the leave-one-out values in ``cv_results_`` (``cv=None`` only),
        those of the chosen ratio.
    alpha_per_target : bool, default=False
        Choose ``alpha`` and the ratio per target for a 2-D ``y`` (``cv=None``
        only).
    interaction_only : bool, default=False
        No squared terms (see :class:`QuadraticRegression`).
    interaction_cst : {"pairwise", "no_interactions"} or sequence of groups, default=None
        Which features may interact (see :class:`QuadraticRegression`): the
        selection is RidgeCV's on the allowed pairs' features.
    penalty : {"l2", "l1", "elasticnet", "group"}, default="l2"
        A sparse penalty (see :class:`QuadraticRegression`) makes this
        :class:`~sklearn.linear_model.LassoCV` / ``ElasticNetCV`` on the
        degree-2 features: each fold of ``cv`` (None: 5-fold) solves the path
        of ``alphas`` from the largest, warm-started; an integer ``alphas``
        is that many values from ``alpha_max`` (the smallest ``alpha`` whose
        model is zero) down to ``alpha_max / 1000``; the mean squared error
        chooses (``quadratic_ratios``, ``scoring`` and ``gcv_mode`` do not apply).
    l1_ratio : float, list of float or None, default=None
        With a sparse ``penalty``: the ``l1_ratio`` values tried (None: 1).
    selection_rule : {"best", "one_standard_error"}, default="best"
        With a sparse ``penalty``, which ``alpha`` the folds' errors choose.
        ``"best"``: the smallest mean squared error, ``LassoCV``'s choice.
        ``"one_standard_error"``: the largest ``alpha`` (with several
        ``l1_ratio``, the first of them at that step of the grids) whose mean
        error is within one standard error of the smallest, the standard
        error of the best ``alpha``'s errors over the folds (Breiman's rule;
        glmnet's ``lambda.1se``): the sparsest model the folds cannot tell
        from the best, where the best mean over-selects pairs. With
        ``penalty="l2"`` (``cv=None`` and ``scoring=None`` only) the same rule
        on the rows' leave-one-out squared errors, over every ``(ratio,
        alpha)`` ranked by its effective degrees of freedom
        ``Σ λ / (λ + alpha)``: the simplest model within one standard error.
    relax : bool, default=False
        With a sparse ``penalty``: the relaxed lasso (as
        :class:`QuadraticLogisticRegressionCV`'s ``relax``). Each fold's
        model at each ``alpha`` only selects the pairs; the L2 model at
        ``relax_alpha`` on its selected pairs (the squares and linear terms
        all kept) is fitted on the same rows, and its errors make
        ``mse_path_``; the model is the refit of the pairs that the chosen
        ``alpha``'s L1 fit on all the data selects.
    relax_alpha : float, default=1.0
        The ``alpha`` of the relaxed refits (:class:`QuadraticRegression`'s).
    [shared: clip_inputs clip_outputs:QuadraticRegression]

    Attributes
    ----------
    alpha_ : float or ndarray of shape (n_targets,)
        The chosen ``alpha`` (one per target with ``alpha_per_target``).
    quadratic_alpha_ : float or ndarray of shape (n_targets,)
        The chosen penalty of the quadratic coefficients, ``alpha_`` times
        the chosen ratio.
    best_score_ : float or ndarray of shape (n_targets,)
        Its score.
    cv_results_ : ndarray of shape (n_samples, n_alphas) or (n_samples, n_targets, n_alphas)
        With ``store_cv_results``: the squared leave-one-out errors (times
        ``sample_weight``) when ``scoring`` is None, else the leave-one-out
        predictions.
    Q_ : ndarray of shape (n_features, n_features) or (n_targets, n_features, n_features)
        Symmetric quadratic forms of the model refitted with ``alpha_``.
    alphas_, mse_path_, l1_ratio_ : ndarray, ndarray, float or None
        With a sparse ``penalty``: ElasticNetCV's grid, held-out mean squared
        errors (shape ``(n_l1_ratios, n_alphas, n_folds)``, squeezed) and chosen ``l1_ratio``.
    n_interactions_, interactions_ : int, ndarray of shape (n_interactions_, 2)
        With a sparse ``penalty``: the selected pairs ``a < b`` and their number.
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Linear coefficients.
    intercept_ : float or ndarray of shape (n_targets,)
    [shared-tight: n_outputs_ n_features_in_ feature_names_in_ data_min_:QuadraticRegression
        data_max_]

    [shared-tight: target_min_ target_max_]

    See Also
    --------
    QuadraticRegression : the model at one ``alpha``.
    sklearn.linear_model.RidgeCV : the same selection on linear features.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import QuadraticRegressionCV
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(200, 3))
    >>> y = X[:, 0] * X[:, 1] - X[:, 2] ** 2 + 0.1 * rng.randn(200)
    >>> model = QuadraticRegressionCV(alphas=[1e-3, 1e-1, 10.0]).fit(X, y)
    >>> float(model.alpha_)
    0.1
    """

    # On Dask collections fit refuses and names the single estimator to fit with the choice.
    _dask_single_estimator = ("QuadraticRegression", "alpha=search.alpha_")

    _parameter_constraints = {
        "alphas": ["array-like", Interval(Real, 0, None, closed="neither")],
        "quadratic_ratios": ["array-like"],
        "fit_intercept": ["boolean"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "cv": ["cv_object"],
        "gcv_mode": [StrOptions({"auto", "eigen", "gram", "cov"}), None],
        "store_cv_results": ["boolean"],
        "alpha_per_target": ["boolean"],
        "interaction_only": ["boolean"],
        "interaction_cst": INTERACTION_CST_CONSTRAINT,
        "penalty": [StrOptions({"l2", *SPARSE_PENALTIES})],
        "l1_ratio": ["array-like", Interval(Real, 0, 1, closed="both"), None],
        "selection_rule": [StrOptions(set(SELECTION_RULES))],
        "relax": ["boolean"],
        "relax_alpha": [Interval(Real, 0, None, closed="left")],
        "clip_inputs": ["boolean"],
        "clip_outputs": ["boolean"],
    }

    _accept_sparse = True
    _array_api_support = True
    _computes_on_tensors = ("predict",)  # the leave-one-out with NumPy; predictions on X's device
    # What the leave-one-out leaves out of a weighted row: the whole row, as
    # RidgeCV (see QuadraticRidgeLeaveOneOut's leave_out).
    _leave_out = "row"

    def __init__(
        self,
        alphas=(0.1, 1.0, 10.0),
        *,
        quadratic_ratios=QUADRATIC_RATIOS,
        fit_intercept=True,
        scoring=None,
        cv=None,
        gcv_mode=None,
        store_cv_results=False,
        alpha_per_target=False,
        interaction_only=False,
        interaction_cst=None,
        penalty="l2",
        l1_ratio=None,
        selection_rule="best",
        relax=False,
        relax_alpha=1.0,
        clip_inputs=True,
        clip_outputs=True,
    ):
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.selection_rule = selection_rule
        self.relax = relax
        self.relax_alpha = relax_alpha
        self.alphas = alphas
        self.quadratic_ratios = quadratic_ratios
        self.fit_intercept = fit_intercept
        self.scoring = scoring
        self.cv = cv
        self.gcv_mode = gcv_mode
        self.store_cv_results = store_cv_results
        self.alpha_per_target = alpha_per_target
        self.interaction_only = interaction_only
        self.interaction_cst = interaction_cst
        self.clip_inputs = clip_inputs
        self.clip_outputs = clip_outputs

    def _checked_ratios(self):
        """``quadratic_ratios`` as a float array, or ValueError naming it."""
        values = np.atleast_1d(np.asarray(self.quadratic_ratios, dtype=np.float64))
        if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ValueError(
                "quadratic_ratios must be a non-empty list of positive numbers; got "
                f"{self.quadratic_ratios!r}."
            )
        return values

    def _checked_alphas(self):
        """``alphas`` as a float array, checked one by one with RidgeCV's messages."""
        # RidgeCV's rule: the leave-one-out needs alpha > 0, the folds alpha >= 0.
        boundaries = "neither" if self.cv is None else "left"
        values = self.alphas
        if np.ndim(values) == 0:
            values = [values]
        if len(values) == 0:
            raise ValueError("alphas must hold at least one value.")
        names = ["alphas"] if len(values) == 1 else [f"alphas[{i}]" for i in range(len(values))]
        return np.array(
            [
                check_scalar(value, name, target_type=Real, min_val=0.0,
                             include_boundaries=boundaries)
                for name, value in zip(names, values)
            ],
            dtype=np.float64,
        )

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None, **params):
        """Choose ``alpha`` and fit the model with it on all the data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the ridge objective; with ``cv=None`` they also weight
            the leave-one-out score (and are passed to ``scoring``), as in
            RidgeCV, whose convention this keeps: each left-out unit is a
            whole row, whatever its weight.
        **params : dict
            Metadata routed to ``cv``'s ``split`` (e.g. ``groups``, with
            ``cv`` a group splitter); needs
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : QuadraticRegressionCV
        """
        split_params = splitter_params(self, params)
        if self.cv is not None and self.store_cv_results:
            raise ValueError("cv!=None and store_cv_results=True are incompatible")
        if self.cv is not None and self.alpha_per_target:
            raise ValueError("cv!=None and alpha_per_target=True are incompatible")
        if self.penalty == "l2" and self.selection_rule != "best" and (
                self.cv is not None or self.scoring is not None):
            raise ValueError(
                f"selection_rule={self.selection_rule!r} with penalty='l2' ranks the "
                "leave-one-out's squared errors: it needs cv=None and scoring=None (or a "
                f"sparse penalty); got cv={self.cv!r}, scoring={self.scoring!r}."
            )
        if self.relax and self.penalty == "l2":
            raise ValueError("relax=True refits the pairs a sparse penalty selects: it needs "
                             "penalty='l1', 'elasticnet' or 'group', got penalty='l2'.")
        given_weight = sample_weight
        X, Y, sample_weight = self._validate_training_data(X, y, sample_weight)
        if self.penalty != "l2":
            return self._fit_sparse_path(X, Y, sample_weight, split_params)
        alphas, ratios = self._checked_alphas(), self._checked_ratios()
        if self.cv is None:
            self._fit_leave_one_out(X, Y, sample_weight, given_weight, alphas, ratios)
        else:
            self._fit_folds(X, Y, given_weight, alphas, ratios, split_params)
        return self

    def get_metadata_routing(self):
        """The metadata routing of ``fit``'s ``params`` to ``cv``'s ``split`` (``groups``).

        Returns
        -------
        routing : MetadataRouter
        """
        return splitter_router(self)

    def _mode(self, n_samples, n_features, allowed=None):
        if self.gcv_mode in ("gram", "cov"):
            return self.gcv_mode
        return "gram" if n_samples <= expansion_size(n_features, allowed) else "cov"

    def _fit_leave_one_out(self, X, Y, sample_weight, given_weight, alphas, ratios):
        n, d = X.shape
        allowed = estimator_entries(self, d)
        D = expansion_size(d, allowed)
        k, n_alphas = Y.shape[1], alphas.shape[0]
        mode = self._mode(n, d, allowed)
        size = n if mode == "gram" else D
        # The matrices (two kernels or the normal matrix, the scaled one), the
        # eigenvectors and eigh's workspace, plus the errors and fitted values
        # for every alpha.
        check_memory(
            8.0 * (5 * size**2 + 3 * n * (k + 1) * n_alphas),
            "cv", self.cv,
            f"the leave-one-out's eigendecomposition of a {size} x {size} matrix",
            advice="pass cv=5 (K-fold with QuadraticRegression's memory-bounded solvers).",
        )
        # the search's largest BLAS call: an eigendecomposition (about 10 size³ flops) or the
        # errors' product with its eigenvectors (2 n size²), with Python work between calls
        largest_call = max(10.0 * size**3, 2.0 * n * size * size)
        with separate_calls_blas(largest_call):
            loo = QuadraticRidgeLeaveOneOut(
                X, Y, sample_weight, fit_intercept=bool(self.fit_intercept), mode=mode,
                leave_out=self._leave_out, allowed=allowed,
            )
            # (ratio, alpha) ranked ratio-major: the first best wins, as in RidgeCV's scan.
            scores, values, losses, dfs = [], [], [], []
            kept, kept_score = None, -np.inf  # the best ratio's decomposition so far
            for ratio in ratios:
                loo.set_quadratic_scale(1.0 / np.sqrt(ratio))
                errors = loo.errors(alphas)
                ratio_scores, ratio_values = self._leave_one_out_scores(
                    errors, Y, sample_weight, given_weight)
                scores.append(ratio_scores)
                values.append(ratio_values)
                if self.selection_rule != "best":
                    losses.append(errors**2)
                    dfs.append(_degrees_of_freedom(loo.eigenvalues, alphas))
                summary = np.mean(ratio_scores, axis=0) if ratio_scores.ndim == 2 else ratio_scores
                best_here = np.max(np.where(np.isnan(summary), -np.inf, summary))
                if best_here > kept_score:
                    kept, kept_score = loo.decomposition(), best_here
        scores = np.stack(scores, axis=-2)  # (k, R, A) or (R, A)
        per_target = self.alpha_per_target and k > 1
        # the rule's (n, k, R * A) row losses and (R * A,) degrees of freedom, ratio-major
        losses = np.stack(losses, axis=-2).reshape(n, k, -1) if losses else None
        dfs = np.concatenate(dfs) if dfs else None
        if per_target:
            flat = scores.reshape(k, -1)
            best = np.array([self._loo_choice(flat[j], None if losses is None else losses[:, j], dfs)
                             for j in range(k)])
            chosen_ratio, chosen_alpha = np.divmod(best, n_alphas)
            self.best_score_ = flat[np.arange(k), best]
        else:
            if scores.ndim == 3:
                scores = scores.mean(axis=0)
            best = self._loo_choice(scores.ravel(), None if losses is None else losses.mean(axis=1), dfs)
            self.best_score_ = float(scores.ravel()[best])
            chosen_ratio, chosen_alpha = (np.full(k, index) for index in divmod(best, n_alphas))
        alpha, quadratic = alphas[chosen_alpha], alphas[chosen_alpha] * ratios[chosen_ratio]
        coefficients = np.empty((D, k))
        intercept = np.empty(k)
        for index in np.unique(chosen_ratio):
            targets = np.flatnonzero(chosen_ratio == index)
            scale = 1.0 / np.sqrt(ratios[index])
            if kept is not None and kept[0] == scale:
                loo.restore(kept)
            loo.set_quadratic_scale(scale)
            c, b = loo.coefficients(alpha)
            coefficients[:, targets], intercept[targets] = c[:, targets], b[targets]
        check_finite_solution(self, coefficients, intercept, X)
        publish_quadratic_model(self, coefficients, intercept, d, X.dtype, allowed)
        publish_penalties(self, alpha if per_target else alpha[0],
                          quadratic if per_target else quadratic[0])
        if self.store_cv_results:  # the values of each target's chosen ratio
            kept = np.stack([values[index][:, j, :] for j, index in enumerate(chosen_ratio)], axis=1)
            kept = kept.astype(X.dtype, copy=False)
            self.cv_results_ = kept[:, 0, :] if self._fitted_y_ndim == 1 else kept

    def _loo_choice(self, scores, losses, dfs):
        """Index of the chosen candidate: the first best score, or the selection rule applied to
        the rows' squared errors ``losses`` (n, candidates) from the fewest degrees of freedom."""
        if losses is None:
            return _first_best(scores)
        order = np.argsort(dfs, kind="stable")
        return int(order[SELECTION_RULES[self.selection_rule](losses[:, order])])

    def _leave_one_out_scores(self, errors, Y, sample_weight, given_weight):
        """Scores (k, A) or (A,) of the leave-one-out errors (n, k, A), and the values kept."""
        if self.scoring is None:
            values = errors**2
            axis = 0 if self.alpha_per_target else (0, 1)
            return np.mean(-values, axis=axis), values
        # RidgeCV's: y - looe in the weighted space, back to the original.
        root = np.sqrt(sample_weight)
        values = np.asarray(Y, dtype=np.float64)[:, :, None] - errors / root[:, None, None]
        return self._scores_of_predictions(values, Y, given_weight), values

    def _scores_of_predictions(self, predictions, Y, given_weight):
        """``scoring`` of the leave-one-out predictions (n, k, A): (k, A) or (A,) scores."""
        scorer = check_scoring(self, scoring=self.scoring)
        identity = _PredictionsAsInput()
        params = {} if given_weight is None else {"sample_weight": given_weight}
        one_dimensional = self._fitted_y_ndim == 1
        n_alphas = predictions.shape[2]
        if self.alpha_per_target and Y.shape[1] > 1:
            return np.array(
                [
                    [scorer(identity, predictions[:, j, a], Y[:, j], **params) for a in range(n_alphas)]
                    for j in range(Y.shape[1])
                ]
            )
        target = Y[:, 0] if one_dimensional else Y
        return np.array(
            [
                scorer(identity, predictions[:, 0, a] if one_dimensional else predictions[:, :, a],
                       target, **params)
                for a in range(n_alphas)
            ]
        )

    def _fit_folds(self, X, Y, given_weight, alphas, ratios, split_params):
        # Every (alpha, ratio) pair, ratio-major as the leave-one-out ranks them. The folds
        # score the unclipped model, as the leave-one-out's closed form does: both choose
        # as RidgeCV on the expanded data.
        grid = [{"alpha": [float(alpha)],
                 "quadratic_alpha": [None if ratio == 1.0 or alpha == 0 else float(alpha * ratio)]}
                for ratio in ratios for alpha in alphas]
        constraints = dict(
            clip_inputs=False,
            clip_outputs=False,
            interaction_only=self.interaction_only,
            interaction_cst=indexed_groups(
                self.interaction_cst, X.shape[1], getattr(self, "feature_names_in_", None)
            ),
        )
        target = Y[:, 0] if self._fitted_y_ndim == 1 else Y
        # the folds made here, with the routed groups: GridSearchCV takes them as a list
        folds = list(check_cv(self.cv, target).split(X, target, **split_params))
        model = QuadraticRegression(fit_intercept=self.fit_intercept, **constraints)
        scoring = check_scoring(model, scoring=self.scoring, allow_none=True)
        if _routing_enabled():
            # the weights go to every fold's fit and not to the scorer, as without routing
            model.set_fit_request(sample_weight=True).set_score_request(sample_weight=False)
            if hasattr(scoring, "set_score_request"):
                scoring = copy.deepcopy(scoring).set_score_request(sample_weight=False)
        search = GridSearchCV(model, grid, cv=folds, scoring=scoring)
        params = {} if given_weight is None else {"sample_weight": given_weight}
        search.fit(X, Y[:, 0] if self._fitted_y_ndim == 1 else Y, **params)
        best = search.best_estimator_
        publish_penalties(self, best.alpha_, best.quadratic_alpha_)
        self.best_score_ = float(search.best_score_)
        self.Q_, self.coef_, self.intercept_ = best.Q_, best.coef_, best.intercept_

    def _fit_sparse_path(self, X, Y, weight, split_params):
        """LassoCV / ElasticNetCV: each fold's path down ``alphas`` (warm starts), mean squared error."""
        d, allowed = X.shape[1], estimator_entries(self, X.shape[1])
        ratios = [None] if self.l1_ratio is None else list(np.atleast_1d(self.l1_ratio))
        target = Y[:, 0] if self._fitted_y_ndim == 1 else Y
        folds = list(check_cv(5 if self.cv is None else self.cv, target).split(X, target,
                                                                               **split_params))
        grids, errors = [], []
        for ratio in ratios:
            grid = (alpha_grid(X, Y, weight, self.penalty, ratio, allowed, self.alphas)
                    if isinstance(self.alphas, Integral) else
                    np.sort(self._checked_alphas())[::-1])
            per_fold = []
            for train, test in folds:
                X_train, weight_train, X_test = X[train], weight[train], X[test]
                path = regression_path(X_train, Y[train], weight_train, grid, self.penalty,
                                       ratio, allowed, fit_intercept=self.fit_intercept,
                                       tol=1e-4, max_iter=1000)
                relaxed = {}  # neighbouring alphas often select the same pairs: one refit
                models = []
                for c, b, _ in path:
                    coef, Q = coefficients_to_model(c, d, allowed)
                    if self.relax:
                        pairs = selected_pairs(Q)
                        key = pairs.tobytes()
                        if key not in relaxed:
                            relaxed[key] = self._relaxed(pairs, X_train, target[train],
                                                         weight_train)
                        Q, coef, b = (np.reshape(getattr(relaxed[key], name), shape)
                                      for name, shape in (("Q_", Q.shape), ("coef_", coef.shape),
                                                          ("intercept_", -1)))
                    models.append((Q, coef, b))
                per_fold.append([np.average((quadratic_model_scores(X_test, *model) - Y[test])
                                            ** 2, axis=0, weights=weight[test]).mean()
                                 for model in models])
            grids.append(grid)
            errors.append(np.array(per_fold).T)  # (n_alphas, n_folds), ElasticNetCV's mse_path_
        self.alphas_, self.mse_path_ = np.squeeze(grids), np.squeeze(errors)
        r, a = self._chosen_candidate(np.array(errors))
        self.alpha_, self.l1_ratio_ = float(grids[r][a]), ratios[r]
        best = QuadraticRegression(alpha=self.alpha_, penalty=self.penalty, l1_ratio=ratios[r],
                                   fit_intercept=self.fit_intercept,
                                   interaction_only=self.interaction_only,
                                   interaction_cst=indexed_groups(
                                       self.interaction_cst, d,
                                       getattr(self, "feature_names_in_", None)),
                                   ).fit(X, target, weight)
        self.interactions_, self.n_interactions_ = best.interactions_, best.n_interactions_
        if self.relax:
            best = self._relaxed(best.interactions_, X, target, weight)
        self.Q_, self.coef_, self.intercept_ = best.Q_, best.coef_, best.intercept_
        return self

    def _relaxed(self, pairs, X, target, weight):
        """``relax``'s refit: the L2 model at ``relax_alpha`` on ``pairs``."""
        return QuadraticRegression(alpha=self.relax_alpha, fit_intercept=self.fit_intercept,
                                   interaction_only=self.interaction_only,
                                   interaction_cst=pair_groups(pairs, X.shape[1]),
                                   ).fit(X, target, weight)

    def _chosen_candidate(self, errors):
        """``(ratio, alpha)`` indices chosen from ``errors`` (n_ratios, n_alphas, n_folds)."""
        if self.selection_rule == "best":
            return np.unravel_index(np.argmin(np.mean(errors, axis=2)), errors.shape[:2])
        # candidates from the strongest penalty (the grids' first alpha) down, ratio-minor
        by_fold = errors.transpose(2, 1, 0).reshape(errors.shape[2], -1)
        a, r = divmod(SELECTION_RULES[self.selection_rule](by_fold), errors.shape[0])
        return r, a

    def _raw_scores(self, X):
        return fitted_quadratic_scores(self, X)


class UnitLeaveOneOutCV(QuadraticRegressionCV):
    """QuadraticRegressionCV whose leave-one-out leaves one unit of a row's weight out.

    ``QuadraticRegression(alpha="auto")``'s selection: with it a fit with
    integer ``sample_weight`` chooses the penalties of the fit on the rows
    repeated that many times, as every fit with weights should; RidgeCV's
    convention (the whole row left out) does not.
    """

    _leave_out = "unit"


def _degrees_of_freedom(eigenvalues, alphas):
    """Effective degrees of freedom ``Σ λ / (λ + α)`` of ridge on a spectrum, for each alpha."""
    eigenvalues = np.clip(eigenvalues, 0.0, None)[:, None]
    return (eigenvalues / (eigenvalues + alphas[None, :])).sum(axis=0)


def _first_best(scores):
    """Index of the first highest score, NaN ranked last (as RidgeCV's strict ``>`` scan)."""
    scores = np.where(np.isnan(scores), -np.inf, scores)
    return int(np.argmax(scores))
