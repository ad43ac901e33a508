"""The SDP estimators' ``beta`` on held-out rows: the path over one fold and ``beta="auto"``'s search.

``SDPQuantizedClassifierCV`` and ``SDPQuantizedRegressorCV`` fit a fold along a
path of ``beta`` (:func:`fit_path`); ``beta="auto"`` of the single estimators
fits fifths of the rows along the fractions of :func:`auto_beta_fractions` and
takes the one :mod:`skquad._foundation._held_out`'s rule picks
(:func:`held_out_beta`). How much of ``beta_max`` the data can use is set by
its noise, which the ``(p / n)^2`` rule cannot see.
"""

import contextlib
import warnings

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning

from .._foundation._held_out import every_class_trained, held_out_splits
from ..convex.relaxation import ZERO_NETWORK_WARNING
from ..convex.routes import default_beta_floor

__all__ = [
    "AUTO_BETA_FRACTIONS", "AUTO_SEARCH_MAX_LIFTED", "AUTO_SEARCH_MAX_SIZE",
    "auto_beta_fractions", "fit_path", "held_out_beta", "path_warnings_ignored",
]

# The fractions of beta_max that beta="auto" tries, largest first. At 1 the network is zero:
# the linear term alone (or the constant), the choice where no network predicts held-out rows better.
AUTO_BETA_FRACTIONS = (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 1e-4)

# Rule: beta="auto" searches on held-out rows up to 100 lifted coordinates and up to 1e8 for
# n p^2 times the blocks; beyond either, it takes the (p / n)^2 rule. Why: the search solves up
# to eight times per held-out fifth, and a solve's cost grows with p as (n + p)^3 (the squared
# dual) or, per iteration, as n p^2 per block (the factor solver): at 1e8 its solves take
# seconds each.
AUTO_SEARCH_MAX_LIFTED = 100
AUTO_SEARCH_MAX_SIZE = 1e8

# The start of SDPQuantizedClassifier's warning about a network far from its bound.
FAR_FROM_BOUND = "The network with n_neurons="


def auto_beta_fractions(loss, n_lifted, rule_fraction, *, n_rows, n_blocks):
    """The fractions of ``beta_max`` that ``beta="auto"`` chooses among, largest first: those of
    :data:`AUTO_BETA_FRACTIONS` down to the lowest a solve affords. That is the route's floor
    where its cost does not grow as ``beta`` shrinks (:func:`default_beta_floor`), else the
    ``(p / n)^2`` rule's fraction ``rule_fraction``, which the fit would solve anyway; that
    fraction alone beyond :data:`AUTO_SEARCH_MAX_LIFTED` lifted coordinates ``p`` or
    :data:`AUTO_SEARCH_MAX_SIZE` for ``n_rows p^2 n_blocks``."""
    if n_lifted > AUTO_SEARCH_MAX_LIFTED or n_rows * n_lifted**2 * n_blocks > AUTO_SEARCH_MAX_SIZE:
        return np.asarray([rule_fraction])
    lowest = default_beta_floor(loss, n_lifted, rule_fraction)
    fractions = [fraction for fraction in AUTO_BETA_FRACTIONS if fraction >= lowest]
    if fractions[-1] > lowest:
        fractions.append(lowest)
    return np.asarray(fractions)


@contextlib.contextmanager
def path_warnings_ignored():
    """Along a path, narrow-network advice for betas that will not be chosen is noise (the
    refitted model still gives it), and the path starts at the zero network by design."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=FAR_FROM_BOUND, category=UserWarning)
        warnings.filterwarnings("ignore", message=ZERO_NETWORK_WARNING, category=UserWarning)
        yield


def fit_path(estimator, betas, X, y, sample_weight, train, test, scorer):
    """Fit one fold along the path (largest beta first, warm-started) and score each beta."""
    estimator = clone(estimator).set_params(warm_start=True)
    scores = np.empty(len(betas))
    weight = sample_weight[train] if sample_weight is not None else None
    for index, beta in enumerate(betas):
        with path_warnings_ignored():
            estimator.set_params(beta=beta).fit(X[train], y[train], sample_weight=weight)
        # The held-out rows are scored with their weights, so that an integer
        # weight scores as that many repeated rows (sklearn's weight semantics).
        if sample_weight is None:
            scores[index] = scorer(estimator, X[test], y[test])
        else:
            scores[index] = scorer(estimator, X[test], y[test], sample_weight=sample_weight[test])
    return scores


def held_out_beta(candidate, X, y, sample_weight, betas, scorer, *, choice):
    """The one of ``betas`` (largest first) that ``choice`` picks from the held-out errors
    (``scorer``'s) of ``candidate``'s fits on held-out fifths of the rows
    (:func:`held_out_splits`), a rule of :mod:`skquad._foundation._held_out` taking the
    errors of shape (held-out rows, candidates); None where a classifier's training
    fifth lacks one of ``y``'s classes. The caller has checked that there are candidates to
    choose among and rows to hold out (:func:`can_hold_out`)."""
    splits = held_out_splits(X, sample_weight)
    if is_classifier(candidate) and not every_class_trained(y, splits):
        return None
    with warnings.catch_warnings():
        # A candidate's convergence is the choice's concern, not the user's: the fit at the
        # chosen beta warns for itself.
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        for train, held_out in splits:
            fit_path(candidate, betas, X, y, sample_weight, train, held_out, scorer)
    return float(betas[choice(scorer.by_candidate(len(betas)))])
