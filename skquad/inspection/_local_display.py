"""One sample's explanation as a waterfall or bar chart, in scikit-learn's Display style.

The terms are those of :func:`local_contributions` (main effects and pairs,
from the intercept) or of :func:`shap_values` (one value per feature, from the
background's mean score); the largest in absolute value are drawn, the others
added up in one bar, so the waterfall ends exactly at the sample's score.
"""

from numbers import Integral

import numpy as np
from sklearn.utils import _safe_indexing

from ._contributions import LocalContributions, local_contributions
from ._shap import ShapValues, shap_values

__all__ = ["LocalExplanationDisplay"]

_KINDS = ("waterfall", "bar")


def _score_index(score, score_names, scores):
    """Index of the score to draw: given (index or name), or the largest at the sample."""
    if score is None:
        return int(np.argmax(scores))
    if isinstance(score, str):
        if score not in score_names:
            raise ValueError(f"score={score!r} is not one of the scores {list(score_names)}.")
        return list(score_names).index(score)
    if isinstance(score, bool) or not isinstance(score, Integral) or not 0 <= score < len(score_names):
        raise ValueError(f"score={score!r} is not an index of the {len(score_names)} scores {list(score_names)}.")
    return int(score)


def _terms(explanation, sample):
    """Labels, values (n_terms[, n_scores]), base value(s) and base label of one sample."""
    data, names = explanation.data[sample], explanation.feature_names
    features = [f"{name} = {value:.3g}" for name, value in zip(names, data)]
    if isinstance(explanation, ShapValues):
        return features, explanation.values[sample], explanation.base_values, "mean score on the background"
    labels = features + list(explanation.pair_names)
    values = np.concatenate([explanation.main_effects[sample], explanation.pair_effects[sample]], axis=0)
    if explanation.pairs.shape[0] < len(names) * (len(names) - 1) // 2:
        labels.append("pairs not listed")
        values = np.concatenate([values, explanation.other_pairs[sample][None]], axis=0)
    return labels, values, explanation.intercept, "intercept"


class LocalExplanationDisplay:
    """Waterfall or bar chart of one sample's largest contributions to its score.

    Create it with :meth:`from_estimator` (or :meth:`from_explanation` for
    terms already computed); :meth:`plot` draws it.

    Parameters
    ----------
    labels : list of str
        The terms drawn, largest absolute value first (features show their
        value as the score sees it).
    values : ndarray of shape (n_terms,)
    base_value : float
        Where the waterfall starts: the intercept (contributions) or the
        background's mean score (SHAP values).
    score_value : float
        The sample's score, ``base_value + values.sum()``.
    base_label : str
    score_name : str
    sample : int
        The sample's row in the data explained (for the title).

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes
    bars_ : BarContainer

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import QuadraticRegression
    >>> from skquad.inspection import LocalExplanationDisplay
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 4))
    >>> model = QuadraticRegression().fit(X, X[:, 0] * X[:, 1] + X[:, 2])
    >>> display = LocalExplanationDisplay.from_estimator(
    ...     model, X, sample=3, max_terms=4)
    >>> len(display.labels)
    5
    """

    def __init__(self, labels, values, base_value, score_value, *, base_label="intercept", score_name="score", sample=0):
        self.labels = list(labels)
        self.values = np.asarray(values, dtype=np.float64)
        self.base_value = float(base_value)
        self.score_value = float(score_value)
        self.base_label = base_label
        self.score_name = score_name
        self.sample = sample

    @classmethod
    def from_explanation(cls, explanation, *, sample=0, score=None, max_terms=10, kind="waterfall", ax=None):
        """Plot one sample of a :class:`LocalContributions` or :class:`ShapValues`.

        Parameters
        ----------
        explanation : LocalContributions or ShapValues
        sample : int, default=0
            Row of the explained data.
        score : int or str, default=None
            Which score (index or name in ``explanation.score_names``); None:
            the only one, else the largest at the sample (a classifier's
            predicted class).
        max_terms : int, default=10
            Terms drawn; the others are added up in one bar.
        kind : {"waterfall", "bar"}, default="waterfall"
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : LocalExplanationDisplay
        """
        if not isinstance(explanation, (LocalContributions, ShapValues)):
            raise TypeError(f"explanation must be LocalContributions or ShapValues, got {type(explanation).__name__}.")
        n_samples = explanation.data.shape[0]
        if isinstance(sample, bool) or not isinstance(sample, Integral) or not -n_samples <= sample < n_samples:
            raise ValueError(f"sample={sample!r} is not a row of the {n_samples} explained samples.")
        if isinstance(max_terms, bool) or not isinstance(max_terms, Integral) or max_terms < 1:
            raise ValueError(f"max_terms must be a positive integer, got {max_terms!r}.")
        labels, values, base, base_label = _terms(explanation, sample)
        index = _score_index(score, explanation.score_names, np.atleast_1d(explanation.score[sample]))
        if values.ndim == 2:
            values, base = values[:, index], base[index]
        order = np.argsort(-np.abs(values), kind="stable")
        shown, rest = order[:max_terms], order[max_terms:]
        labels = [labels[i] for i in shown]
        drawn = values[shown]
        if rest.size:
            labels.append(f"{rest.size} other terms")
            drawn = np.append(drawn, values[rest].sum())
        display = cls(
            labels, drawn, base, base + values.sum(), base_label=base_label,
            score_name=explanation.score_names[index], sample=int(sample),
        )
        return display.plot(ax=ax, kind=kind)

    @classmethod
    def from_estimator(
        cls, estimator, X, *, sample=0, background=None, background_weight=None, score=None, max_terms=10,
        kind="waterfall", which=None, feature_names=None, ax=None,
    ):
        """Explain one sample of ``X`` and plot it.

        Parameters
        ----------
        estimator : fitted estimator or Pipeline ending in one
            A model whose score is a quadratic form of its input (see
            :func:`local_contributions`).
        X : array-like of shape (n_samples, n_features)
        sample : int, default=0
            The row of ``X`` to explain.
        background : array-like, default=None
            None: draw the exact contributions of main effects and pairs
            (:func:`local_contributions`) from the intercept. Given: draw the
            SHAP values against this background (:func:`shap_values`) from
            its mean score.
        background_weight : array-like, default=None
            See :func:`shap_values`.
        score, max_terms, kind, ax
            See :meth:`from_explanation`.
        which, feature_names
            See :func:`local_contributions`.

        Returns
        -------
        display : LocalExplanationDisplay
        """
        n_samples = X.shape[0] if hasattr(X, "shape") else len(X)
        if isinstance(sample, bool) or not isinstance(sample, Integral) or not -n_samples <= sample < n_samples:
            raise ValueError(f"sample={sample!r} is not a row of X ({n_samples} rows).")
        row = _safe_indexing(X, [int(sample)], axis=0)
        if background is None:
            explanation = local_contributions(estimator, row, which=which, feature_names=feature_names)
        else:
            explanation = shap_values(
                estimator, row, background, background_weight=background_weight, which=which, feature_names=feature_names
            )
        display = cls.from_explanation(explanation, sample=0, score=score, max_terms=max_terms, kind=kind, ax=ax)
        display.sample = int(sample)
        display.ax_.set_title(display._title())
        return display

    def _title(self):
        return f"sample {self.sample}: {self.score_name} = {self.score_value:.4g}\n({self.base_label} {self.base_value:.4g})"

    def plot(self, ax=None, *, kind="waterfall"):
        """Draw the chart.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            New figure when None.
        kind : {"waterfall", "bar"}, default="waterfall"
            ``"waterfall"``: each bar starts where the previous (below it)
            ended, from the base value at the bottom to the score at the top;
            ``"bar"``: the terms from zero.

        Returns
        -------
        self
        """
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}.")
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(7, 1.5 + 0.4 * self.values.size), layout="constrained")
        self.figure_, self.ax_ = ax.figure, ax
        values = self.values
        positions = np.arange(values.size)[::-1]  # the first (largest) term on top
        colors = np.where(values >= 0, "tab:red", "tab:blue")
        if kind == "waterfall":
            # cumulative from the bottom bar, which starts at the base value
            ends = self.base_value + np.cumsum(values[::-1])[::-1]
            self.bars_ = self.ax_.barh(positions, values, left=ends - values, color=colors)
            self.ax_.use_sticky_edges = False  # a bar's base is not a data limit here: keep a margin
            self.ax_.axvline(self.base_value, color="grey", linestyle=":", linewidth=1, label=self.base_label)
            self.ax_.axvline(self.score_value, color="k", linestyle="--", linewidth=1, label=self.score_name)
            self.ax_.legend(loc="best", fontsize=8)
        else:
            self.bars_ = self.ax_.barh(positions, values, color=colors)
            self.ax_.axvline(0.0, color="k", linewidth=0.8)
        self.ax_.bar_label(self.bars_, labels=[f"{v:+.3g}" for v in values], padding=2, fontsize=8)
        self.ax_.set_yticks(positions, labels=self.labels)
        self.ax_.set_xlabel(self.score_name if kind == "waterfall" else f"contribution to {self.score_name}")
        self.ax_.set_title(self._title())
        self.ax_.margins(x=0.15)
        return self
