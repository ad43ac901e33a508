"""The SDP estimators' squared-loss fit on Dask collections, by sufficient statistics.

Imported only when an SDP estimator's ``fit`` meets a Dask collection. The
squared-loss relaxation, its certificate, ``beta="auto"`` and the refit read the
rows only through :class:`~skquad.convex.statistics.LiftedStatistics`. With
:mod:`skquad._dask`'s block machinery: the blocks are validated, encoded and
persisted; one pass takes the inputs' moments (merged exactly) and range, one the
lifted statistics of the standardized rows (per fold too, rows assigned by a hash
of their values), and a classifier's ``beta`` search one more to score each fold's
held-out rows (:func:`linear_form`). The driver solves, certifies, samples and
refits from the sums (``SDPQuantizedClassifier._fit_from_sums``). A regressor
search's folds are scored from the sums too, so their R² is that of the model
without ``clip_inputs`` and ``clip_outputs``.
"""

import time

import dask
import numpy as np
from sklearn.base import is_classifier

from .._dask import (
    add_parts,
    check_rows,
    check_total_weight,
    checked_classifier_block,
    checked_regressor_block,
    classifier_rows,
    merge_regressor_statistics,
    persisted_blocks,
    regressor_statistics,
    set_input_attributes,
    training_blocks,
)
from .._foundation._input_range import clip_to_range, feature_range, merge_ranges
from .._foundation._rows import row_folds
from ..convex.statistics import LiftedStatistics, merge_moments, neuron_svecs, svec_rows
from ._linear_term import linear_coordinates

__all__ = ["SDPBlocks", "linear_form", "merge_folds"]


def _moments(X, w):
    """``(weight, weighted mean, squares about it, rows of positive weight)`` of some inputs."""
    total = float(w.sum())
    mean = w @ X / total if total > 0 else np.zeros(X.shape[1])
    return total, mean, w @ (X - mean) ** 2, int(np.count_nonzero(w))


def _block_moments(block, _, n_folds):
    X, w = block[0], block[2]
    fold = row_folds(X, n_folds)
    return tuple((_moments(X[f], w[f]), feature_range(X[f], w[f]))
                 for f in (fold == k for k in range(n_folds)))


def merge_folds(parts):
    """The merged ``(moments, (data_min, data_max))`` of some folds' :meth:`SDPBlocks.moments`."""
    parts = list(parts)
    return merge_moments(*(m for m, _ in parts)), merge_ranges(*(r for _, r in parts))


def _merge_fold_moments(*parts):
    return tuple(merge_folds(items) for items in zip(*parts))


def linear_form(model):
    """``(a, b)`` of a fitted SDP network: its scores are ``svec(L(x))ᵀ a + b`` (m x K, K)."""
    a, b = neuron_svecs(model.U_, model.V_) @ model.alpha_, getattr(model, "intercept_", 0.0)
    if getattr(model, "linear_coef_", None) is None:
        return a, b
    # the linear term x·w = Φ[x_index]·w_std / x_factor plus the constant w·mean
    x_index, x_factor, _, _ = linear_coordinates(model._lifting(), model.n_features_in_)
    scale = 1.0 if model.feature_scale_ is None else model.feature_scale_
    a = a.copy()
    a[x_index] += (model.linear_coef_ * scale).T / x_factor
    return a, b + model._linear_shift()


def _fold_accuracies(block, folds, class_weights):
    """Per fold, the held-out rows' weight scored correctly by each form, and their weight.

    ``folds[k] = (lifting, data range or None, a (n_forms x m x K), b (n_forms x K))``; a
    row counts with its ``sample_weight`` (the block's weight less ``class_weights``).
    """
    X, y, w = block[:3]
    w = w if class_weights is None else w / class_weights[y]
    fold = row_folds(X, len(folds))
    correct, total = np.zeros((len(folds), len(folds[0][2]))), np.zeros(len(folds))
    for k, (lifting, data_range, a, b) in enumerate(folds):
        rows = fold == k
        Xk = X[rows] if data_range is None else clip_to_range(X[rows], *data_range)
        polynomial = tuple(lifting.activation) if lifting.polynomial else None
        scores = np.einsum("nm,fmk->fnk", svec_rows(lifting.features(Xk), polynomial), a) + b[:, None]
        labels = scores[..., 0] > 0 if scores.shape[2] == 1 else scores.argmax(axis=2)
        correct[k], total[k] = (labels == y[rows]) @ w[rows], w[rows].sum()
    return correct, total


def _lifted_statistics(block, _, liftings, targets, n_folds):
    """Per lifting, per fold, the block's :class:`LiftedStatistics` (one tuple, lifting-major)."""
    X, y, w = block[:3]
    t, fold = targets(y), row_folds(X, n_folds)
    parts = []
    for lifting in liftings:
        Z = lifting.features(X)
        polynomial = tuple(lifting.activation) if lifting.polynomial else None
        parts += [LiftedStatistics.of_rows(Z[fold == k], t[fold == k], w[fold == k], polynomial)
                  for k in range(n_folds)]
    return tuple(parts)


def _add_statistics(*parts):
    return tuple(sum(items[1:], items[0]) for items in zip(*parts))


class SDPBlocks:
    """An SDP estimator's training rows on Dask: validated, persisted, with the passes it needs.

    ``total_weight``, ``n_samples`` (rows), ``dtype``; :meth:`moments` and
    :meth:`statistics` each run one pass; :attr:`pass_times` records them.
    """

    def __init__(self, estimator, X, y, sample_weight):
        X_original = X
        X, blocks = training_blocks(X, y, sample_weight)
        self.classifier = is_classifier(estimator)
        check = checked_classifier_block if self.classifier else checked_regressor_block
        self._data = persisted_blocks([dask.delayed(check)(*b) for b in blocks], X.chunks[0])
        self.pass_times = []
        try:
            if self.classifier:
                _, self.total_weight, self.class_weights = classifier_rows(
                    estimator, X_original, X.shape[1], self._data, y)
                self.target_mean = None
            else:
                self._regressor_rows(estimator, X_original, X.shape[1], y)
        except BaseException:
            self.release()
            raise

    def _regressor_rows(self, estimator, X_original, n_features, y):
        n_rows, n_outputs, _, _, total, weighted_sum, (low, high), target_range = self._data.reduce(
            regressor_statistics, merge_regressor_statistics, None
        )
        check_rows(type(estimator).__name__, n_rows, n_features)
        set_input_attributes(estimator, X_original, n_features)
        estimator.n_outputs_ = int(n_outputs)
        estimator._fitted_y_ndim = 1 if np.ndim(y) == 1 else 2
        check_total_weight(estimator, total)
        estimator.data_min_, estimator.data_max_ = low, high
        estimator.target_min_, estimator.target_max_ = target_range
        self.total_weight, self.target_mean = float(total), weighted_sum / total

    def _timed(self, *args):
        start = time.perf_counter()
        result = self._data.reduce(*args)
        self.pass_times.append(time.perf_counter() - start)
        return result

    def moments(self, n_folds=1):
        """Per fold (rows by :func:`~skquad._foundation._rows.row_folds`), the inputs' weighted ``(weight, mean, squares,
        rows of positive weight)`` and range over rows of positive weight: one pass (merge
        with :func:`merge_folds`)."""
        return self._timed(_block_moments, _merge_fold_moments, None, n_folds)

    def statistics(self, liftings, targets, n_folds=1):
        """Per lifting and fold, the :class:`LiftedStatistics` of ``targets(y)``
        (unnormalized, a list of lists): one pass."""
        parts = self._timed(_lifted_statistics, _add_statistics, None, liftings, targets, n_folds)
        return [list(parts[i : i + n_folds]) for i in range(0, len(parts), n_folds)]

    def fold_accuracies(self, folds):
        """Per fold, the held-out accuracy (weighted by ``sample_weight``) of each of its
        forms (see :func:`_fold_accuracies`): one pass."""
        correct, total = self._timed(_fold_accuracies, add_parts, folds, self.class_weights)
        return correct / total[:, None]

    def release(self):
        self._data.release()
