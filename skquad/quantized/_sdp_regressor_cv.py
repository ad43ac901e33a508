"""SDPQuantizedRegressorCV: the regressor's ``beta`` by cross-validation along a path."""

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils.validation import _check_sample_weight

from .._base import dispatch_inputs
from .._foundation._atomic import atomic_fit
from .._foundation._cv_routing import splitter_params
from .._foundation._docstrings import shared_docstring
from .._dask_dispatch import is_dask_collection
from ._sdp_cv import BetaPathSearchMixin, beta_search_constraints
from ._sdp_regressor import SDPQuantizedRegressor

__all__ = ["SDPQuantizedRegressorCV"]


@shared_docstring
class SDPQuantizedRegressorCV(BetaPathSearchMixin, SDPQuantizedRegressor):
    """:class:`SDPQuantizedRegressor` with ``beta`` chosen by cross-validation.

    The search of :class:`SDPQuantizedClassifierCV` on the regressor: on
    every fold, the squared-loss SDP is solved along a path of ``betas`` from
    the largest (``beta_max``, the zero network's) down, each solve
    warm-started from the previous one; the sampled and refitted network of
    each ``beta`` is scored on the held-out part (R² by default, weighted by
    ``sample_weight``); the largest ``beta`` within one standard error of the
    best mean score (``selection_rule``; non-finite scores ranked last, with
    a warning), ``beta_``, is refitted on all the data. The fitted attributes
    and methods are those of that refitted :class:`SDPQuantizedRegressor`
    (``U_``, ``alpha_``, ``lower_bound_``, ``certified_gap_``, ``resample``,
    ``relaxed_predict``, ...).

    Parameters
    ----------
    n_neurons : int, default=1000
        As in :class:`SDPQuantizedRegressor`.
    betas : int or array-like of float, default=13
        The path. An int ``n`` gives ``n`` values log-spaced from
        ``beta_max`` (above which the zero network is optimal, computed from
        the data) down to ``1e-6 * beta_max``; a list gives them directly.
        Six decades, where the classifier's search spans four: a target that
        the features nearly determine (a strong linear signal) is fitted best
        far below ``beta_max``.
    cv : int, cross-validation generator or iterable, default=None
        None is 5-fold :class:`~sklearn.model_selection.KFold` (no shuffling).
    scoring : str or callable, default=None
        Scorer of the held-out folds; None is R² (the regressor's ``score``).
    refit : bool, default=True
        Refit with ``beta_`` on all the data. With False, the model is fitted
        at ``beta_`` on the first fold's training part only.
    n_jobs : int, default=None
        Folds fitted in parallel (joblib).
    selection_rule : {"one_standard_error", "best"}, default="one_standard_error"
        Which ``beta`` the fold scores choose: the largest ``beta`` whose mean
        score is within one standard error of the best mean (the standard
        error of the best ``beta``'s fold scores; glmnet's ``lambda.1se``), or
        ``"best"``, the best mean. The default guards few rows: a held-out R²
        on a few dozen rows is dominated by its worst row, and the smallest
        ``beta`` that such a fold favours extrapolates the quadratic forms.
    fit_intercept, linear_term, standardize, weight_levels, activation, solver, solver_options, tol, max_iter, verbose, device, covariance, refit_output_layer, random_state :
        As in :class:`SDPQuantizedRegressor`.
    [shared: clip_inputs:BackpropQuantizedClassifier clip_outputs]

    Attributes
    ----------
    [shared-tight: beta_ betas_ scores_]
    n_features_in_, n_outputs_, U_, V_, alpha_, lower_bound_, objective_, ... :
        Those of the refitted :class:`SDPQuantizedRegressor` (see there).
    [shared-tight: data_min_:SDPQuantizedClassifier data_max_]

    [shared-tight: target_min_ target_max_]

    See Also
    --------
    SDPQuantizedRegressor : the estimator at one ``beta``.
    SDPQuantizedClassifierCV : the same search for classification.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.quantized import SDPQuantizedRegressorCV
    >>> rng = np.random.RandomState(0)
    >>> X = rng.standard_normal((150, 3))
    >>> y = X[:, 0] * X[:, 1] + 0.1 * rng.standard_normal(150)
    >>> model = SDPQuantizedRegressorCV(100, betas=4, cv=3, random_state=0).fit(X, y)
    >>> model.scores_.shape
    (3, 4)
    >>> bool(model.beta_ in model.betas_)
    True
    """

    _parameter_constraints = beta_search_constraints(SDPQuantizedRegressor)

    _single_estimator_class = SDPQuantizedRegressor
    _path_decades = 6

    def __init__(
        self,
        n_neurons=1000,
        *,
        betas=13,
        cv=None,
        scoring=None,
        refit=True,
        n_jobs=None,
        selection_rule="one_standard_error",
        fit_intercept=True,
        linear_term=True,
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
        refit_output_layer=True,
        random_state=None,
        clip_inputs=True,
        clip_outputs=True,
    ):
        self.n_neurons = n_neurons
        self.betas = betas
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.n_jobs = n_jobs
        self.selection_rule = selection_rule
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
        self.random_state = random_state
        self.clip_inputs = clip_inputs
        self.clip_outputs = clip_outputs

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=False)
    @atomic_fit
    def fit(self, X, y, sample_weight=None, **params):
        """Cross-validate ``beta`` along the path, then refit at ``beta_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        sample_weight : array-like of shape (n_samples,), default=None
            Used in every fold's fit and in the scoring of its held-out rows.
        **params : dict
            Metadata routed to ``cv``'s ``split`` (e.g. ``groups``); needs
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : SDPQuantizedRegressorCV
        """
        if is_dask_collection(X, y, sample_weight):
            return self._search_dask(X, y, sample_weight)
        split_params = splitter_params(self, params)
        X, Y, weight = self._validate_training_data(X, y, sample_weight)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        betas = self._path(X, Y, weight)
        return self._search(
            X, Y[:, 0] if self._fitted_y_ndim == 1 else Y, sample_weight, betas, split_params
        )
