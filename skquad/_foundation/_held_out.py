"""The held-out choice of a penalty: the rule behind the regressors' "auto" searches.

``SDPQuantizedRegressor(beta="auto")`` and the network regressors'
``alpha="auto"`` fit their candidates on part of the rows and score them on
the rest. Two rules make that choice hold on few rows:

* enough held-out rows: the folds are held out in turn until at least
  :data:`MIN_HELD_OUT_ROWS` rows are scored (:func:`held_out_folds`). The
  noise of a held-out score falls as one over the root of its rows, and where
  the rows are few the fits are cheap;
* Breiman's one-standard-error rule (:func:`one_standard_error_choice`): the
  most penalised candidate whose held-out error is within one standard error
  of the smallest. Differences below that are noise on the rows at hand, and
  the more penalised model extrapolates the least. Where the most penalised
  candidate is no safer a model (a network's strongest penalty leaves a
  constant), the same standard error guards a default instead
  (:func:`preferred_within_one_standard_error`): it is left only on held-out
  evidence.
"""

import functools

import numpy as np
from sklearn.base import clone

from ._rows import row_folds

__all__ = [
    "FOLDS", "MIN_HELD_OUT_ROWS", "MIN_ROWS", "HeldOutErrors", "HeldOutMisclassifications",
    "can_hold_out", "every_class_trained", "held_out_folds",
    "held_out_splits", "one_standard_error_choice", "preferred_within_one_standard_error",
    "search_candidate", "smallest_error_choice", "SELECTION_RULES",
]

FOLDS = 5  # fifths: each fit sees 80 % of the rows
MIN_HELD_OUT_ROWS = 100
# Fewer rows than this leave too few to hold out: the searches take their fixed default.
MIN_ROWS = 20


def can_hold_out(sample_weight):
    """Whether there are :data:`MIN_ROWS` rows to search on; rows count as their weights
    (a weight of 2 is a repeated row)."""
    return float(np.sum(sample_weight)) >= MIN_ROWS


def search_candidate(estimator, **params):
    """A clone of ``estimator`` with ``params`` for a search's fits inside its ``fit``. The user's
    callbacks (which ``clone`` keeps) are left out: they follow the fit, not its candidates."""
    candidate = clone(estimator).set_params(**params)
    vars(candidate).pop("_skl_callbacks", None)
    return candidate


def held_out_folds(n_rows, n_folds):
    """How many of ``n_folds`` folds to hold out in turn: enough for
    :data:`MIN_HELD_OUT_ROWS` rows in all, at least one, at most every fold."""
    return int(min(n_folds, max(1, -(-MIN_HELD_OUT_ROWS * n_folds // max(int(n_rows), 1)))))


def held_out_splits(X, sample_weight, n_folds=FOLDS):
    """``(train, held_out)`` row indices of the folds held out in turn (:func:`held_out_folds`
    of them, by total weight). Each row's fold is a hash of its values (:func:`row_folds`):
    the same for every row order, and a repeated row falls with its copies, so that a weight
    of 2 and a row given twice choose alike (the fit sees only the weighted rows)."""
    folds = row_folds(X, n_folds)
    weights = np.bincount(folds, weights=sample_weight, minlength=n_folds)
    chosen = np.flatnonzero(weights > 0)[: held_out_folds(np.sum(sample_weight), n_folds)]
    return [(np.flatnonzero(folds != fold), np.flatnonzero(folds == fold)) for fold in chosen]


def every_class_trained(y, splits):
    """Whether every training part of ``splits`` holds every class of the labels ``y``: a
    classifier's candidate fitted without a class cannot be scored against it."""
    n_classes = np.unique(y).size
    return all(np.unique(y[train]).size == n_classes for train, _ in splits)

class HeldOutErrors:
    """A scorer that keeps each held-out row's squared error, call after call.

    Each output's error is over its variance in the training targets ``y``
    (R²'s uniform average over outputs), times the row's weight; the score
    returned is minus their sum.
    """

    def __init__(self, y, sample_weight):
        y = np.reshape(y, (len(y), -1))
        total = sample_weight.sum()
        mean = sample_weight @ y / total
        self.spread = np.maximum(sample_weight @ (y - mean) ** 2 / total, np.finfo(float).tiny)
        self.errors = []

    def __call__(self, estimator, X, y, sample_weight=None):
        self.add(y, estimator.predict(X), sample_weight)
        return -float(self.errors[-1].sum())

    def add(self, y_true, y_pred, sample_weight=None):
        """Keep the errors of one candidate on one fold (NumPy arrays)."""
        residual = np.reshape(y_true, (len(y_true), -1)) - np.reshape(y_pred, (len(y_true), -1))
        weight = np.ones(len(residual)) if sample_weight is None else np.asarray(sample_weight)
        self.errors.append(np.nan_to_num(weight * (residual**2 / self.spread).sum(axis=1), nan=np.inf))

    def by_candidate(self, n_candidates):
        """The errors as (held-out rows, candidates), from calls made fold by fold, each
        fold scoring the candidates in order."""
        calls = self.errors
        return np.concatenate([np.column_stack(calls[k : k + n_candidates])
                               for k in range(0, len(calls), n_candidates)])


class HeldOutMisclassifications(HeldOutErrors):
    """A scorer that keeps each held-out row's misclassification (1 or 0) times its weight, call
    after call: what a classifier's "auto" search minimizes (a row of a label indicator matrix
    is wrong where any label is). A squared or log loss on held-out rows would also charge a
    confident right score, and so favour the more penalised candidates beyond their accuracy."""

    def __init__(self):
        self.errors = []

    def add(self, y_true, y_pred, sample_weight=None):
        """Keep the misclassifications of one candidate on one fold (NumPy arrays)."""
        wrong = np.asarray(y_pred) != np.asarray(y_true)
        wrong = (wrong.any(axis=1) if wrong.ndim == 2 else wrong).astype(np.float64)
        self.errors.append(wrong if sample_weight is None else wrong * np.asarray(sample_weight))

def _within_one_standard_error(errors, paired=True):
    """``(within, best)``: which candidates' mean errors are within one standard error of the
    smallest mean, and the index of that smallest; ``errors`` of shape (held-out rows or
    folds, candidates).

    ``paired``: the standard error of each candidate's difference from the best, row by row
    (rows are shared, so their common noise cancels). False: the standard error of the best
    candidate's own errors, glmnet's ``lambda.1se`` on the folds' mean errors.
    """
    with np.errstate(invalid="ignore"):
        mean = errors.mean(axis=0)
        best = int(np.argmin(mean))
        spread = errors - errors[:, [best]] if paired else errors[:, [best]]
        standard_error = np.nan_to_num(spread.std(axis=0, ddof=1)) / np.sqrt(len(errors))
    return mean - mean[best] <= standard_error, best


def one_standard_error_choice(errors, *, paired=True):
    """Index of the first (most penalised) candidate whose mean error is within one standard
    error of the smallest mean (:func:`_within_one_standard_error`)."""
    return int(np.flatnonzero(_within_one_standard_error(errors, paired)[0])[0])


def preferred_within_one_standard_error(errors, preferred):
    """``preferred`` where its mean error is within one standard error of the smallest mean
    (paired, :func:`_within_one_standard_error`), else the candidate of the smallest."""
    within, best = _within_one_standard_error(errors)
    return preferred if within[preferred] else best


def smallest_error_choice(errors):
    """Index of the candidate of the smallest mean error; ``errors`` as above. For candidates
    whose most penalised is no safer a model (a network's strongest penalty is a constant)."""
    return int(np.argmin(errors.mean(axis=0)))


# The CV estimators' ``selection_rule``: which candidate their folds' errors choose. Over a
# few folds, the standard error of the best candidate's fold errors (glmnet's lambda.1se).
SELECTION_RULES = {
    "best": smallest_error_choice,
    "one_standard_error": functools.partial(one_standard_error_choice, paired=False),
}
