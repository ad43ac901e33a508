"""Per-sample contributions of main effects and pairs to a quadratic model's score.

A score that is a quadratic form of the input splits exactly into terms::

    f(x) - b = sum_a (w_a x_a + Q_aa x_a^2)  +  sum_{a<c} 2 Q_ac x_a x_c
               main effect of feature a         pair (a, c)

so each sample's explanation is exact: the terms add up to the score minus the
intercept, to rounding. With ``max_pairs`` only the pairs of largest mean
absolute contribution on ``X`` are listed and the others are added up in
``other_pairs``, so the sum stays exact.
"""

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from .._foundation._memory import check_memory
from ._quadratic_form import quadratic_form, score_input

__all__ = ["LocalContributions", "local_contributions"]


@dataclass(frozen=True)
class LocalContributions:
    """Exact per-sample terms of a quadratic model's score.

    For a single score (a binary classifier, a single-output regressor) the
    score axis is dropped: ``main_effects`` is (n, d), not (n, d, 1).

    Attributes
    ----------
    main_effects : ndarray of shape (n_samples, n_features[, n_scores])
        ``w_a x_a + Q_aa x_a^2`` of each feature ``a``.
    pairs : ndarray of int, shape (n_pairs, 2)
        The listed pairs ``(a, c)``, ``a < c``: all of them in
        ``np.triu_indices(d, 1)`` order, or the ``max_pairs`` of largest mean
        absolute contribution, largest first.
    pair_effects : ndarray of shape (n_samples, n_pairs[, n_scores])
        ``2 Q_ac x_a x_c`` of each listed pair.
    other_pairs : ndarray of shape (n_samples[, n_scores])
        The sum of the pairs not listed (zero when all are).
    intercept : float or ndarray of shape (n_scores,)
        ``b``: the score at ``x = 0``.
    data : ndarray of shape (n_samples, n_features)
        The input as the score sees it (after a Pipeline's steps; clipped to
        the training range when the estimator has ``clip_inputs=True``).
    feature_names : ndarray of str, shape (n_features,)
    score_names : tuple of str
    """

    main_effects: np.ndarray
    pairs: np.ndarray
    pair_effects: np.ndarray
    other_pairs: np.ndarray
    intercept: object
    data: np.ndarray
    feature_names: np.ndarray
    score_names: tuple

    @property
    def pair_names(self):
        """``"a × c"`` for each listed pair."""
        names = self.feature_names
        return np.asarray([f"{names[a]} × {names[c]}" for a, c in self.pairs], dtype=object)

    @property
    def score(self):
        """The score the terms add up to: intercept + main effects + pairs."""
        return self.intercept + self.main_effects.sum(axis=1) + self.pair_effects.sum(axis=1) + self.other_pairs


def _check_max_pairs(max_pairs, n_pairs):
    if max_pairs is None:
        return n_pairs
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, Integral) or max_pairs < 0:
        raise ValueError(f"max_pairs must be None or a non-negative integer, got {max_pairs!r}.")
    return min(int(max_pairs), n_pairs)


def _ranked_pairs(X, Q, n_keep):
    """The ``n_keep`` pairs of largest mean ``|2 Q_ac x_a x_c|`` over X, summed over scores.

    ``|x_a x_c| = |x_a| |x_c|``, so the means are one product ``|X|^T |X|``.
    """
    d = X.shape[1]
    rows, cols = np.triu_indices(d, k=1)
    if n_keep == rows.size:
        return rows, cols
    absolute = np.abs(X)
    importance = (absolute.T @ absolute)[rows, cols] * 2.0 * np.abs(Q[:, rows, cols]).sum(axis=0)
    order = np.argsort(-importance, kind="stable")[:n_keep]
    return rows[order], cols[order]


def local_contributions(estimator, X, *, max_pairs=None, which=None, feature_names=None):
    """Exact contributions of each main effect and each pair to each sample's score.

    For a model whose score is a quadratic form ``x^T Q x + w^T x + b`` of its
    input, the main effects ``w_a x_a + Q_aa x_a^2`` and the pairs
    ``2 Q_ac x_a x_c`` add up to the score minus ``b``, exactly (to rounding).

    Parameters
    ----------
    estimator : fitted estimator or Pipeline ending in one
        QuadraticLogisticRegression, QuadraticRegression(CV), an SDP or
        Backprop quantized network, or a QNN/RPQNN network with
        ``hidden_layer_sizes=()``. The score explained is the decision
        function of a classifier, the prediction of a regressor (its log for
        a network with ``loss="poisson"``).
    X : array-like of shape (n_samples, n_features)
        In the units the Pipeline takes.
    max_pairs : int, default=None
        List only this many pairs: those of largest mean absolute contribution
        on ``X`` (summed over the scores); the rest are added up in
        ``other_pairs``. None lists all ``d (d - 1) / 2``.
    which : {"sampled", "relaxed", "float"}, default=None
        Quantized networks: which network (see :func:`quadratic_neurons`).
    feature_names : array-like of str, default=None
        Default: the estimator's ``feature_names_in_`` (a DataFrame's
        columns), else the Pipeline's ``get_feature_names_out()``.

    Returns
    -------
    contributions : LocalContributions

    Raises
    ------
    ValueError
        When the score is not a quadratic form of the input (a network with
        hidden layers).

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import QuadraticRegression
    >>> from skquad.inspection import local_contributions
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 3))
    >>> y = X[:, 0] * X[:, 1] + X[:, 2]
    >>> model = QuadraticRegression(alpha=1e-6).fit(X, y)
    >>> terms = local_contributions(model, X[:5], max_pairs=1)
    >>> terms.pair_names
    array(['x0 × x1'], dtype=object)
    >>> bool(np.allclose(terms.score, model.predict(X[:5])))
    True
    """
    form = quadratic_form(estimator, which=which, feature_names=feature_names)
    X = score_input(estimator, X)
    Q, w, b = form.Q, form.w, form.b
    n, d = X.shape
    k = form.n_scores
    n_keep = _check_max_pairs(max_pairs, d * (d - 1) // 2)
    check_memory(8.0 * n * (d + n_keep) * k, "max_pairs", max_pairs, "the per-sample pair contributions",
                 advice="pass max_pairs=<a few pairs> or explain fewer samples at a time.")
    diagonal = np.diagonal(Q, axis1=1, axis2=2)  # (k, d)
    main = X[:, :, None] * w.T[None] + (X * X)[:, :, None] * diagonal.T[None]  # (n, d, k)
    rows, cols = _ranked_pairs(X, Q, n_keep)
    pair_effects = 2.0 * (X[:, rows] * X[:, cols])[:, :, None] * Q[:, rows, cols].T[None]
    other = np.zeros((n, k))
    if n_keep < d * (d - 1) // 2:  # the pairs not listed: all pairs (x^T Q x off the diagonal) less the listed
        off_diagonal = Q * (1.0 - np.eye(d))
        other = ((X @ off_diagonal) * X).sum(axis=2).T - pair_effects.sum(axis=1)
    squeeze = (lambda a: a[..., 0]) if k == 1 else (lambda a: a)
    return LocalContributions(
        main_effects=squeeze(main),
        pairs=np.stack([rows, cols], axis=1).astype(np.intp),
        pair_effects=squeeze(pair_effects),
        other_pairs=squeeze(other),
        intercept=float(b[0]) if k == 1 else b,
        data=X,
        feature_names=form.feature_names,
        score_names=form.score_names,
    )
