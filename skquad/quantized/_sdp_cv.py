"""SDPQuantizedClassifierCV: choose the SDP's ``beta`` by cross-validation along a path.

The search itself (the path from ``beta_max`` down, the warm-started folds, the
choice with non-finite scores ranked last, the refit) is
:class:`BetaPathSearchMixin`, shared with
:class:`~skquad.quantized.SDPQuantizedRegressorCV`.
"""

import functools
import math
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import _fit_context, clone, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight

from .._base import dispatch_inputs
from .._foundation._atomic import atomic_fit
from .._dask_dispatch import is_dask_collection
from .._foundation._cv_routing import splitter_params, splitter_router
from .._foundation._docstrings import shared_docstring
from .._foundation._held_out import SELECTION_RULES
from .._foundation._reporting import warn_user
from ..convex.formulation import aggregate_samples
from ..convex.lifting import InputLifting
from ..convex.path import zero_network_beta
from ._common import _check_activation, _standardization
from ._beta_search import fit_path, path_warnings_ignored
from ._linear_term import rows_less_linear_term, statistics_less_linear_term
from ._sdp import SDPQuantizedClassifier, zero_network_allowed

__all__ = ["BetaPathSearchMixin", "SDPQuantizedClassifierCV"]

def _held_out_r2(form, held_out, reference):
    """R² of a network of linear form ``(a, b)`` (its predictions ``Φ a + b``) on rows of
    unnormalized statistics ``held_out`` (targets less ``reference``)."""
    a, b = form[0], form[1] - reference
    tau, W = held_out.target_mean, held_out.weight
    errors = held_out.loss(0.5 * a) + 2.0 * b * (held_out.mean @ a - tau) + b**2 * W
    return float(np.mean(1.0 - errors / (held_out.target_square - tau**2 / W)))


def beta_search_constraints(single_estimator_class):
    """The search's parameter constraints: the single estimator's, ``betas`` for ``beta``."""
    return {
        **{
            name: constraint
            for name, constraint in single_estimator_class._parameter_constraints.items()
            if name not in ("beta", "warm_start")
        },
        "betas": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "cv": ["cv_object"],
        "scoring": [str, callable, None],
        "refit": ["boolean"],
        "n_jobs": [Integral, None],
        "selection_rule": [StrOptions(set(SELECTION_RULES))],
    }


class BetaPathSearchMixin:
    """The ``beta`` search of the SDP CV estimators (not for direct use).

    A subclass names its single-``beta`` estimator in ``_single_estimator_class``
    and its ``fit`` validates the data, computes the path with :meth:`_path`
    and hands over to :meth:`_search`. Scoring (None: the estimator's
    ``score``, accuracy or R²) and the default folds (stratified for a
    classifier, :class:`~sklearn.model_selection.KFold` for a regressor)
    follow from whether the subclass is a classifier, as in
    :func:`~sklearn.model_selection.check_cv`.
    """

    _single_estimator_class = None
    # Decades the path spans below beta_max (an int ``betas`` spreads over them).
    _path_decades = 4
    # Dask collections: the search from per-fold statistics (_search_dask).
    _fits_dask_collections = True

    def _single_estimator(self):
        """The single-``beta`` estimator with this estimator's model parameters."""
        single = self._single_estimator_class
        names = single._get_param_names()
        params = {name: value for name, value in self.get_params(deep=False).items() if name in names}
        return single(**params)

    def _best_index(self, scores):
        """The beta of the best mean fold score; non-finite means rank last (as GridSearchCV)."""
        mean_scores = scores.mean(axis=0)
        finite = np.isfinite(mean_scores)
        if not finite.any():
            raise ValueError(
                f"Every beta's cross-validated score is non-finite (scoring="
                f"{self.scoring!r}), so no beta can be chosen. The scorer fails on "
                "these folds' predictions (for a classifier, a fold's test split "
                "probably holds a single class: use a stratified cv with fewer "
                "folds); choose another scoring or cv."
            )
        if not finite.all():
            warn_user(
                f"{int((~finite).sum())} of the {finite.size} betas have non-finite "
                f"cross-validated scores (scoring={self.scoring!r}); they are ranked "
                "last, as GridSearchCV ranks them.",
                UserWarning,
            )
        errors = np.where(np.isfinite(scores), -scores, np.inf)  # betas from beta_max down
        return SELECTION_RULES[self.selection_rule](errors)

    def _path(self, X, y_validated, sample_weight):
        """The betas, decreasing: ``betas`` as given, or log-spaced down from ``beta_max``."""
        if not isinstance(self.betas, Integral):
            betas = np.sort(np.asarray(self.betas, dtype=np.float64).ravel())[::-1]
            if betas.size == 0 or not np.all(np.isfinite(betas)) or np.any(betas < 0):
                raise ValueError(
                    f"betas must be a positive int or a non-empty list of finite "
                    f"non-negative floats, got {self.betas!r}."
                )
            return betas
        # The distribution the fit sees (duplicates merged, canonical order):
        # a weight of 2 and a repeated row give beta_max to the last bit, so
        # the path, and every model on it, are the same.
        X, y_validated, weight = aggregate_samples(X, y_validated, sample_weight)
        center, scale = _standardization(X, weight) if self.standardize else (None, None)
        lifting = InputLifting(
            fit_intercept=bool(self.fit_intercept),
            levels=int(self.weight_levels),
            activation=_check_activation(self.activation),
            center=center,
            scale=scale,
        )
        # The targets and blocks of the fit itself (the class encoding, or
        # the regressor's real targets).
        n_outputs = self._sdp_n_outputs()
        targets, _ = self._centred_targets(
            self._sdp_targets(y_validated, n_outputs), weight, n_outputs
        )
        if self._fits_linear_term():
            targets = rows_less_linear_term(
                lifting.standardized(X), targets, weight, n_samples=math.fsum(sample_weight)
            )[0]
        beta_max = zero_network_beta(
            lifting, X, targets, weight, loss=self.loss, n_outputs=n_outputs
        )
        beta_max = beta_max if beta_max > 0 else 1.0
        return np.logspace(np.log10(beta_max), np.log10(beta_max) - self._path_decades, int(self.betas))

    def _search_dask(self, X, y, sample_weight):
        """The search on Dask collections from lifted statistics: two passes, three for a classifier.

        Rows go to folds by a hash of their values (blocks need not know their offsets); one pass
        gives the folds' moments and ranges, one their statistics under each training set's
        standardization. A regressor is scored from its held-out sums, a classifier in one more pass.
        """
        if self.scoring is not None or not self.refit or not (
            self.cv is None or isinstance(self.cv, Integral)
        ):
            raise ValueError(
                f"{type(self).__name__} fits Dask collections with cv=None or an int, "
                "scoring=None (accuracy or R²) and refit=True; fit it in memory for other "
                "settings, or fit the single estimator with a chosen beta on Dask."
            )
        from ._dask import SDPBlocks, linear_form, merge_folds
        from ._sdp import _statistics_targets

        n_folds = 5 if self.cv is None else int(self.cv)
        blocks = SDPBlocks(self, X, y, sample_weight)
        try:
            if blocks.classifier and np.any(blocks.class_weights == 0):
                # a held-out row is scored with its sample_weight, which the blocks keep times its class weight
                raise ValueError(
                    f"{type(self).__name__} fits Dask collections with class weights > 0 only; "
                    f"got class_weight={self.class_weight!r}. Drop the rows of that class instead."
                )
            parts = blocks.moments(n_folds)
            merged = [merge_folds(parts)] + [
                merge_folds(parts[j] for j in range(n_folds) if j != k) for k in range(n_folds)
            ]
            models = [self._input_copy(data_range) for _, data_range in merged]
            liftings = [model._standardized_lifting(m) for model, (m, _) in zip(models, merged)]
            reference = self._reference_offset(blocks)
            targets = functools.partial(_statistics_targets, n_outputs=self._sdp_n_outputs(),
                                        classes=blocks.classifier, offset=reference)
            sums = blocks.statistics(liftings, targets, n_folds)
            whole = sum(sums[0][1:], sums[0][0])
            betas = self._statistics_path(whole, reference, liftings[0])
            scores, forms = np.empty((n_folds, len(betas))), []
            for k in range(n_folds):
                parts = [sums[k + 1][j] for j in range(n_folds) if j != k]
                train = sum(parts[1:], parts[0])
                forms.append([])
                for index, beta in enumerate(betas):
                    model = models[k + 1].set_params(beta=beta)
                    with path_warnings_ignored():
                        model._fit_from_sums(merged[k + 1][0], lambda _: train, reference, train.weight)
                    forms[k].append(linear_form(model))
                    if not blocks.classifier:
                        scores[k, index] = _held_out_r2(forms[k][-1], sums[k + 1][k], reference)
            if blocks.classifier:
                scores = blocks.fold_accuracies([
                    (liftings[k + 1], merged[k + 1][1] if self.clip_inputs else None,
                     np.array([a for a, _ in forms[k]]), np.array([np.ravel(b) for _, b in forms[k]]))
                    for k in range(n_folds)
                ])
        finally:
            blocks.release()
        best = self._best_index(scores)
        model = models[0].set_params(beta=betas[best])
        with zero_network_allowed(True):
            model._fit_from_sums(merged[0][0], lambda _: whole, reference, whole.weight)
        vars(self).update({n: v for n, v in vars(model).items() if n not in model.get_params(deep=False)})
        self.beta_, self.betas_, self.scores_ = float(betas[best]), betas, scores
        return self

    def _input_copy(self, data_range):
        """The single estimator with this one's input attributes (set by the Dask
        validation) and the range of its training rows."""
        model = self._single_estimator()
        for name in ("n_features_in_", "feature_names_in_", "n_outputs_", "_fitted_y_ndim",
                     "classes_", "_multilabel"):
            if hasattr(self, name):
                setattr(model, name, getattr(self, name))
        model.data_min_, model.data_max_ = data_range
        return model

    def _statistics_path(self, whole, reference, lifting):
        """:meth:`_path` from the whole data's statistics (targets less ``reference``)."""
        if not isinstance(self.betas, Integral):
            return self._path(None, None, None)
        normalized = whole.normalized()
        # the targets the fit sees: centred where the model has an intercept, else as given
        normalized = normalized.shifted(normalized.target_mean if self._centres_targets() else -reference)
        if self._fits_linear_term():
            normalized = statistics_less_linear_term(
                normalized, lifting, self.n_features_in_, n_samples=whole.weight,
            )[0]
        beta_max = normalized.beta_max() or 1.0
        return np.logspace(np.log10(beta_max), np.log10(beta_max) - self._path_decades, int(self.betas))

    def get_metadata_routing(self):
        """The metadata routing of ``fit``'s ``params`` to ``cv``'s ``split`` (``groups``).

        Returns
        -------
        routing : MetadataRouter
        """
        return splitter_router(self)

    def _search(self, X, y, sample_weight, betas, split_params=None):
        """Score every fold along ``betas``, choose ``beta_`` and refit; returns ``self``.

        ``y``: the folds' targets (labels, or real targets in the fitted shape); ``sample_weight``:
        the user's (or None); ``split_params``: the splitter's routed metadata.
        """
        cv = check_cv(self.cv, y, classifier=is_classifier(self))
        folds = list(cv.split(X, y, **(split_params or {})))
        scorer = check_scoring(self, scoring=self.scoring)
        base = self._single_estimator()
        scores = Parallel(n_jobs=self.n_jobs)(
            delayed(fit_path)(base, betas, X, y, sample_weight, train, test, scorer)
            for train, test in folds
        )
        scores = np.vstack(scores)
        best = self._best_index(scores)
        model = clone(base).set_params(beta=betas[best])
        train = slice(None) if self.refit else folds[0][0]
        with zero_network_allowed(True):  # the folds chose it, the zero network included
            model.fit(X[train], y[train], sample_weight=None if sample_weight is None else sample_weight[train])
        fitted = {
            name: value
            for name, value in vars(model).items()
            if name not in model.get_params(deep=False)
        }
        vars(self).update(fitted)
        self.beta_ = float(betas[best])
        self.betas_ = betas
        self.scores_ = scores
        return self


@shared_docstring
class SDPQuantizedClassifierCV(BetaPathSearchMixin, SDPQuantizedClassifier):
    """:class:`SDPQuantizedClassifier` with ``beta`` chosen by cross-validation.

    Like :class:`~sklearn.linear_model.LogisticRegressionCV`: on every fold,
    the SDP is solved along a regularization path of ``betas`` from the
    largest (the zero network) to the smallest, each solve warm-started from
    the previous one (``warm_start=True``), the sampled network of each
    ``beta`` is scored on the held-out part, and the ``beta`` with the best
    mean score (or the largest within one standard error of it, see
    ``selection_rule``), ``beta_``, is refitted on all the data. The fitted attributes
    are those of that refitted :class:`SDPQuantizedClassifier`
    (``U_``, ``alpha_``, ``lower_bound_``, ...), and so are the methods
    (``predict``, ``resample``, ``relaxed_predict``, ``integer_weights``, ...).

    Parameters
    ----------
    n_neurons : int, default=1000
        As in :class:`SDPQuantizedClassifier`.
    betas : int or array-like of float, default=10
        The path. An int ``n`` gives ``n`` values log-spaced from
        ``beta_max`` (above which the zero network is optimal, estimated
        from the data) down to ``1e-4 * beta_max``; a list gives them directly.
    cv : int, cross-validation generator or iterable, default=None
        As in :class:`~sklearn.linear_model.LogisticRegressionCV`: None is
        5-fold stratified.
    scoring : str or callable, default=None
        Scorer of the held-out folds; None is accuracy.
    refit : bool, default=True
        Refit with ``beta_`` on all the data. With False, the model is fitted
        at ``beta_`` on the first fold's training part only (one smaller
        solve); its attributes describe that part.
    n_jobs : int, default=None
        Folds fitted in parallel (joblib).
    selection_rule : {"best", "one_standard_error"}, default="best"
        Which ``beta`` the fold scores choose: ``"best"``, the best mean
        score; ``"one_standard_error"``, the largest ``beta`` whose mean is
        within one standard error of the best (the standard error of the
        best ``beta``'s fold scores; glmnet's ``lambda.1se``).
    loss, fit_intercept, linear_term, standardize, weight_levels, activation, solver, solver_options, tol, max_iter, verbose, device, covariance, refit_output_layer, class_weight, random_state :
        As in :class:`SDPQuantizedClassifier`.
    [shared: clip_inputs:BackpropQuantizedClassifier]

    Attributes
    ----------
    [shared-tight: beta_ betas_ scores_]
    n_features_in_, classes_, U_, V_, alpha_, lower_bound_, objective_, ... :
        Those of the refitted :class:`SDPQuantizedClassifier` (see there).
    [shared-tight: data_min_:SDPQuantizedClassifier data_max_]

    See Also
    --------
    SDPQuantizedClassifier : the estimator at one ``beta``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skquad.quantized import SDPQuantizedClassifierCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = SDPQuantizedClassifierCV(100, betas=4, cv=3, random_state=0)
    >>> clf = clf.fit(X[:, :5], y)
    >>> clf.scores_.shape
    (3, 4)
    >>> bool(clf.beta_ in clf.betas_)
    True
    """

    _parameter_constraints = beta_search_constraints(SDPQuantizedClassifier)

    _single_estimator_class = SDPQuantizedClassifier

    def __init__(
        self,
        n_neurons=1000,
        *,
        betas=10,
        cv=None,
        scoring=None,
        refit=True,
        n_jobs=None,
        selection_rule="best",
        loss="squared",
        fit_intercept=True,
        linear_term="auto",
        standardize=True,
        weight_levels=1,
        activation="bilinear",
        solver=None,
        solver_options=None,
        tol=1e-4,
        max_iter=3000,
        verbose=0,
        device="auto",
        covariance="krivine",
        refit_output_layer="auto",
        class_weight=None,
        random_state=None,
        clip_inputs=True,
    ):
        self.n_neurons = n_neurons
        self.betas = betas
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.selection_rule = selection_rule
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.linear_term = linear_term
        self.standardize = standardize
        self.weight_levels = weight_levels
        self.activation = activation
        self.solver = solver
        self.solver_options = solver_options
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose
        self.device = device
        self.covariance = covariance
        self.refit_output_layer = refit_output_layer
        self.class_weight = class_weight
        self.random_state = random_state
        self.clip_inputs = clip_inputs

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=False)
    @atomic_fit
    def fit(self, X, y, sample_weight=None, **params):
        """Cross-validate ``beta`` along the path, then refit at ``beta_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Used in every fold's fit and in the scoring of its held-out rows.
        **params : dict
            Metadata routed to ``cv``'s ``split`` (e.g. ``groups``); needs
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : SDPQuantizedClassifierCV
        """
        if is_dask_collection(X, y, sample_weight):
            return self._search_dask(X, y, sample_weight)
        split_params = splitter_params(self, params)
        X, y_encoded, weight = self._validate_training_data(X, y, sample_weight)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        betas = self._path(X, y_encoded, weight)
        return self._search(X, self.classes_[y_encoded], sample_weight, betas, split_params)
