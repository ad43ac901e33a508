"""The regression side of the quadratic networks (MLPRegressor's behaviour).

:class:`BaseQuadraticNetworkRegressor` adds to the shared network base numeric
(multi-output) targets, MLPRegressor's losses (half the squared error with an
identity output, or half the Poisson deviance with an ``exp`` output) and R^2
as the early-stopping score.
"""

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if

from .._foundation._atomic import atomic_fit, reads_fitted_state
from .._array_api import namespace_of
from .._base import BaseQuadraticRegressor, dispatch_inputs
from .._dask_dispatch import is_dask_collection
from .._foundation._target_scaling import (
    fitted_target_scaling,
    scaled_targets,
    target_scaling,
    unscaled_predictions,
)
from .._foundation._held_out import HeldOutErrors, smallest_error_choice
from ._auto_alpha import AlphaSearch, chosen_alpha
from ._base import BaseQuadraticNetwork, _stochastic_solver, fit_solver, signature_with

__all__ = ["BaseQuadraticNetworkRegressor"]

# Rule: alpha="auto" on the regressors (._auto_alpha). The penalty is alpha / (2 n) ||W||^2
# against a loss of order 1/2 on the scaled targets: 1 is a unit Gaussian prior whose weight
# falls as 1 / n, and the noisier the targets the stronger the prior they need, so where the
# fit is one L-BFGS run on few rows, "auto" picks from AUTO_ALPHAS (most penalised first) the
# smallest held-out error. MLP's 1e-4 leaves the quadratic output unregularized there; it
# stays available by name.
AUTO_ALPHAS = (100.0, 10.0, 1.0)
# Without a search (too few rows to hold out, or a stochastic solver): the prior.
UNSEARCHED_ALPHA = 1.0
REGRESSOR_ALPHA_SEARCH = AlphaSearch(
    alphas=AUTO_ALPHAS, unsearched=UNSEARCHED_ALPHA,
    searches=lambda estimator, solver, n_rows: solver == "lbfgs",
    errors=HeldOutErrors, choose=smallest_error_choice,
)


def check_poisson_targets(loss, y):
    """Refuse negative targets ``y`` (an array, or its least value) under ``loss="poisson"``."""
    if loss == "poisson" and np.any(y < 0):
        raise ValueError(
            "loss='poisson' needs non-negative y (counts, rates), but `y` has negative "
            f"values (min {float(np.min(y)):.4g}); use loss='squared_error' or transform y."
        )


class BaseQuadraticNetworkRegressor(BaseQuadraticRegressor, BaseQuadraticNetwork):
    """Targets, losses and R^2 of the network regressors.

    Not for direct use; see :class:`~skquad.QNNRegressor` and
    :class:`~skquad.RPQNNRegressor` for the parameters.
    """

    _float_targets = True
    _alpha_search = REGRESSOR_ALPHA_SEARCH

    _parameter_constraints = {
        **BaseQuadraticNetwork._parameter_constraints,
        "loss": [StrOptions({"squared_error", "poisson"})],
        "scale_target": ["boolean"],
        "clip_outputs": ["boolean"],
    }

    def __init__(self, hidden_layer_sizes=(100,), activation="relu", *, loss="squared_error",
                 scale_target=True, solver="auto", alpha="auto", clip_outputs=True,
                 **network_parameters):
        super().__init__(hidden_layer_sizes, activation, solver=solver, alpha=alpha, **network_parameters)
        self.loss = loss
        self.scale_target = scale_target
        self.clip_outputs = clip_outputs

    # The shared parameters are written once, in the network base (the regressors' own
    # default solver, and clip_outputs after clip_inputs).
    __init__.__signature__ = signature_with(
        signature_with(BaseQuadraticNetwork.__init__, "quadratic_layers", loss="squared_error",
                       scale_target=True),
        "clip_inputs", clip_outputs=True,
    )
    __init__.__signature__ = __init__.__signature__.replace(parameters=[
        parameter.replace(default="auto") if parameter.name == "solver" else parameter
        for parameter in __init__.__signature__.parameters.values()
    ])

    # ------------------------------------------------------------ task hooks
    @property
    def _n_scores(self):
        return self.n_outputs_

    def _output_kind(self):
        return self.loss

    def _out_activation_name(self):
        # MLPRegressor's names.
        return "exp" if self.loss == "poisson" else "identity"

    def _validation_score(self, scores, y, sample_weight):
        """Weighted R^2 of the predictions, averaged over outputs (MLPRegressor's score)."""
        from sklearn.metrics import r2_score

        predictions = scores.double().cpu().numpy()
        if self.loss == "poisson":
            predictions = np.exp(predictions)
        return float(r2_score(y.double().cpu().numpy(), predictions, sample_weight=sample_weight))

    def _validate_targets(self, X, y, sample_weight, *, reset):
        X, y, sample_weight = self._validate_training_data(X, y, sample_weight, reset=reset)
        check_poisson_targets(self.loss, y)
        return X, y, sample_weight

    def _training_targets(self, y, sample_weight, *, new_network, all_data):
        """``y`` in the network's units; the scaling is fixed when the network is made."""
        if new_network:
            self.target_shift_, self.target_scale_ = target_scaling(
                y, sample_weight, loss=self.loss, enabled=self.scale_target, all_data=all_data)
        else:
            # a column constant so far predicts its constant with scale 0; training on
            # it again (partial_fit) takes the unit scale it was trained with
            self.target_scale_ = np.where(self.target_scale_ > 0, self.target_scale_, 1.0)
        return scaled_targets(y, self.target_shift_, self.target_scale_)

    def _callback_targets(self, y):
        # the callbacks score predictions, which are in the user's units
        return unscaled_predictions(y, *fitted_target_scaling(self))

    # ------------------------------------------------------------ fit
    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        """Train the network on ``(X, y)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The input data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The target values (finite numbers; non-negative for
            ``loss="poisson"``).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._architecture()  # a bad architecture is refused before the data is looked at
        if is_dask_collection(X, y, sample_weight):
            from ._dask import fit_network_blocks

            # data-parallel L-BFGS over the row blocks (skquad/neural_network/_dask.py)
            self.alpha_ = chosen_alpha(self, X, y, sample_weight, solver="lbfgs", search=False)
            return fit_network_blocks(self, X, y, sample_weight)
        X, y, sample_weight = self._validate_targets(X, y, sample_weight, reset=True)
        new_network = not (self.warm_start and hasattr(self, "layers_"))
        self.alpha_ = chosen_alpha(self, X, y, sample_weight, search=new_network, solver=fit_solver(
            self.solver, X.shape[0], early_stopping=self.early_stopping))
        y = self._training_targets(y, sample_weight, new_network=new_network, all_data=True)
        return self._start_fit(X, y, sample_weight)

    @available_if(_stochastic_solver)
    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def partial_fit(self, X, y, sample_weight=None):
        """One epoch of the stochastic solver over ``(X, y)``.

        The optimizer state is kept between calls (not across pickling: an
        unpickled model continues with a fresh optimizer state). Only
        available for ``solver="sgd"`` and ``"adam"``, and not with
        ``early_stopping=True`` (as in MLPRegressor).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The input data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The target values, in the shape of the first call's ``y``.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights.

        Returns
        -------
        self : object
            The trained estimator.
        """
        architecture = self._architecture()
        self._check_partial_fit_allowed()
        first_call = not hasattr(self, "layers_")
        X, y, sample_weight = self._validate_targets(X, y, sample_weight, reset=first_call)
        if first_call:
            self.alpha_ = chosen_alpha(self, X, y, sample_weight, solver=self.solver, search=False)
        y = self._training_targets(y, sample_weight, new_network=first_call, all_data=False)
        return self._train(X, y, sample_weight, architecture, incremental=True)

    # ------------------------------------------------------------ prediction
    @dispatch_inputs
    @reads_fitted_state
    def predict(self, X):
        """Predicted targets.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The shape of the fitted ``y``, in ``numpy.result_type(X, weights)``:
            float32 for a network trained in float32 on float32 input, as
            MLPRegressor's.
        """
        scores = self._checked_scores(self._validate_predict_data(X))
        return self._format_predictions(self._bounded_predictions(scores))

    def _raw_scores(self, X):
        scores = super()._raw_scores(X)
        if self.out_activation_ == "exp":
            with np.errstate(over="ignore"):  # an overflow is reported by the base's check
                scores = namespace_of(scores).exp(scores)
        with np.errstate(over="ignore"):
            return unscaled_predictions(scores, *fitted_target_scaling(self))
