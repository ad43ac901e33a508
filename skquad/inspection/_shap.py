"""Exact interventional Shapley (SHAP) values of a quadratic model, in closed form.

The interventional value of a coalition ``S`` of features at ``x`` is
``v(S) = E_z f(x_S, z_rest)`` over a background distribution of ``z``. Shapley
values are linear in ``f``, so each term of ``f(x) = b + sum_a w_a x_a +
sum_a Q_aa x_a^2 + sum_{a<c} 2 Q_ac x_a x_c`` is shared on its own:

* a term ``h(x_a)`` of one feature goes to ``a`` alone:
  ``h(x_a) - E h(z_a)``;
* a pair ``g = 2 Q_ac x_a x_c`` is a game of two players; ``a`` gets
  ``1/2 [g(x_a, x_c) - E g(z_a, x_c)] + 1/2 [E g(x_a, z_c) - E g(z_a, z_c)]``
  ``= Q_ac (x_a x_c - mu_a x_c + x_a mu_c - M_ac)``,

with ``mu = E z`` and ``M = E z z^T`` (the background's joint second moments).
The diagonal term fits the same formula (``Q_aa (x_a^2 - M_aa)``), so in
matrix form, for each score::

    phi = (x - mu) * (w + Q x) + x * (Q mu) - (Q * M) 1

and ``sum_a phi_a = f(x) - E f(z)`` with base value
``E f(z) = b + w^T mu + sum(Q * M)``. The background enters only through
``mu`` and ``M``: the cost is ``O(m d^2)`` once for a background of ``m``
rows, then ``O(n d^2)`` for ``n`` samples, where a model-agnostic exact
explainer evaluates the model on ``2^d`` coalitions times ``m`` rows per
sample.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import _check_sample_weight

from ._quadratic_form import quadratic_form, score_input

__all__ = ["ShapValues", "shap_values"]


@dataclass(frozen=True)
class ShapValues:
    """Exact interventional Shapley values of a quadratic model.

    For a single score the score axis is dropped: ``values`` is (n, d).

    Attributes
    ----------
    values : ndarray of shape (n_samples, n_features[, n_scores])
        ``values.sum(axis=1) + base_values`` is the score.
    base_values : float or ndarray of shape (n_scores,)
        The score's mean over the background, ``E f(z)``.
    data : ndarray of shape (n_samples, n_features)
        The input as the score sees it (after a Pipeline's steps; clipped to
        the training range when the estimator has ``clip_inputs=True``).
    feature_names : ndarray of str, shape (n_features,)
    score_names : tuple of str
    """

    values: np.ndarray
    base_values: object
    data: np.ndarray
    feature_names: np.ndarray
    score_names: tuple

    @property
    def score(self):
        """The score the values add up to: ``base_values + values.sum(axis=1)``."""
        return self.base_values + self.values.sum(axis=1)

    def to_explanation(self):
        """The values as a ``shap.Explanation``, for the ``shap`` package's plots.

        Requires the ``shap`` package.
        """
        import shap

        n = self.values.shape[0]
        base = np.broadcast_to(self.base_values, (n,) + np.shape(self.base_values)).copy()
        return shap.Explanation(
            values=self.values, base_values=base, data=self.data, feature_names=[str(f) for f in self.feature_names]
        )


def background_moments(Z, weight):
    """``mu = E z`` and ``M = E z z^T`` under the (normalized) weights."""
    weight = weight / weight.sum()
    mu = weight @ Z
    M = (Z * weight[:, None]).T @ Z
    return mu, 0.5 * (M + M.T)


def shap_values(estimator, X, background, *, background_weight=None, which=None, feature_names=None):
    """Exact interventional SHAP values of a quadratic model against a background set.

    The closed form (see the :ref:`user guide <local-explanations>`) equals
    what an exact model-agnostic explainer (e.g. ``shap``'s ``Exact`` with an
    ``Independent`` masker on the same background) computes by enumerating the
    coalitions, at the cost of two matrix products.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline ending in one
        A model whose score is a quadratic form of its input (see
        :func:`local_contributions`).
    X : array-like of shape (n_samples, n_features)
        The samples to explain, in the units the Pipeline takes.
    background : array-like of shape (n_background, n_features)
        The background ("reference") data the features are replaced with
        when they are left out of a coalition, in the units the Pipeline
        takes; typically a sample of the training data.
    background_weight : array-like of shape (n_background,), default=None
        Weights of the background rows (non-negative, not all zero).
    which : {"sampled", "relaxed", "float"}, default=None
        Quantized networks: which network (see :func:`quadratic_neurons`).
    feature_names : array-like of str, default=None
        Default: the estimator's ``feature_names_in_``, else the Pipeline's
        ``get_feature_names_out()``.

    Returns
    -------
    shap_values : ShapValues

    Raises
    ------
    ValueError
        When the score is not a quadratic form of the input, or for bad
        ``background_weight``.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import QuadraticRegression
    >>> from skquad.inspection import shap_values
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 3))
    >>> model = QuadraticRegression().fit(X, X[:, 0] * X[:, 1] + X[:, 2])
    >>> explanation = shap_values(model, X[:5], background=X)
    >>> bool(np.allclose(explanation.score, model.predict(X[:5])))
    True
    """
    form = quadratic_form(estimator, which=which, feature_names=feature_names)
    X = score_input(estimator, X)
    Z = score_input(estimator, background)
    if Z.shape[0] == 0:
        raise ValueError("background has no rows; pass at least one background sample.")
    try:
        weight = _check_sample_weight(background_weight, Z, ensure_non_negative=True)
    except ValueError as error:
        raise ValueError(f"background_weight: {error}") from error
    mu, M = background_moments(Z, weight)
    Q, w, b = form.Q, form.w, form.b
    QX = X @ Q  # (k, n, d): row i of score k is Q_k x_i
    values = (X - mu)[None] * (w[:, None, :] + QX) + X[None] * (Q @ mu)[:, None, :] - (Q * M).sum(axis=2)[:, None, :]
    base = b + w @ mu + (Q * M).sum(axis=(1, 2))
    values = np.moveaxis(values, 0, -1)  # (n, d, k)
    single = form.n_scores == 1
    return ShapValues(
        values=values[..., 0] if single else values,
        base_values=float(base[0]) if single else base,
        data=X,
        feature_names=form.feature_names,
        score_names=form.score_names,
    )
