"""QuadraticLogisticRegressionCV: QuadraticLogisticRegression with ``C`` chosen as
LogisticRegressionCV chooses it."""

import copy
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import _fit_context
from sklearn.metrics import get_scorer, get_scorer_names
from sklearn.model_selection import check_cv
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils import metadata_routing
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _raise_for_params,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.validation import _check_method_params

from .._foundation._atomic import atomic_fit, reads_fitted_state
from .._foundation._docstrings import shared_docstring
from .._foundation._held_out import SELECTION_RULES
from .._base import BaseQuadraticClassifier, dispatch_inputs
from ._interactions import INTERACTION_CST_CONSTRAINT, indexed_groups, pair_groups
from ._logistic import QuadraticLogisticRegression
from ._sparse_q import SPARSE_PENALTIES, publish_interactions

__all__ = ["QuadraticLogisticRegressionCV"]

# The fitted attributes a fold's model at one C hands to the refit's warm start.
_MODEL = ("Q_", "coef_", "intercept_")


@shared_docstring
class QuadraticLogisticRegressionCV(BaseQuadraticClassifier):
    """:class:`QuadraticLogisticRegression` with ``C`` chosen by cross-validation.

    Its models solve the pipeline's problem, one ``C`` on ``Q`` and ``w``
    (``quadratic_C=None``); to choose the quadratic part's own penalty too, search
    ``C`` and ``quadratic_C`` with ``GridSearchCV``.

    The counterpart of :class:`~sklearn.linear_model.LogisticRegressionCV`:
    on each fold the whole path of ``Cs`` is solved from the strongest
    penalty (smallest ``C``) to the weakest, each fit starting from the
    previous one's solution (the estimator's warm start) and, with L-BFGS,
    from the curvature it learned there (its correction pairs, moved to the
    new ``C``'s penalty), so most of the path costs a few iterations; each
    ``C``'s fit still stops on its own gradient test. The ``C`` with the
    best mean score over the folds is refitted on all the data, from the
    mean of the folds' models at that ``C``.

    Parameters
    ----------
    Cs : int or list of float, default=10
        The values of ``C`` to try; an int ``n`` is ``n`` values on a
        logarithmic grid from 1e-4 to 1e4, as in ``LogisticRegressionCV``.
    fit_intercept : bool, default=True
        Whether to fit the intercepts.
    cv : int, cross-validation generator or iterable, default=None
        The folds; None is 5-fold and an int ``k`` is ``k``-fold,
        :class:`~sklearn.model_selection.StratifiedKFold`.
    penalty : {"polynomial", "frobenius", "l1", "elasticnet", "group"}, default="polynomial"
        The penalty (see :class:`QuadraticLogisticRegression`); the sparse
        ones follow the path of ``Cs`` from the empty model up.
    l1_ratios : list of float or None, default=None
        With a sparse ``penalty``: the ``l1_ratio`` values tried with every
        ``C`` (as ``LogisticRegressionCV``'s); None: the penalty's own.
    scoring : str or callable, default=None
        The score that chooses ``C`` (a scorer name or callable); None is
        accuracy, ``LogisticRegressionCV``'s default.
    refit : bool, default=True
        Refit the best ``C`` on all the data. False: the model is the mean
        of the folds' models each at its own best ``C``, and ``C_`` the mean
        of those ``C``.
    selection_rule : {"best", "one_standard_error"}, default="best"
        Which ``C`` the folds' scores choose. ``"best"``: the best mean
        score, ``LogisticRegressionCV``'s choice. ``"one_standard_error"``:
        the smallest ``C`` (the strongest penalty; with ``l1_ratios`` or a
        list ``relax_C``, the first candidate at that ``C``, ratio-major)
        whose mean score is within one standard error of the best, the
        standard error of the best ``C``'s scores over the folds (Breiman's
        rule; glmnet's ``lambda.1se``). The best
        mean over-selects pairs with a sparse ``penalty``, as ``LassoCV``'s
        does; the rule keeps the sparsest model the folds cannot tell from
        it. Needs ``refit=True``.
    relax : bool, default=False
        With a sparse ``penalty``: the relaxed lasso (Meinshausen, 2007;
        glmnet's ``relax=TRUE``). Each model of the path only selects the
        pairs; it is refitted on the same rows with the L2 ``"polynomial"``
        penalty at ``relax_C`` on its selected pairs (``interaction_cst``
        of one group per pair and one per other feature: the squares and
        linear terms stay), and these refits are scored and chosen. The L1
        penalty that selects the pairs also shrinks the kept ones and the
        linear terms, so that the folds prefer weak penalties and many
        pairs; the refit removes that bias. With ``refit``, the chosen
        ``C``'s L1 model on all the data selects the pairs of the model.
    relax_C : float or list of float, default=1.0
        The ``C`` of the relaxed refits (:class:`QuadraticLogisticRegression`'s
        default: the dense model's). A list is tried with every ``C`` and
        ratio (an axis of ``scores_`` and the paths, as ``l1_ratios``), as
        glmnet's ``relax`` chooses its ``gamma`` by the folds: a larger
        ``relax_C`` penalises the kept pairs less, so that the folds rank
        the supports with less shrinkage and prefer fewer pairs.
    tol : float, default=1e-4
        The stopping tolerance of every fit (see :class:`QuadraticLogisticRegression`).
    max_iter : int, default=500
        The most L-BFGS iterations of each fit.
    max_fun : int, default=15000
        The most loss evaluations of each fit.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied into ``sample_weight``;
        ``"balanced"`` is computed once on all of ``y``, as in
        ``LogisticRegressionCV``.
    interaction_only : bool, default=False
        No squared terms (see :class:`QuadraticLogisticRegression`).
    interaction_cst : {"pairwise", "no_interactions"} or sequence of groups, default=None
        Which features may interact (see :class:`QuadraticLogisticRegression`).
    verbose : int, default=0
        Passed to every fit.
    random_state : int, RandomState instance or None, default=None
        Passed to every fit (see :class:`QuadraticLogisticRegression`); the
        folds are ``cv``'s.
    device : {"auto", "cpu", "cuda"} or str, default="auto"
        Where torch computes.
    n_threads : "auto" or int, default="auto"
        CPU threads of torch during each fit.
    dtype : {"float32", "float64"} or None, default=None
        Precision of the computation (None follows the input).
    clip_inputs : bool, default=True
        Clip each feature of ``X`` to its training range ``[data_min_,
        data_max_]`` before every prediction (see
        :class:`QuadraticLogisticRegression`); each fold's model clips to its
        own training rows' range. False predicts with the unbounded quadratic model.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    Q_ : ndarray of shape (n_scores, n_features, n_features)
    coef_ : ndarray of shape (n_scores, n_features)
    intercept_ : ndarray of shape (n_scores,)
    C_ : float
        The chosen ``C`` (a float, as ``LogisticRegressionCV`` with
        ``use_legacy_attributes=False``).
    l1_ratio_ : float or None
        The chosen ``l1_ratio`` (None without ``l1_ratios``).
    relax_C_ : float or None
        The chosen ``relax_C`` (None without ``relax``).
    n_interactions_ : int
        With a sparse ``penalty``: the number of selected pairs.
    interactions_ : ndarray of shape (n_interactions_, 2)
        With a sparse ``penalty``: the selected pairs ``a < b``.
    Cs_ : ndarray of shape (n_cs,)
        The values of ``C`` tried, in the given order.
    scores_ : ndarray of shape (n_folds, n_cs) or (n_folds, n_cs, n_l1_ratios)
        The score of each fold's model at each ``C`` (and ``l1_ratio`` of
        ``l1_ratios``, and ``relax_C`` of a list; the paths below have these
        axes too); with ``relax``, of the relaxed refits, as the paths below.
    coefs_paths_ : ndarray of shape (n_folds, n_cs, n_scores, n_features)
        The linear coefficients of each fold's model at each ``C``.
    intercepts_paths_ : ndarray of shape (n_folds, n_cs, n_scores)
        Their intercepts.
    n_iter_ : ndarray of shape (n_folds, n_cs)
        The iterations of each fold's fit at each ``C``: 0 where the
        previous ``C``'s solution already passed the gradient test (as in
        ``LogisticRegressionCV``, at large ``C``, where that test is divided by ``C``).
    device_ : str
        The device the model was fitted on.
    data_min_ : ndarray of shape (n_features_in_,)
        Per feature, the smallest value over the training rows of positive weight.
    data_max_ : ndarray of shape (n_features_in_,)
        Per feature, the largest such value.
    [shared-tight: n_features_in_ feature_names_in_]

    See Also
    --------
    QuadraticLogisticRegression : the model at one ``C``.
    sklearn.linear_model.LogisticRegressionCV : the same selection for the linear model.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from skquad import QuadraticLogisticRegressionCV
    >>> X, y = make_circles(n_samples=200, noise=0.05, factor=0.5, random_state=0)
    >>> clf = QuadraticLogisticRegressionCV(Cs=[0.01, 1.0, 100.0]).fit(X, y)
    >>> clf.scores_.shape
    (5, 3)
    >>> round(clf.score(X, y), 2)
    1.0
    """

    # On Dask collections fit refuses and names the single estimator to fit with the choice.
    _dask_single_estimator = ("QuadraticLogisticRegression", "C=search.C_")

    _accept_sparse = True

    # score's sample_weight goes to the scorer, not to this estimator (as in
    # LogisticRegressionCV): unrequested weights are then refused with routing on
    __metadata_request__score = {"sample_weight": metadata_routing.UNUSED}

    _parameter_constraints = {
        "Cs": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "fit_intercept": ["boolean"],
        "cv": ["cv_object"],
        "penalty": [StrOptions({"polynomial", "frobenius", *SPARSE_PENALTIES})],
        "l1_ratios": ["array-like", None],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "refit": ["boolean"],
        "selection_rule": [StrOptions(set(SELECTION_RULES))],
        "relax": ["boolean"],
        "relax_C": [Interval(Real, 0, None, closed="neither"), "array-like"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "max_fun": [Interval(Integral, 1, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "interaction_only": ["boolean"],
        "interaction_cst": INTERACTION_CST_CONSTRAINT,
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "device": [str, torch.device],
        "n_threads": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "dtype": [StrOptions({"float32", "float64"}), None],
        "clip_inputs": ["boolean"],
    }

    def __init__(
        self,
        Cs=10,
        *,
        fit_intercept=True,
        cv=None,
        penalty="polynomial",
        l1_ratios=None,
        scoring=None,
        refit=True,
        selection_rule="best",
        relax=False,
        relax_C=1.0,
        tol=1e-4,
        max_iter=500,
        max_fun=15000,
        class_weight=None,
        interaction_only=False,
        interaction_cst=None,
        verbose=0,
        random_state=None,
        device="auto",
        n_threads="auto",
        dtype=None,
        clip_inputs=True,
    ):
        self.Cs = Cs
        self.fit_intercept = fit_intercept
        self.cv = cv
        self.penalty = penalty
        self.l1_ratios = l1_ratios
        self.scoring = scoring
        self.refit = refit
        self.selection_rule = selection_rule
        self.relax = relax
        self.relax_C = relax_C
        self.tol = tol
        self.max_iter = max_iter
        self.max_fun = max_fun
        self.class_weight = class_weight
        self.interaction_only = interaction_only
        self.interaction_cst = interaction_cst
        self.verbose = verbose
        self.random_state = random_state
        self.device = device
        self.n_threads = n_threads
        self.dtype = dtype
        self.clip_inputs = clip_inputs

    def _checked_Cs(self):
        if isinstance(self.Cs, Integral):
            return np.logspace(-4, 4, self.Cs)
        Cs = np.asarray(self.Cs, dtype=np.float64).ravel()
        if Cs.size == 0 or not np.all(Cs > 0):
            raise ValueError(f"Cs must hold positive values of C, got {self.Cs!r}.")
        return Cs

    def _checked_l1_ratios(self):
        ratios = np.asarray(self.l1_ratios, dtype=np.float64).ravel()
        if self.penalty not in SPARSE_PENALTIES or ratios.size == 0 or np.any(
                (ratios < 0) | (ratios > 1)):
            raise ValueError(f"l1_ratios must hold numbers in [0, 1] and needs a sparse penalty "
                             f"('l1', 'elasticnet', 'group'); got l1_ratios={self.l1_ratios!r} "
                             f"with penalty={self.penalty!r}.")
        return [float(r) for r in ratios]

    def _inner_model(self, X):
        """The :class:`QuadraticLogisticRegression` every fold and the refit train, without
        ``class_weight``: its weights hold the class weights of all of ``y`` (as LogisticRegressionCV)."""
        return QuadraticLogisticRegression(
            # the CV chooses C of the pipeline's problem (one penalty on Q and w)
            quadratic_C=None, penalty=self.penalty, fit_intercept=self.fit_intercept, tol=self.tol,
            max_iter=self.max_iter, max_fun=self.max_fun, interaction_only=self.interaction_only,
            # the folds are numpy arrays: names become indices
            interaction_cst=indexed_groups(
                self.interaction_cst, X.shape[1], getattr(self, "feature_names_in_", None)
            ),
            warm_start=True, verbose=self.verbose, random_state=self.random_state,
            device=self.device, n_threads=self.n_threads, dtype=self.dtype,
            clip_inputs=self.clip_inputs,
        )

    def _routed_params(self, sample_weight, params):
        """``params`` routed to the splitter and the scorer, as LogisticRegressionCV routes them."""
        if _routing_enabled():
            return process_routing(self, "fit", sample_weight=sample_weight, **params)
        score = {} if sample_weight is None else {"sample_weight": sample_weight}
        return Bunch(splitter=Bunch(split={}), scorer=Bunch(score=score))

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None, **params):
        """Choose ``C`` on the folds and fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of every fit's objective (and of the scorer, routed as in
            ``LogisticRegressionCV``).
        **params : dict
            Metadata routed to the splitter (e.g. ``groups``) and the scorer;
            needs ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : QuadraticLogisticRegressionCV
        """
        _raise_for_params(params, self, "fit")
        if self.selection_rule != "best" and not self.refit:
            raise ValueError(
                f"selection_rule={self.selection_rule!r} needs refit=True: without the refit "
                "each fold keeps its own best C, which has no standard error across the folds."
            )
        if self.relax and self.penalty not in SPARSE_PENALTIES:
            raise ValueError(
                f"relax=True refits the pairs a sparse penalty selects: it needs penalty='l1', "
                f"'elasticnet' or 'group', got penalty={self.penalty!r}."
            )
        X, y_encoded, weight = self._validate_training_data(X, y, sample_weight)
        labels = self.classes_[y_encoded]
        routed = self._routed_params(sample_weight, params)
        Cs = self._checked_Cs()
        cv = check_cv(self.cv, labels, classifier=True)
        folds = list(cv.split(X, labels, **routed.splitter.split))
        inner = self._inner_model(X)
        scorer = self._get_scorer()
        ratios = [None] if self.l1_ratios is None else self._checked_l1_ratios()
        relax_Cs = self._checked_relax_Cs()
        # one path per ratio and fold; candidates flattened C-major, then ratio, then relax_C
        by_ratio = [[self._fold_path(inner.set_params(l1_ratio=ratio), X, labels, weight, train,
                                     test, Cs, relax_Cs, scorer, routed.scorer.score)
                     for train, test in folds] for ratio in ratios]
        flat = lambda f, name: [item for c in range(len(Cs)) for r in by_ratio
                                for item in getattr(r[f], name)[c]]
        paths = [Bunch(scores=np.array(flat(f, "scores")), n_iter=np.array(flat(f, "n_iter")),
                       models=flat(f, "models"), starts=flat(f, "starts"),
                       device=by_ratio[0][f].device) for f in range(len(folds))]
        grid = [(ratio, relax_C) for ratio in ratios for relax_C in relax_Cs]  # per C
        shape = (len(folds), len(Cs)) + (() if self.l1_ratios is None else (len(ratios),)) + (
            (len(relax_Cs),) if self.relax and np.ndim(self.relax_C) else ())
        self.Cs_ = Cs
        self.scores_ = np.array([path.scores for path in paths]).reshape(shape)
        self.n_iter_ = np.array([path.n_iter for path in paths], dtype=np.int32).reshape(shape)
        along = lambda name: np.array([[model[name] for model in p.models] for p in paths])
        self.coefs_paths_, self.intercepts_paths_ = (
            along(name).reshape(shape + along(name).shape[2:]) for name in _MODEL[1:])
        scores = np.array([path.scores for path in paths])
        best = self._chosen_index(scores, Cs, len(grid))
        if self.refit:
            start = {name: np.mean([p.starts[best][name] for p in paths], axis=0)
                     for name in _MODEL}
            (self.l1_ratio_, self.relax_C_), self.C_ = grid[best % len(grid)], float(
                Cs[best // len(grid)])
            inner.set_params(l1_ratio=self.l1_ratio_)
            model = self._refit(inner, X, labels, weight, self.C_, start)
            if self.relax:
                model = self._relaxed(inner, model, X, labels, weight, self.relax_C_)
            final = {name: getattr(model, name) for name in (*_MODEL, "device_", "solver_",
                                                                "loss_")}
        else:
            per_fold = np.argmax(scores, axis=1)
            final = {name: np.mean([p.models[b][name] for p, b in zip(paths, per_fold)], axis=0)
                     for name in _MODEL}
            final["device_"] = paths[0].device
            self.C_ = float(np.mean(Cs[per_fold // len(grid)]))
            self.l1_ratio_, self.relax_C_ = (
                None if values[0] is None else float(np.mean(values))
                for values in zip(*(grid[b % len(grid)] for b in per_fold)))
        for name, value in final.items():
            setattr(self, name, value)
        if self.penalty in SPARSE_PENALTIES:
            publish_interactions(self)
        return self

    def _checked_relax_Cs(self):
        """The ``C`` values of the relaxed refits: ``[None]`` without ``relax``."""
        if not self.relax:
            return [None]
        values = np.asarray(self.relax_C, dtype=np.float64).ravel()
        if values.size == 0 or not np.all(values > 0):
            raise ValueError(f"relax_C must hold positive values of C, got {self.relax_C!r}.")
        return [float(v) for v in values]

    def _chosen_index(self, scores, Cs, n_per_c):
        """The flat (C-major) index of the chosen candidate; ``scores`` (folds, candidates)."""
        if self.selection_rule == "best":
            return int(np.argmax(scores.mean(axis=0)))
        # candidates from the strongest penalty (smallest C) up, each C's in their order
        order = np.concatenate([np.arange(c * n_per_c, (c + 1) * n_per_c)
                                for c in np.argsort(Cs, kind="stable")])
        return int(order[SELECTION_RULES[self.selection_rule](-scores[:, order])])

    def _fold_path(self, inner, X, labels, weight, train, test, Cs, relax_Cs, scorer,
                   score_params):
        """One fold's path, ``Cs`` from the smallest up, warm-started: per ``C`` (rows) one scored model
        per entry of ``relax_Cs`` (columns), the path's own where None, else its relaxed refit."""
        model = copy.deepcopy(inner)
        n_cs, n_relax = Cs.shape[0], len(relax_Cs)
        scores, n_iter = np.empty((n_cs, n_relax)), np.empty((n_cs, n_relax), int)
        models, starts = [None] * n_cs, [None] * n_cs  # the scored models; the path's
        relaxed = {}  # consecutive Cs often select the same pairs: one refit for them
        test_params = _check_method_params(X, params=score_params, indices=test)
        X_test, y_test = X[test], labels[test]  # once per fold, not per C
        X_train, y_train, weight_train = X[train], labels[train], weight[train]
        order = np.argsort(Cs, kind="stable")
        path = model._fit_path(X_train, y_train, weight_train, Cs[order])
        for index, model in zip(order, path):
            if model.classes_.shape != self.classes_.shape:
                raise ValueError(
                    f"A training fold of cv={self.cv!r} holds the classes "
                    f"{model.classes_.tolist()} of {self.classes_.tolist()}: every training "
                    "fold needs every class. Use a stratified cv (the default) or fewer folds."
                )
            n_iter[index] = model.n_iter_[0]
            own = {name: getattr(model, name).copy() for name in _MODEL}
            starts[index], models[index] = [own] * n_relax, []
            for g, relax_C in enumerate(relax_Cs):
                scored = model
                if relax_C is not None:
                    key = (model.interactions_.tobytes(), relax_C)
                    if key not in relaxed:
                        relaxed[key] = self._relaxed(inner, model, X_train, y_train,
                                                     weight_train, relax_C)
                    scored = relaxed[key]
                scores[index, g] = scorer(scored, X_test, y_test, **test_params)
                models[index].append({name: getattr(scored, name).copy() for name in _MODEL})
        return Bunch(scores=scores, n_iter=n_iter, models=models, starts=starts,
                     device=model.device_)

    def _relaxed(self, inner, selector, X, labels, weight, C):
        """``relax``'s refit: the L2 model at ``C`` on the pairs ``selector`` selected.

        The squares and linear terms all stay (``interaction_cst`` restricts the pairs only).
        """
        groups = pair_groups(selector.interactions_, X.shape[1])
        model = copy.deepcopy(inner).set_params(penalty="polynomial", l1_ratio=None,
                                                C=C, interaction_cst=groups,
                                                warm_start=False)
        return model.fit(X, labels, sample_weight=weight)

    def _refit(self, inner, X, labels, weight, C, start):
        """The model at ``C`` on all the data, warm-started from ``start`` (the folds' mean)."""
        model = copy.deepcopy(inner).set_params(C=C)
        # the warm start continues a fitted model: hand it the folds' mean as one
        model.classes_ = self.classes_
        for name, value in start.items():
            setattr(model, name, value)
        return model.fit(X, labels, sample_weight=weight)

    def _get_scorer(self):
        """The scorer of ``scoring``: accuracy by default, as LogisticRegressionCV's."""
        return get_scorer(self.scoring or "accuracy")

    @dispatch_inputs
    @reads_fitted_state
    def score(self, X, y, sample_weight=None, **score_params):
        """The ``scoring`` score of the model on ``(X, y)`` (accuracy by default).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
        **score_params : dict
            Metadata routed to the scorer (with metadata routing enabled).

        Returns
        -------
        score : float
        """
        _raise_for_params(score_params, self, "score")
        if sample_weight is not None:
            score_params["sample_weight"] = sample_weight
        scorer = self._get_scorer()
        if _routing_enabled():
            score_params = process_routing(self, "score", **score_params).scorer.score
        return scorer(self, X, y, **score_params)

    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit``'s to the splitter and the scorer.

        Returns
        -------
        routing : MetadataRouter
        """
        return (
            MetadataRouter(owner=self)
            .add_self_request(self)
            .add(splitter=self.cv, method_mapping=MethodMapping().add(caller="fit", callee="split"))
            .add(
                scorer=self._get_scorer(),
                method_mapping=MethodMapping().add(caller="score", callee="score")
                .add(caller="fit", callee="score"),
            )
        )

    def _raw_scores(self, X):
        return QuadraticLogisticRegression._raw_scores(self, X)
