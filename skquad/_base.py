"""The scikit-learn side shared by every skquad estimator.

Input validation, label encoding, sample and class weights, scores to
probabilities and labels, tags, atomic fits and callbacks. An estimator
implements ``fit`` (starting with ``_validate_training_data``) and
``_raw_scores(X)``: an ``(n_samples, n_scores)`` float64 array (float32 for a
float32 model on float32 input) for validated ``X``. For a classifier one score is
the log-odds of ``classes_[1]``, ``n_classes`` scores are softmax logits; for a
regressor the scores are the predictions, one column per output.

``fit``, ``partial_fit`` and ``resample`` carry
:func:`skquad._foundation._atomic.atomic_fit` under scikit-learn's ``@_fit_context``;
the public methods that read the fitted state carry
:func:`skquad._foundation._atomic.reads_fitted_state`.
"""

import inspect
import sys
from numbers import Integral
from typing import ClassVar

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.callback import CallbackSupportMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from ._array_api import (
    all_finite,
    array_api_dispatch,
    dispatch_set,
    host_view,
    is_tensor,
    keeps_tensors,
    namespace_of,
    numpy_dtype,
    tensor_of_view,
)
from ._dask_dispatch import dask_dispatch
from ._foundation._atomic import reads_fitted_state
from ._foundation._input_range import clip_to_range, feature_range, merge_ranges

__all__ = ["BaseQuadraticClassifier", "BaseQuadraticEstimator", "BaseQuadraticRegressor", "dispatch_inputs"]


def dispatch_inputs(method):
    """Decorate every public ``fit``/``partial_fit`` and prediction method (on top of its stack).

    Array-API arrays are converted around the method (skquad/_array_api.py), then Dask
    collections are predicted on block by block or refused by a fit that would gather them
    (skquad/_dask_dispatch.py); tests/test_dask_dispatch.py checks every public estimator for it.
    """
    routed = array_api_dispatch(dask_dispatch(method))
    routed.skquad_dispatches_inputs = True
    return routed


class BaseQuadraticEstimator(CallbackSupportMixin, BaseEstimator):
    """Base class of every skquad estimator (not for direct use).

    Subclasses declare their ``_parameter_constraints`` and implement
    ``_raw_scores``; :class:`BaseQuadraticClassifier` and
    :class:`BaseQuadraticRegressor` add the task-specific validation and
    prediction methods. The base provides scikit-learn's callback API
    (``set_callbacks``), sample-weight scale checks, predict-side validation
    and atomic fits: a ``fit``, ``partial_fit`` or ``resample`` that raises or
    is interrupted leaves the previously fitted model exactly as it was.

    Contract for subclasses: declare the ``clip_inputs`` parameter (see
    :mod:`skquad._foundation._input_range`; the base clips in :meth:`_validate_predict_data`
    to the range its fit-side validation records); decorate ``fit``, ``partial_fit`` and
    ``resample`` with ``@_fit_context(...)`` over ``@atomic_fit`` (see
    :mod:`skquad._foundation._atomic`), and a public method that reads the fitted state
    with ``@reads_fitted_state``; don't call ``_init_callback_context`` (the
    root context is ``self._callback_fit_ctx`` during ``fit``/``partial_fit``;
    make per-epoch subtasks from it); don't call one decorated method from
    another (share a private helper instead); keep fitted state deep-copyable
    (numpy arrays, torch modules, leaf tensors).
    """

    # Subclasses declare theirs (validated at fit by scikit-learn's _fit_context).
    _parameter_constraints: ClassVar[dict] = {}

    # dtypes accepted by validate_data; float32 input stays float32 so that
    # large problems are not copied (the torch models choose their own dtype).
    _accepted_dtypes = (np.float64, np.float32)

    # Whether the estimator takes scipy.sparse CSR/CSC input (validation at fit
    # and predict, and the input_tags.sparse tag).
    _accept_sparse = False

    # How the objective depends on the scale of sample_weight: "ratio" (a weighted mean), weights
    # whose sum leaves float32's range are rescaled by a power of two (exact); "absolute" (as
    # LogisticRegression's C * sum(w_i loss_i) or MLPClassifier's penalty / sum(w)), they are refused.
    _sample_weight_scale = "absolute"

    # The array_api_support tag: whether the model trains and predicts on X's
    # device (torch); inputs of every namespace are accepted (skquad/_array_api.py).
    _array_api_support = False

    # The steps ("fit", "predict") in which a torch X under the dispatch stays a tensor on
    # its device, validated and computed in torch (else the methods see NumPy views).
    _computes_on_tensors = ()

    def __setstate__(self, state):
        # A loaded state (pickle, joblib, skops) may not shadow a method,
        # property or tag with an instance attribute: a crafted file could
        # otherwise have predict call any function it names.
        shadowing = sorted(
            key for key in state
            if isinstance(key, str) and _is_behaviour(inspect.getattr_static(type(self), key, None))
        )
        if shadowing:
            raise ValueError(
                f"The saved {type(self).__name__} holds instance attributes named like its "
                f"methods or properties ({', '.join(shadowing)}): it was not saved from a "
                "skquad estimator. Refusing to load it."
            )
        super().__setstate__(state)

    @classmethod
    def _get_param_names(cls):
        # scikit-learn reads the constructor's signature on every get_params (each fit's
        # parameter validation); a class's constructor does not change, so it is read once.
        names = cls.__dict__.get("_param_names_of_class")
        if names is None:
            names = tuple(super()._get_param_names())
            cls._param_names_of_class = names
        return list(names)

    def _callback_max_subtasks(self, method_name):
        """``max_subtasks`` of the callback root context: ``max_iter`` for ``fit`` (one more with
        ``solver="lbfgs"``, whose last, empty iteration is reported too, and with ``"auto"``,
        which resolves to it on few rows after the context opens), None for ``partial_fit``."""
        max_iter = getattr(self, "max_iter", None)
        if method_name == "fit" and isinstance(max_iter, Integral):
            return int(max_iter) + (getattr(self, "solver", None) in ("lbfgs", "auto"))
        return None

    # ------------------------------------------------------------------ fit side
    def _check_weight_scale(self, sample_weight):
        """Rescale or reject weights whose sum over- or underflows, by ``_sample_weight_scale``'s rule."""
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

    def _validate(self, X, *y, **params):
        """``validate_data`` with the accepted dtypes and sparse formats; a torch ``X`` stays a tensor on its device.

        A CPU tensor is validated as its NumPy view with the dispatch off: the same checks on the
        same memory, without the namespace lookups that the dispatch adds to every call. Input
        that the view fails is validated again in torch, for torch's verdict and error message.
        """
        if not keeps_tensors(X):
            return validate_data(self, X, *y, dtype=self._accepted_dtypes,
                                 accept_sparse=self._sparse_formats(), **params)
        view = host_view(X)
        if view is not None:
            try:
                with dispatch_set(False):
                    validated = validate_data(self, view, *y, dtype=self._accepted_dtypes, accept_sparse=False,
                                              **params)
            except (TypeError, ValueError):
                pass
            else:
                if isinstance(validated, tuple):
                    return (tensor_of_view(X, view, validated[0]), *validated[1:])
                return tensor_of_view(X, view, validated)
        torch = sys.modules["torch"]
        with dispatch_set(True):
            return validate_data(self, X, *y, dtype=[getattr(torch, np.dtype(d).name) for d in self._accepted_dtypes],
                                 accept_sparse=False, **params)

    def _record_input_range(self, X, sample_weight, *, reset, prefix="data"):
        """Set (``reset``) or widen ``data_min_``/``data_max_``: the range ``clip_inputs`` clips to.

        Over the rows of positive weight (see :mod:`skquad._foundation._input_range`);
        ``fit`` (and ``warm_start``) starts anew, ``partial_fit`` widens. With
        ``prefix="target"``, ``y``'s ``target_min_``/``target_max_`` (``clip_outputs``).
        """
        names = f"{prefix}_min_", f"{prefix}_max_"
        batch = feature_range(X, sample_weight)
        if not reset:
            batch = merge_ranges(tuple(getattr(self, name) for name in names), batch)
        for name, bound in zip(names, batch):
            setattr(self, name, bound)

    # ------------------------------------------------------------ predict side
    def _validate_predict_data(self, X):
        """Validated ``X``, each feature clipped to its training range with ``clip_inputs``: the one
        input of every predict-like method and export."""
        check_is_fitted(self)
        X = self._validate(X, reset=False)
        if self.clip_inputs:
            X = clip_to_range(X, self.data_min_, self.data_max_)
        return X

    def _raw_scores(self, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _checked_scores(self, X):
        scores = self._raw_scores(X)
        xp = namespace_of(scores)
        scores = scores if is_tensor(scores) else np.asarray(scores)
        # float32 scores stay float32 (a float32 model on float32 input, as
        # scikit-learn's estimators); anything else is float64.
        if scores.dtype not in (xp.float32, xp.float64):
            scores = xp.astype(scores, xp.float64)
        if scores.ndim == 1:
            scores = scores[:, None]
        if not all_finite(scores):
            # A fitted model never gives NaN silently: this only happens when
            # inputs far outside the training range overflow the model.
            raise ValueError(
                f"{type(self).__name__} produced non-finite scores for some "
                "samples. The input is probably far outside the range seen in "
                "training (quadratic models grow with the square of the input); "
                "scale the features, e.g. with StandardScaler in a Pipeline."
            )
        return scores

    @reads_fitted_state
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
        from ._foundation._late_bound import to_torch

        return to_torch(self, dtype=dtype)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = bool(self._accept_sparse)
        tags.array_api_support = self._array_api_support
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

    # scikit-learn's score, routed as the methods below
    score = dispatch_inputs(ClassifierMixin.score)

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
        X, y = self._validate(X, y, reset=reset, multi_output=True)
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
        self._record_input_range(X, sample_weight, reset=reset)
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
        X, y = self._validate(X, y, reset=reset, y_numeric=False)
        sortable = _sortable_labels(y)
        check_classification_targets(sortable)

        y_encoded = None
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
                classes_, y_encoded = np.unique(sortable, return_inverse=True)
                self.classes_ = classes_.astype(y.dtype, copy=False)
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

        if y_encoded is None:
            y_encoded = np.searchsorted(self.classes_, y)
        y_encoded = y_encoded.astype(np.int64, copy=False)
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
        self._record_input_range(X, sample_weight, reset=reset)
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

    @dispatch_inputs
    @reads_fitted_state
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
            return namespace_of(scores).clip(expit(scores), float(limits.tiny), float(1.0 - limits.epsneg))
        if scores.shape[1] == 1:
            p = expit(scores[:, 0])
            return namespace_of(p).stack([1.0 - p, p], axis=1)
        return softmax(scores, axis=1)

    def _scores_to_log_proba(self, scores):
        if getattr(self, "_multilabel", False):
            return log_sigmoid(scores)
        if scores.shape[1] == 1:
            return namespace_of(scores).stack([log_sigmoid(-scores[:, 0]), log_sigmoid(scores[:, 0])], axis=1)
        return log_softmax(scores, axis=1)

    @dispatch_inputs
    @reads_fitted_state
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

    @dispatch_inputs
    @reads_fitted_state
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

    @dispatch_inputs
    @reads_fitted_state
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
            return namespace_of(scores).astype(scores > 0, namespace_of(scores).int64)
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

    # scikit-learn's score, routed as the methods below
    score = dispatch_inputs(RegressorMixin.score)

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
        # (a numpy dtype only: polars' and pandas' extension dtypes have no .kind)
        y_array = y if isinstance(getattr(y, "dtype", None), np.dtype) else np.asarray(y)
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
        X, y = self._validate(X, y, reset=reset, y_numeric=True, multi_output=True)
        y = np.asarray(y)  # finite: validate_data checked it
        y_ndim = 1 if y.ndim == 1 else 2
        y = y.reshape(y.shape[0], -1)
        if numpy_dtype(X.dtype) != y.dtype and y.size:
            with np.errstate(over="ignore"):
                cast = y.astype(numpy_dtype(X.dtype))
            if not np.all(np.isfinite(cast)):
                raise ValueError(
                    f"`y` overflows {X.dtype} (X's dtype, in which the model trains): its "
                    f"largest magnitude is {np.max(np.abs(y)):.3g}. Pass X as float64, or "
                    "scale y (e.g. with TransformedTargetRegressor)."
                )
            y = cast
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
        self._record_input_range(X, sample_weight, reset=reset)
        self._record_input_range(y, sample_weight, reset=reset, prefix="target")
        return X, y, sample_weight

    def _bounded_predictions(self, scores):
        """``scores`` clipped per output to the training targets' range with ``clip_outputs`` (toward
        every training target, so no training row's squared error grows)."""
        if not getattr(self, "clip_outputs", False) or not hasattr(self, "target_min_"):
            return scores
        xp = namespace_of(scores)  # (NumPy scores of a CPU tensor: its torch bounds as NumPy views)
        low, high = (xp.asarray(bound, dtype=scores.dtype) for bound in (self.target_min_, self.target_max_))
        return xp.clip(scores, low, high)

    def _format_predictions(self, scores):
        """``(n, n_outputs)`` scores in the shape of the fitted ``y``."""
        if getattr(self, "_fitted_y_ndim", 2) == 1:
            return scores[:, 0]
        return scores

    @dispatch_inputs
    @reads_fitted_state
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
        return self._format_predictions(self._bounded_predictions(scores))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.regressor_tags.poor_score = False
        return tags


def _is_behaviour(attribute):
    """Whether a class attribute is code (a method, property or other descriptor), not data."""
    return callable(attribute) or hasattr(attribute, "__get__")


def _sortable_labels(y):
    """``y``, or for an object array of strings only, the same labels as a numpy string array:
    the classes are found by sorting, several times faster in C on a string array (same order)."""
    if y.dtype != object or y.size == 0 or set(map(type, y.ravel())) != {str}:
        return y
    strings = y.astype(str)
    # (numpy's strings drop trailing NULs: "a" and "a\0" would be one class)
    return strings if bool(np.all(strings == y)) else y


def log_sigmoid(scores):
    """scipy's ``log_expit``, torch's for a tensor (scipy's converts tensors to NumPy)."""
    return sys.modules["torch"].nn.functional.logsigmoid(scores) if is_tensor(scores) else log_expit(scores)


def labels_from_scores(classes, scores):
    """Class labels from ``(n,)`` or ``(n, 1)`` log-odds or ``(n, K)`` logits."""
    xp = namespace_of(scores)
    scores = xp.asarray(scores)
    if scores.ndim == 1 or scores.shape[1] == 1:
        return classes[xp.astype(xp.reshape(scores, (-1,)) > 0, xp.int64)]
    return classes[xp.argmax(scores, axis=1)]


def check_positive_int(value, name):
    """Validate a positive integer argument that is not a constructor parameter."""
    if not isinstance(value, Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)
