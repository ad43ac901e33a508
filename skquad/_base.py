"""The scikit-learn side shared by every skquad estimator.

Everything here is plumbing: input validation, label encoding, sample and class
weights, the mapping from raw class scores to probabilities and labels, the
estimator tags, atomic fits and scikit-learn's callback root context. The models
themselves live in :mod:`skquad.nn` (torch modules) and :mod:`skquad.convex` (the
SDP path); an estimator only has to implement

* ``fit`` (starting with :meth:`BaseQuadraticClassifier._validate_training_data`),
* ``_raw_scores(X)``: an ``(n_samples, n_scores)`` array of scores for
  already validated ``X``, float64, or float32 for a float32 model on float32 input.

:class:`BaseQuadraticEstimator` holds what every estimator shares (atomic fits,
callbacks, weights, predict-side validation); :class:`BaseQuadraticClassifier`
adds labels and probabilities, :class:`BaseQuadraticRegressor` numeric
(multi-output) targets. For a classifier, one score means a binary problem and
the score is the log-odds of ``classes_[1]``; ``n_classes`` scores are the
logits of a softmax. For a regressor the scores are the predictions, one
column per output.

Atomic fit
----------
Every subclass's ``fit``, ``partial_fit`` and ``resample`` is wrapped when the
class is created (:meth:`BaseQuadraticEstimator.__init_subclass__`, as
scikit-learn's ``_SetOutputMixin`` wraps ``transform``). The wrapper

1. validates the constructor parameters and manages the callbacks' lifecycle as
   :func:`sklearn.base._fit_context` does (a subclass may keep or drop its own
   ``@_fit_context``: it is unwrapped and applied once, outermost);
2. snapshots the fitted state (a deep copy of ``__dict__`` less the constructor
   parameters and scikit-learn's callback objects), cheap when nothing is
   fitted yet;
3. for ``fit``/``partial_fit``, opens the callback root context
   (``self._callback_fit_ctx``) and calls the root ``on_fit_task_begin`` /
   ``on_fit_task_end`` hooks with ``X`` and ``y``;
4. on any exception, ``KeyboardInterrupt`` included, puts the snapshot back
   (attributes the failed call added are removed) and re-raises.

A call of one wrapped method from inside another on the same instance (``fit``
calling ``self.partial_fit``, ``super().fit``) runs unwrapped, inside the
outer call's snapshot and callback context.

The price of atomicity is one deep copy of the fitted state per call: as much
memory as the fitted model holds (its weights, a network's optimizer state, the
SDP's stored solution) and the time to copy it, about 1 microsecond when
nothing is fitted yet and about a millisecond for a network of a few
thousand weights.
"""

import copy
import functools
import inspect
import sys
import threading
from numbers import Integral
from typing import ClassVar

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.callback import CallbackSupportMixin
from sklearn.utils._available_if import _AvailableIfDescriptor
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

__all__ = ["BaseQuadraticClassifier", "BaseQuadraticEstimator", "BaseQuadraticRegressor"]

# scikit-learn's callback objects live in the estimator's __dict__ but are not
# fitted state: they are shared by reference (as sklearn.base.clone does) and
# never rolled back by a failed fit.
_CALLBACK_ATTRIBUTES = frozenset(
    {
        "_skl_callbacks",
        "_callback_fit_ctx",
        "_skl_callbacks_to_teardown",
        "_parent_callback_ctx",
    }
)

# Methods made atomic; the first two also get parameter validation and the
# callback root context.
_FIT_METHODS = ("fit", "partial_fit")
_ATOMIC_METHODS = (*_FIT_METHODS, "resample")

# The code object shared by every method decorated with sklearn's _fit_context:
# how a subclass's own @_fit_context is recognised and unwrapped.
_FIT_CONTEXT_CODE = _fit_context(prefer_skip_nested_validation=True)(
    lambda self: None
).__code__

# Instances whose wrapped method is running, per thread: nested calls run unwrapped.
_running = threading.local()


def _unwrap_fit_context(method):
    """Split a method into its undecorated function and ``_fit_context`` setting."""
    if getattr(method, "__code__", None) is _FIT_CONTEXT_CODE:
        prefer_skip = inspect.getclosurevars(method).nonlocals.get(
            "prefer_skip_nested_validation", True
        )
        return method.__wrapped__, bool(prefer_skip)
    return method, True


def _atomic(method, name):
    """Wrap ``method`` of a BaseQuadraticEstimator subclass (see the module docstring)."""
    raw, prefer_skip = _unwrap_fit_context(method)
    signature = inspect.signature(raw)

    def guarded(estimator, *args, **kwargs):
        snapshot = estimator._snapshot_fitted_state()
        try:
            if name not in _FIT_METHODS:
                return raw(estimator, *args, **kwargs)
            bound = signature.bind_partial(estimator, *args, **kwargs).arguments
            X, y = bound.get("X"), bound.get("y")
            sample_weight = bound.get("sample_weight")
            # As LogisticRegression: scorers in callbacks see the sample weights.
            metadata = (
                None if sample_weight is None else {"sample_weight": sample_weight}
            )
            context = estimator._init_callback_context(
                task_name=name, max_subtasks=estimator._callback_max_subtasks(name)
            )
            context.call_on_fit_task_begin(
                estimator=estimator, X=X, y=y, metadata=metadata
            )
            result = raw(estimator, *args, **kwargs)
            # The root task ends on the fitted estimator itself (no reconstruction).
            context.call_on_fit_task_end(
                estimator=estimator,
                X=X,
                y=y,
                metadata=metadata,
                reconstruction_attributes={},
            )
            return result
        except BaseException:
            estimator._restore_fitted_state(snapshot)
            raise

    functools.update_wrapper(guarded, raw)
    if name in _FIT_METHODS:
        # Parameter validation, nested-validation config and callback teardown.
        guarded = _fit_context(prefer_skip_nested_validation=prefer_skip)(guarded)

    @functools.wraps(raw)
    def entry(estimator, *args, **kwargs):
        running = _running.__dict__.setdefault("ids", set())
        if id(estimator) in running:
            return raw(estimator, *args, **kwargs)
        running.add(id(estimator))
        try:
            return guarded(estimator, *args, **kwargs)
        finally:
            running.discard(id(estimator))

    entry._skquad_atomic = True
    return entry


class BaseQuadraticEstimator(CallbackSupportMixin, BaseEstimator):
    """Base class of every skquad estimator (not for direct use).

    Subclasses declare their ``_parameter_constraints`` and implement
    ``_raw_scores``; :class:`BaseQuadraticClassifier` and
    :class:`BaseQuadraticRegressor` add the task-specific validation and
    prediction methods. The base provides scikit-learn's callback API
    (``set_callbacks``), sample-weight scale checks, predict-side validation
    and atomic fits: a ``fit``, ``partial_fit`` or ``resample`` that raises or
    is interrupted leaves the previously fitted model exactly as it was.

    Contract for subclasses: don't decorate ``fit`` yourselves beyond
    ``@_fit_context``/``@available_if`` (both are handled), don't call
    ``_init_callback_context`` (the root context is ``self._callback_fit_ctx``
    during ``fit``/``partial_fit``; make per-epoch subtasks from it), and keep
    fitted state deep-copyable (numpy arrays, torch modules, leaf tensors).
    """

    # Subclasses declare theirs (validated at fit by the wrapper, see above).
    _parameter_constraints: ClassVar[dict] = {}

    # dtypes accepted by validate_data; float32 input stays float32 so that
    # large problems are not copied (the torch models choose their own dtype).
    _accepted_dtypes = (np.float64, np.float32)

    # Whether the estimator takes scipy.sparse CSR/CSC input (validation at fit
    # and predict, and the input_tags.sparse tag).
    _accept_sparse = False

    # How the training objective depends on the scale of sample_weight:
    # "ratio": only the ratios of the weights matter (the objective is a
    #   weighted mean and nothing else is divided by their sum), so weights
    #   whose sum leaves float32's range are rescaled by a power of two (exact);
    # "absolute": their scale matters (C * sum(w_i loss_i) + penalty as in
    #   LogisticRegression, or a penalty divided by sum(w) as in
    #   MLPClassifier), so such weights are rejected with a clear error.
    _sample_weight_scale = "absolute"

    # ------------------------------------------------------- atomic fit
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _ATOMIC_METHODS:
            attribute = cls.__dict__.get(name)
            if isinstance(attribute, _AvailableIfDescriptor):
                if not getattr(attribute.fn, "_skquad_atomic", False):
                    attribute.fn = _atomic(attribute.fn, name)
            elif callable(attribute) and not getattr(
                attribute, "_skquad_atomic", False
            ):
                setattr(cls, name, _atomic(attribute, name))

    def _snapshot_fitted_state(self):
        """A deep copy of everything a fit may change (see the module docstring)."""
        skipped = self._not_fitted_state()
        state = {
            key: value for key, value in self.__dict__.items() if key not in skipped
        }
        if not state:
            return state
        try:
            return _deepcopy_on_one_thread(state)
        except Exception as exc:
            culprit = next(key for key in state if not _deep_copyable(state[key]))
            raise TypeError(
                f"{type(self).__name__}.{culprit} cannot be deep-copied, so a failed "
                "fit could not restore the previous model. Fitted state must be "
                "deep-copyable (numpy arrays, torch modules, leaf tensors)."
            ) from exc

    def _restore_fitted_state(self, snapshot):
        """Put back a snapshot; keep the parameters and the callback objects."""
        kept = self._not_fitted_state()
        restored = {key: value for key, value in self.__dict__.items() if key in kept}
        restored.update(snapshot)
        self.__dict__.clear()
        self.__dict__.update(restored)

    @classmethod
    def _not_fitted_state(cls):
        """Names in ``__dict__`` that a snapshot leaves out: parameters, callbacks."""
        names = cls.__dict__.get("_not_fitted_state_cache")
        if names is None:
            # Cached per class: inspect.signature costs ~0.1 ms per call.
            names = _CALLBACK_ATTRIBUTES.union(cls._get_param_names())
            cls._not_fitted_state_cache = names
        return names

    def _callback_max_subtasks(self, method_name):
        """``max_subtasks`` of the callback root context of ``fit``/``partial_fit``.

        ``max_iter`` for ``fit`` (one subtask per epoch or iteration; the
        training engine's L-BFGS reports scipy's last, empty iteration too, so
        one more with ``solver="lbfgs"``), None (unknown) for ``partial_fit``.
        Override where an estimator's subtasks are counted otherwise.
        """
        max_iter = getattr(self, "max_iter", None)
        if method_name == "fit" and isinstance(max_iter, Integral):
            return int(max_iter) + (getattr(self, "solver", None) == "lbfgs")
        return None

    # ------------------------------------------------------------------ fit side
    def _check_weight_scale(self, sample_weight):
        """Rescale or reject weights whose sum over- or underflows.

        Applies the rule declared by the class attribute
        ``_sample_weight_scale`` ("ratio" or "absolute", see its comment).
        """
        with np.errstate(over="ignore"):
            total = float(np.sum(sample_weight))
        if total == 0:
            raise ValueError(
                f"sample_weight (times class_weight) is zero for every sample; "
                f"{type(self).__name__} needs positive weights."
            )
        # The range of float32, the narrowest dtype an estimator computes in.
        limits = np.finfo(np.float32)
        if float(limits.tiny) <= total <= float(limits.max):
            return sample_weight
        if self._sample_weight_scale == "ratio":
            # Dividing by a power of two is exact: the ratios stay bit for bit.
            exponent = np.frexp(np.max(sample_weight))[1]
            return np.ldexp(sample_weight, -exponent)
        problem = "overflows to inf" if not np.isfinite(total) else f"is {total:.3g}"
        raise ValueError(
            f"The sum of sample_weight (times class_weight) {problem}, out of the "
            f"range {type(self).__name__} can compute with. Its objective depends on "
            "the scale of the weights, not only on their ratios: rescale "
            "sample_weight (e.g. divide it by its mean) and adapt the "
            "regularization parameters if the scale was intended."
        )

    def _sparse_formats(self):
        return ["csr", "csc"] if self._accept_sparse else False

    # ------------------------------------------------------------ predict side
    def _validate_predict_data(self, X):
        check_is_fitted(self)
        return validate_data(
            self,
            X,
            reset=False,
            dtype=self._accepted_dtypes,
            accept_sparse=self._sparse_formats(),
        )

    def _raw_scores(self, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _checked_scores(self, X):
        scores = np.asarray(self._raw_scores(X))
        # float32 scores stay float32 (a float32 model on float32 input, as
        # scikit-learn's estimators); anything else is float64.
        if scores.dtype != np.float32:
            scores = scores.astype(np.float64, copy=False)
        if scores.ndim == 1:
            scores = scores[:, None]
        if not np.all(np.isfinite(scores)):
            # A fitted model never gives NaN silently: this only happens when
            # inputs far outside the training range overflow the model.
            raise ValueError(
                f"{type(self).__name__} produced non-finite scores for some "
                "samples. The input is probably far outside the range seen in "
                "training (quadratic models grow with the square of the input); "
                "scale the features, e.g. with StandardScaler in a Pipeline."
            )
        return scores

    def to_torch(self, *, dtype=None):
        """The fitted model as a :class:`torch.nn.Module` computing ``decision_function``.

        See :func:`skquad.export.to_torch`.

        Parameters
        ----------
        dtype : torch.dtype, default=None
            None: the precision the estimator predicts in.

        Returns
        -------
        module : torch.nn.Module
            Output of shape ``(n,)`` for binary problems, else ``(n, n_classes)``.
        """
        from .export import to_torch

        return to_torch(self, dtype=dtype)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = bool(self._accept_sparse)
        return tags


class BaseQuadraticClassifier(ClassifierMixin, BaseQuadraticEstimator):
    """Base class of the skquad classifiers (not for direct use).

    Subclasses call :meth:`_validate_training_data` at the top of ``fit`` and
    implement ``_raw_scores``; the base provides ``decision_function``,
    ``predict_proba``, ``predict_log_proba``, ``predict`` and ``score``.

    A subclass that sets ``_accept_multilabel = True`` also takes a label
    indicator matrix ``y`` of shape ``(n_samples, n_labels)``, as
    MLPClassifier does: ``classes_`` is ``arange(n_labels)``, there is one
    score (log-odds) per label, ``predict`` returns the indicator matrix and
    ``predict_proba`` one independent probability per label.
    """

    # Whether a label indicator matrix y is accepted (see the class docstring).
    _accept_multilabel = False

    def _is_multilabel_target(self, y):
        """Whether ``y`` is a label indicator matrix (checked without a copy for arrays)."""
        shape = getattr(y, "shape", None)
        if shape is None:
            try:
                shape = np.asarray(y).shape
            except (TypeError, ValueError):  # ragged or not array-like: validation says so
                return False
        if len(shape) != 2 or shape[1] < 2:
            return False
        return type_of_target(y) == "multilabel-indicator"

    def _validate_multilabel_data(self, X, y, sample_weight, *, reset, classes):
        if not self._accept_multilabel:
            raise ValueError(
                f"{type(self).__name__} does not support multilabel `y` (a label "
                "indicator matrix); wrap it in sklearn.multioutput.MultiOutputClassifier."
            )
        if getattr(self, "class_weight", None) is not None:
            raise ValueError(
                "class_weight is not supported for multilabel `y` (a label indicator "
                "matrix); use sample_weight, or class_weight=None."
            )
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            dtype=self._accepted_dtypes,
            accept_sparse=self._sparse_formats(),
            multi_output=True,
        )
        n_labels = y.shape[1]
        if reset:
            if classes is not None and not np.array_equal(np.unique(classes), np.arange(n_labels)):
                raise ValueError(
                    f"`classes` {np.asarray(classes).tolist()} does not match the {n_labels} "
                    f"columns of the label indicator matrix `y` (expected 0..{n_labels - 1})."
                )
            self.classes_ = np.arange(n_labels)
            self._multilabel = True
        else:
            check_is_fitted(self, "classes_")
            if not getattr(self, "_multilabel", False) or n_labels != self.classes_.shape[0]:
                raise ValueError(
                    f"`y` is a label indicator matrix with {n_labels} columns, but the "
                    "model was fitted on "
                    + (
                        f"{self.classes_.shape[0]} labels."
                        if getattr(self, "_multilabel", False)
                        else "1-D class labels."
                    )
                )
        sample_weight = _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )
        sample_weight = self._check_weight_scale(sample_weight)
        return X, np.ascontiguousarray(y, dtype=np.int64), sample_weight

    def _validate_training_data(
        self, X, y, sample_weight=None, *, reset=True, classes=None
    ):
        """Validate ``X``, ``y`` and weights at the top of ``fit``/``partial_fit``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels of any kind scikit-learn accepts (integers, strings, ...).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights; multiplied by the weights that the estimator's
            ``class_weight`` parameter (if it has one) gives each sample.
        reset : bool, default=True
            True for ``fit`` and the first ``partial_fit``: sets
            ``n_features_in_``, ``feature_names_in_`` and ``classes_``.
            False for later ``partial_fit`` calls: checks against them.
        classes : array-like, default=None
            All classes, as given to the first ``partial_fit`` call.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features), float64 or float32
        y_encoded : ndarray of shape (n_samples,), int64
            Indices into ``classes_``; for a multilabel ``y`` (see the class
            docstring), the ``(n_samples, n_labels)`` 0/1 indicator matrix.
        sample_weight : ndarray of shape (n_samples,), float64
            Combined sample and class weights.
        """
        if self._is_multilabel_target(y):
            return self._validate_multilabel_data(
                X, y, sample_weight, reset=reset, classes=classes
            )
        if not reset and getattr(self, "_multilabel", False):
            raise ValueError(
                "`y` has 1-D class labels, but the model was fitted on a label "
                f"indicator matrix with {self.classes_.shape[0]} columns."
            )
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            dtype=self._accepted_dtypes,
            accept_sparse=self._sparse_formats(),
            y_numeric=False,
        )
        check_classification_targets(y)

        if reset:
            self._multilabel = False
            if classes is not None:
                self.classes_ = np.unique(np.asarray(classes))
                unknown = np.setdiff1d(np.unique(y), self.classes_)
                if unknown.size:
                    raise ValueError(
                        f"`y` has labels {unknown.tolist()} that are not in "
                        f"`classes` {self.classes_.tolist()}."
                    )
            else:
                self.classes_ = np.unique(y)
        else:
            check_is_fitted(self, "classes_")
            unknown = np.setdiff1d(np.unique(y), self.classes_)
            if unknown.size:
                raise ValueError(
                    f"`y` has labels {unknown.tolist()} that were not seen in the "
                    f"first call (classes_ = {self.classes_.tolist()})."
                )

        if self.classes_.shape[0] < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in the "
                f"data, but the data contains only one class: {self.classes_[0]!r}."
            )

        y_encoded = np.searchsorted(self.classes_, y).astype(np.int64)
        sample_weight = _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )

        class_weight = getattr(self, "class_weight", None)
        if class_weight is not None:
            sample_weight = sample_weight * self._class_weights(class_weight, y_encoded)
        sample_weight = self._check_weight_scale(sample_weight)

        if reset and classes is None:
            weighted_classes = np.unique(y_encoded[sample_weight > 0])
            if weighted_classes.shape[0] < 2:
                raise ValueError(
                    f"{type(self).__name__} needs samples of at least 2 classes with "
                    "positive weight, but after applying sample_weight and "
                    "class_weight only one class is left: "
                    f"{self.classes_[weighted_classes].tolist()!r}."
                )
        return X, y_encoded, sample_weight

    def _class_weights(self, class_weight, y_encoded):
        """Per-sample weights from a ``class_weight`` dict or ``"balanced"``.

        A dict follows :func:`sklearn.utils.class_weight.compute_class_weight`
        (keys that match no class while some class has no key are an error);
        its values must be finite and non-negative.
        """
        if isinstance(class_weight, dict):
            for label, value in class_weight.items():
                try:
                    number = float(value)
                except (TypeError, ValueError):
                    number = np.nan
                if not (np.isfinite(number) and number >= 0):
                    raise ValueError(
                        "class_weight values must be finite non-negative numbers, got "
                        f"class_weight[{label!r}] = {value!r}."
                    )
            per_class = compute_class_weight(
                class_weight, classes=self.classes_, y=self.classes_[y_encoded]
            )
        else:
            # "balanced" over the classes present in this batch of data; a class
            # absent from it (possible in partial_fit) has no samples to weight.
            per_class = np.ones(self.classes_.shape[0])
            present = np.unique(y_encoded)
            per_class[present] = compute_class_weight(
                class_weight, classes=present, y=y_encoded
            )
        return per_class[y_encoded]

    @property
    def _n_scores(self):
        """1 score for binary problems (log-odds), else one per class (label)."""
        if getattr(self, "_multilabel", False):
            return self.classes_.shape[0]
        return 1 if self.classes_.shape[0] == 2 else self.classes_.shape[0]

    def decision_function(self, X):
        """Raw class scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For binary problems, the log-odds of ``classes_[1]``; otherwise one
            logit per class.
        """
        scores = self._checked_scores(self._validate_predict_data(X))
        return scores.ravel() if scores.shape[1] == 1 else scores

    def _scores_to_proba(self, scores):
        """Map ``(n, n_scores)`` scores to ``(n, n_classes)`` probabilities."""
        if getattr(self, "_multilabel", False):
            # Each label's probability stays inside (0, 1), as a probability of
            # a finite score is: expit rounds to exactly 0 or 1 beyond |score| ~ 37.
            limits = np.finfo(np.float64)
            return np.clip(expit(scores), limits.tiny, 1.0 - limits.epsneg)
        if scores.shape[1] == 1:
            p = expit(scores[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def _scores_to_log_proba(self, scores):
        if getattr(self, "_multilabel", False):
            return log_expit(scores)
        if scores.shape[1] == 1:
            return np.column_stack([log_expit(-scores[:, 0]), log_expit(scores[:, 0])])
        return log_softmax(scores, axis=1)

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        scores = self._checked_scores(self._validate_predict_data(X))
        return self._scores_to_proba(scores)

    def predict_log_proba(self, X):
        """Logarithm of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self._checked_scores(self._validate_predict_data(X))
        return self._scores_to_log_proba(scores)

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_labels)
            Labels from ``classes_``; for a multilabel fit, the 0/1 label
            indicator matrix.
        """
        scores = self._checked_scores(self._validate_predict_data(X))
        if getattr(self, "_multilabel", False):
            return (scores > 0).astype(np.int64)
        return labels_from_scores(self.classes_, scores)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        tags.classifier_tags.multi_label = self._accept_multilabel
        tags.classifier_tags.poor_score = False
        return tags


class BaseQuadraticRegressor(RegressorMixin, BaseQuadraticEstimator):
    """Base class of the skquad regressors (not for direct use).

    Subclasses call :meth:`_validate_training_data` at the top of ``fit`` and
    implement ``_raw_scores`` returning one column per output; the base
    provides ``predict`` and ``score`` (R², as every scikit-learn regressor).
    ``y`` may be 1-D (one output) or 2-D ``(n_samples, n_outputs)``;
    ``predict`` returns the shape that was fitted, as
    :class:`~sklearn.linear_model.Ridge` does.
    """

    def _validate_training_data(self, X, y, sample_weight=None, *, reset=True):
        """Validate ``X``, numeric ``y`` and weights at the top of ``fit``/``partial_fit``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Finite numeric targets.
        sample_weight : array-like of shape (n_samples,), default=None
        reset : bool, default=True
            True for ``fit`` and the first ``partial_fit``: sets
            ``n_features_in_``, ``feature_names_in_`` and ``n_outputs_``.
            False for later ``partial_fit`` calls: checks against them.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features), float64 or float32
        y : ndarray of shape (n_samples, n_outputs)
            In ``X``'s float dtype, always 2-D.
        sample_weight : ndarray of shape (n_samples,), float64
        """
        y_array = np.asarray(y) if not hasattr(y, "dtype") else y
        if getattr(y_array, "dtype", None) is not None and (
            y_array.dtype.kind in "OUS"
        ):
            try:
                np.asarray(y_array, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"{type(self).__name__} is a regressor: `y` must be numeric, "
                    f"but it holds non-numeric values ({exc}). For class labels "
                    "use the matching classifier."
                ) from exc
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            dtype=self._accepted_dtypes,
            accept_sparse=self._sparse_formats(),
            y_numeric=True,
            multi_output=True,
        )
        y = np.asarray(y)  # finite: validate_data checked it
        y_ndim = 1 if y.ndim == 1 else 2
        y = y.reshape(y.shape[0], -1).astype(X.dtype, copy=False)
        if reset:
            self.n_outputs_ = y.shape[1]
            self._fitted_y_ndim = y_ndim
        else:
            check_is_fitted(self, "n_outputs_")
            if y.shape[1] != self.n_outputs_ or y_ndim != self._fitted_y_ndim:
                fitted = (
                    "a 1-D y"
                    if self._fitted_y_ndim == 1
                    else f"a 2-D y with {self.n_outputs_} column(s)"
                )
                given = "a 1-D y" if y_ndim == 1 else f"a 2-D y with {y.shape[1]} column(s)"
                raise ValueError(
                    f"`y` has the wrong shape: the model was fitted on {fitted}, "
                    f"got {given}."
                )
        sample_weight = _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )
        sample_weight = self._check_weight_scale(sample_weight)
        return X, y, sample_weight

    def _format_predictions(self, scores):
        """``(n, n_outputs)`` scores in the shape of the fitted ``y``."""
        if getattr(self, "_fitted_y_ndim", 2) == 1:
            return scores[:, 0]
        return scores

    def predict(self, X):
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The shape of the ``y`` the model was fitted on.
        """
        scores = self._checked_scores(self._validate_predict_data(X))
        return self._format_predictions(scores)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.regressor_tags.poor_score = False
        return tags


def _deepcopy_on_one_thread(state):
    """``copy.deepcopy(state)``, with torch on one thread while it copies tensors.

    A fitted network's state holds many small tensors (weights, optimizer
    state, workspaces). torch parallelizes each storage copy over its threads,
    and waking them costs more than the copy: a 12,000-element float64 tensor
    took 8 ms to deep-copy on 2 threads of a loaded machine and 0.05 ms on one
    (a partial_fit's snapshot: 96 ms against 1 ms). torch is only consulted
    when it is already imported (no tensor can be in the state otherwise).
    """
    if "torch" not in sys.modules:
        return copy.deepcopy(state)
    from ._training import limit_threads

    with limit_threads(1):
        return copy.deepcopy(state)


def _deep_copyable(value):
    try:
        copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - any failure means "not copyable"
        return False
    return True


def labels_from_scores(classes, scores):
    """Class labels from ``(n,)`` or ``(n, 1)`` log-odds or ``(n, K)`` logits."""
    scores = np.asarray(scores)
    if scores.ndim == 1 or scores.shape[1] == 1:
        return classes[(scores.reshape(-1) > 0).astype(np.int64)]
    return classes[np.argmax(scores, axis=1)]


def check_positive_int(value, name):
    """Validate a positive integer argument that is not a constructor parameter."""
    if not isinstance(value, Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)
