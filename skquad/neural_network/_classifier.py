"""The classification side of the quadratic networks (MLPClassifier's behaviour).

:class:`BaseQuadraticNetworkClassifier` adds to the shared network base the
class labels (single-label, or a label indicator matrix for multilabel ``y``),
the output layer ("logistic" for binary and multilabel problems, softmax or
Noel et al.'s per-class sigmoids otherwise), ``class_weight``, accuracy as the
early-stopping score and the probabilities.
"""

import numpy as np
from scipy.special import logsumexp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import _check_partial_fit_first_call, unique_labels

from .._foundation._atomic import atomic_fit, reads_fitted_state
from .._array_api import namespace_of
from .._base import BaseQuadraticClassifier, dispatch_inputs, log_sigmoid
from .._dask_dispatch import is_dask_collection
from .._foundation._held_out import (
    MIN_HELD_OUT_ROWS, HeldOutMisclassifications, preferred_within_one_standard_error,
)
from ._auto_alpha import AlphaSearch, chosen_alpha
from ._base import BaseQuadraticNetwork, _stochastic_solver, fit_early_stopping, fit_solver, signature_with

__all__ = ["BaseQuadraticNetworkClassifier"]

# Rule: alpha="auto" on the classifiers (._auto_alpha). Where a fit on at least 100 rows holds
# out no validation split, MLPClassifier's 1e-4 is kept unless a network penalised by 100, 10 or
# 1 misclassifies fewer held-out rows by more than one standard error. Why: without early
# stopping, Adam's max_iter epochs fit the noise of a weak signal. Below 100 rows even every row
# held out once scores fewer than the 100 a held-out choice needs (MIN_HELD_OUT_ROWS).
MLP_ALPHA = 1e-4
_CANDIDATES = (100.0, 10.0, 1.0, MLP_ALPHA)
CLASSIFIER_ALPHA_SEARCH = AlphaSearch(
    alphas=_CANDIDATES, unsearched=MLP_ALPHA,
    searches=lambda estimator, solver, n_rows: not fit_early_stopping(
        estimator.early_stopping, solver, n_rows),
    errors=lambda y, sample_weight: HeldOutMisclassifications(),
    choose=lambda errors: preferred_within_one_standard_error(
        errors, preferred=_CANDIDATES.index(MLP_ALPHA)),
    candidate_params={"class_weight": None}, every_class_trained=True, min_rows=MIN_HELD_OUT_ROWS,
)


class BaseQuadraticNetworkClassifier(BaseQuadraticClassifier, BaseQuadraticNetwork):
    """Labels, output layer and probabilities of the network classifiers.

    Not for direct use; see :class:`~skquad.QNNClassifier` and
    :class:`~skquad.RPQNNClassifier` for the parameters.
    """

    _accept_multilabel = True
    _alpha_search = CLASSIFIER_ALPHA_SEARCH

    _parameter_constraints = {
        **BaseQuadraticNetwork._parameter_constraints,
        "output_activation": [StrOptions({"softmax", "sigmoid"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        activation="relu",
        *,
        output_activation="softmax",
        class_weight=None,
        **network_parameters,
    ):
        super().__init__(hidden_layer_sizes, activation, **network_parameters)
        self.output_activation = output_activation
        self.class_weight = class_weight

    # The shared parameters are written once, in the network base; the
    # signature that get_params, clone and numpydoc read lists them all.
    __init__.__signature__ = signature_with(
        signature_with(BaseQuadraticNetwork.__init__, "quadratic_layers", output_activation="softmax"),
        "max_fun",
        class_weight=None,
    )

    # ------------------------------------------------------------ task hooks
    @property
    def _float_targets(self):
        return bool(getattr(self, "_multilabel", False))

    def _output_kind(self):
        if getattr(self, "_multilabel", False):
            return "sigmoid"
        return "binary" if self._n_scores == 1 else self.output_activation

    def _out_activation_name(self):
        # MLPClassifier's names: one logistic output per label for binary and
        # multilabel problems; "sigmoid" is Noel et al.'s per-class sigmoids.
        if getattr(self, "_multilabel", False) or self._n_scores == 1:
            return "logistic"
        return self.output_activation

    @staticmethod
    def _validation_score(scores, y, sample_weight):
        """Weighted accuracy (subset accuracy for an indicator matrix, as MLPClassifier)."""
        if y.dim() == 2:
            correct = ((scores > 0) == (y > 0.5)).all(1)
        else:
            predicted = (scores[:, 0] > 0).long() if scores.shape[1] == 1 else scores.argmax(1)
            correct = predicted == y
        return float(np.average(correct.cpu().numpy(), weights=sample_weight))

    def _callback_targets(self, y):
        return y if getattr(self, "_multilabel", False) else self.classes_[y]

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
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            The target values: class labels, or a label indicator matrix
            for multilabel classification.
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
        if self.warm_start and hasattr(self, "layers_") and not np.array_equal(self.classes_, unique_labels(y)):
            # Checked before validation overwrites classes_.
            raise ValueError(
                "warm_start can only be used where `y` has the same classes as in the "
                f"previous call to fit. Previously got {self.classes_}, `y` has "
                f"{unique_labels(y)}. Set warm_start=False to start over."
            )
        X, y_encoded, sample_weight = self._validate_training_data(X, y, sample_weight, reset=True)
        self.alpha_ = chosen_alpha(
            self, X, y_encoded, sample_weight, search=not (self.warm_start and hasattr(self, "layers_")),
            solver=fit_solver(self.solver, X.shape[0], early_stopping=self.early_stopping))
        return self._start_fit(X, y_encoded, sample_weight)

    @available_if(_stochastic_solver)
    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch of the stochastic solver over ``(X, y)``.

        The optimizer state is kept between calls (not across pickling: an
        unpickled model continues with a fresh optimizer state). Only
        available for ``solver="sgd"`` and ``"adam"``, and not with
        ``early_stopping=True`` (as in MLPClassifier).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The input data.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            The target values: class labels, or a label indicator matrix
            for multilabel classification.
        classes : array-like of shape (n_classes,), default=None
            Every class that will ever appear; required on the first call,
            and if given later, it must be the same. For a label indicator
            matrix, ``range(n_labels)``.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights.

        Returns
        -------
        self : object
            The trained estimator.
        """
        architecture = self._architecture()
        self._check_partial_fit_allowed()
        first_call = _check_partial_fit_first_call(self, classes)
        X, y_encoded, sample_weight = self._validate_training_data(
            X, y, sample_weight, reset=first_call, classes=classes if first_call else None
        )
        if first_call:
            self.alpha_ = chosen_alpha(self, X, y_encoded, sample_weight, solver=self.solver, search=False)
        return self._train(X, y_encoded, sample_weight, architecture, incremental=True)

    # ------------------------------------------------------------ prediction
    def _scores_to_log_proba(self, scores):
        if scores.shape[1] > 1 and self.out_activation_ == "sigmoid":
            # Per-class sigmoids, normalised to sum to one.
            per_class = log_sigmoid(scores)
            return per_class - logsumexp(per_class, axis=1, keepdims=True)
        return super()._scores_to_log_proba(scores)

    def _scores_to_proba(self, scores):
        if scores.shape[1] > 1 and self.out_activation_ == "sigmoid":
            return namespace_of(scores).exp(self._scores_to_log_proba(scores))
        return super()._scores_to_proba(scores)

    @dispatch_inputs
    @reads_fitted_state
    def predict_log_proba(self, X):
        """Logarithm of the class probabilities, ``log(predict_proba(X))``.

        As in MLPClassifier: a probability that rounds to 0 gives ``-inf``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The input data.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_`` (for multilabel ``y``, one column per
            label).
        """
        with np.errstate(divide="ignore"):
            proba = self._scores_to_proba(self._checked_scores(self._validate_predict_data(X)))
            return namespace_of(proba).log(proba)
