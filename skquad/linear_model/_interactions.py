"""Interaction constraints of the quadratic linear models: which entries of ``Q`` may be nonzero.

``interaction_cst`` has :class:`~sklearn.ensemble.HistGradientBoostingRegressor`'s
meaning: the pair ``(a, b)``, ``a != b``, may interact when some group holds
both, and the features no group lists form one more group together. Every
feature is then in a group, so ``interaction_cst`` restricts only the cross
terms; ``interaction_only`` removes the squares ``Q_aa``. The result is one
boolean ``d x d`` matrix that every solver reads (None: no constraint).
"""

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import StrOptions

__all__ = ["INTERACTION_CST_CONSTRAINT", "allowed_entries", "estimator_entries", "indexed_groups",
           "pair_groups"]

# _parameter_constraints' entry (HistGradientBoosting's, which takes lists and tuples)
INTERACTION_CST_CONSTRAINT = [list, tuple, StrOptions({"pairwise", "no_interactions"}), None]


def _groups(interaction_cst, n_features, feature_names):
    """The groups as sets of indices, named features looked up in ``feature_names``."""
    if interaction_cst == "no_interactions":
        return [{a} for a in range(n_features)]
    if interaction_cst == "pairwise":  # every pair is a group
        return [set(range(n_features))]
    names = {} if feature_names is None else {str(n): i for i, n in enumerate(feature_names)}
    groups = []
    for group in interaction_cst:
        if isinstance(group, (str, bytes)) or not hasattr(group, "__iter__"):
            raise ValueError(
                "interaction_cst must be a sequence of groups (lists, tuples or sets) of "
                f"feature indices or names, got the group {group!r} in {interaction_cst!r}."
            )
        indices = set()
        for item in group:
            if isinstance(item, str):
                if item not in names:
                    known = "X has no feature names" if feature_names is None else (
                        f"the feature names are {list(names)}"
                    )
                    raise ValueError(
                        f"interaction_cst names the feature {item!r}, which is not in X: {known}."
                    )
                indices.add(names[item])
            elif isinstance(item, (Integral, np.integer)) and not isinstance(item, bool) and (
                0 <= item < n_features
            ):
                indices.add(int(item))
            else:
                raise ValueError(
                    "interaction_cst must consist of integer indices in [0, n_features - 1] = "
                    f"[0, {n_features - 1}] or feature names, got invalid entries in the group "
                    f"{group!r}."
                )
        groups.append(indices)
    rest = set(range(n_features)) - set().union(*groups)
    if rest:
        groups.append(rest)
    return groups


def allowed_entries(interaction_cst, interaction_only, n_features, feature_names=None):
    """The symmetric boolean ``(d, d)`` matrix of the entries of ``Q`` that may be nonzero.

    None when every entry may be (no constraint), so that the solvers keep
    their unconstrained paths.

    Parameters
    ----------
    interaction_cst : {"pairwise", "no_interactions"}, sequence of groups or None
        See :class:`~skquad.QuadraticLogisticRegression`.
    interaction_only : bool
        No squares ``Q_aa``.
    n_features : int
    feature_names : ndarray of str or None
        ``feature_names_in_``, for groups of names.
    """
    if interaction_cst is None and not interaction_only:
        return None
    allowed = np.zeros((n_features, n_features), dtype=bool)
    if interaction_cst is None:
        allowed[:] = True
    else:
        for group in _groups(interaction_cst, n_features, feature_names):
            members = np.fromiter(sorted(group), dtype=np.intp)
            allowed[np.ix_(members, members)] = True
    if interaction_only:
        np.fill_diagonal(allowed, False)
    return None if allowed.all() else allowed


def estimator_entries(estimator, n_features):
    """:func:`allowed_entries` of an estimator's ``interaction_cst`` and ``interaction_only``."""
    return allowed_entries(estimator.interaction_cst, estimator.interaction_only, n_features,
                           getattr(estimator, "feature_names_in_", None))


def indexed_groups(interaction_cst, n_features, feature_names=None):
    """``interaction_cst`` with feature indices for names: the same constraint on a numpy ``X``.

    For an estimator fitted on folds of validated arrays (the CV estimators),
    which no longer carry ``feature_names_in_``.
    """
    if interaction_cst is None or isinstance(interaction_cst, str):
        return interaction_cst
    return [sorted(group) for group in _groups(interaction_cst, n_features, feature_names)]


def pair_groups(pairs, n_features):
    """``interaction_cst`` allowing exactly ``pairs`` (``(k, 2)`` indices) among the cross terms.

    One group per pair and one per feature in none: the features no group
    lists would form one group together, whose pairs would all be allowed.
    """
    alone = np.setdiff1d(np.arange(n_features), pairs)
    return [[int(a), int(b)] for a, b in pairs] + [[int(a)] for a in alone]
