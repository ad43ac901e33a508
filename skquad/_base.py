"""The scikit-learn side shared by every skquad classifier.

Everything here is plumbing: input validation, label encoding, sample and class
weights, the mapping from raw class scores to probabilities and labels, and the
estimator tags. The models themselves live in :mod:`skquad.nn` (torch modules)
and :mod:`skquad.convex` (the SDP path); an estimator only has to implement

* ``fit`` (starting with :meth:`BaseQuadraticClassifier._validate_training_data`),
* ``_raw_scores(X)``: an ``(n_samples, n_scores)`` float64 array of scores for
  already validated ``X``.

With one score the problem is binary and the score is the log-odds of
``classes_[1]``; with ``n_classes`` scores they are the logits of a softmax.
"""

from numbers import Integral

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

__all__ = ["BaseQuadraticClassifier"]


class BaseQuadraticClassifier(ClassifierMixin, BaseEstimator):
    """Base class of the skquad classifiers (not for direct use).

    Subclasses declare their ``_parameter_constraints``, call
    :meth:`_validate_training_data` at the top of ``fit`` and implement
    ``_raw_scores``. The base provides ``decision_function``,
    ``predict_proba``, ``predict_log_proba``, ``predict`` and ``score``.
    """

    # dtypes accepted by validate_data; float32 input stays float32 so that
    # large problems are not copied (the torch models choose their own dtype).
    _accepted_dtypes = (np.float64, np.float32)

    # True where the estimator trains and predicts on CSR/CSC matrices itself.
    _accept_sparse = False

    # ------------------------------------------------------------------ fit side
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
            Indices into ``classes_``.
        sample_weight : ndarray of shape (n_samples,), float64
            Combined sample and class weights.
        """
        X, y = validate_data(
            self,
            X,
            y,
            reset=reset,
            dtype=self._accepted_dtypes,
            accept_sparse=["csr", "csc"] if self._accept_sparse else False,
            y_numeric=False,
        )
        check_classification_targets(y)

        if reset:
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
        """Per-sample weights from a ``class_weight`` dict or ``"balanced"``."""
        if isinstance(class_weight, dict):
            per_class = np.array([float(class_weight.get(c, 1.0)) for c in self.classes_])
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
        """1 score for binary problems (log-odds), else one per class."""
        return 1 if self.classes_.shape[0] == 2 else self.classes_.shape[0]

    # ------------------------------------------------------------ predict side
    def _validate_predict_data(self, X):
        check_is_fitted(self)
        return validate_data(
            self,
            X,
            reset=False,
            dtype=self._accepted_dtypes,
            accept_sparse=["csr", "csc"] if self._accept_sparse else False,
        )

    def _raw_scores(self, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _checked_scores(self, X):
        scores = np.asarray(self._raw_scores(X), dtype=np.float64)
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
        if scores.shape[1] == 1:
            p = expit(scores[:, 0])
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def _scores_to_log_proba(self, scores):
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
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        scores = self._checked_scores(self._validate_predict_data(X))
        return labels_from_scores(self.classes_, scores)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        tags.classifier_tags.multi_class = True
        tags.classifier_tags.poor_score = False
        return tags


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
