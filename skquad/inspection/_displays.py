"""Displays in scikit-learn's style: ``from_estimator``, ``plot(ax=...)``, ``figure_``/``ax_``.

* :class:`InteractionDisplay`: the interaction table as a heat map (pairs off
  the diagonal, squares on it) or a bar chart of the top terms.
* :class:`QuadricSliceDisplay`: a neuron's score on a 2-D slice through two
  chosen features (the others fixed), with its zero level set, which is the
  neuron's decision boundary restricted to the slice (a conic).
"""

import numpy as np

from ._interactions import interaction_records
from ._neurons import quadratic_neurons
from ._pipeline import input_feature_names, transform_to_estimator_input
from ._quadric import analyze_quadric

__all__ = ["InteractionDisplay", "QuadricSliceDisplay"]

# The 2-D names of the quadric types (a slice through two features is a conic).
_CONIC_NAMES = {
    "ellipsoid": "ellipse",
    "hyperboloid of two sheets": "hyperbola",
    "elliptic paraboloid": "parabola",
    "pair of hyperplanes": "pair of lines",
    "double hyperplane": "double line",
    "hyperplane": "line",
    "elliptic cylinder": "pair of parallel lines",
    "empty": "empty (the score never reaches the level)",
}


def _axes(ax):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots()
    return ax.figure, ax


class InteractionDisplay:
    """Heat map or top-k bar chart of a quadratic model's terms.

    Create it with :meth:`from_estimator`; :meth:`plot` draws it.

    Parameters
    ----------
    records : dict of ndarray
        The columns of :func:`interaction_table` (as numpy arrays).
    feature_names : ndarray of str
        The estimator's input features (rows and columns of the heat map).

    Attributes
    ----------
    matrix_ : ndarray of shape (n_features, n_features)
        What the heat map shows: the importance of ``x_j x_k`` off the
        diagonal and of ``x_j^2`` on it, signed by the coefficient for one
        neuron, summed (unsigned) over several neurons.
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes
    image_ : AxesImage (heat map) or None
    bars_ : BarContainer (bar chart) or None

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import QuadraticLogisticRegression
    >>> from skquad.inspection import InteractionDisplay
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((300, 4))
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> clf = QuadraticLogisticRegression(C=10).fit(X, y)
    >>> display = InteractionDisplay.from_estimator(clf, X, kind="bar", top_k=3)
    >>> display.bars_ is not None
    True
    """

    def __init__(self, records, feature_names):
        self.records = records
        self.feature_names = np.asarray(feature_names, dtype=object)

    @property
    def matrix_(self):
        names = list(self.feature_names)
        index = {name: i for i, name in enumerate(names)}
        records = self.records
        single = len(set(records["neuron"])) == 1
        matrix = np.zeros((len(names), len(names)))
        for term, first, second, coefficient, importance in zip(
            records["term"], records["feature_1"], records["feature_2"], records["coefficient"], records["importance"]
        ):
            if term == "linear":
                continue
            value = importance * (np.sign(coefficient) if single else 1.0)
            j, k = index[first], index[second]
            matrix[j, k] += value
            if j != k:
                matrix[k, j] += value
        return matrix

    @classmethod
    def from_estimator(
        cls, estimator, X=None, *, kind="heatmap", neuron=None, which=None, feature_names=None, top_k=10, ax=None
    ):
        """Compute the interaction table and plot it.

        Parameters
        ----------
        estimator : fitted skquad estimator or Pipeline ending in one
        X : array-like, default=None
            Data for the importances (see :func:`interaction_table`).
        kind : {"heatmap", "bar"}, default="heatmap"
        neuron, which, feature_names
            As in :func:`interaction_table`.
        top_k : int, default=10
            Bars shown by ``kind="bar"`` (pairs and squares, most important first).
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : InteractionDisplay
        """
        records = interaction_records(estimator, X, neuron=neuron, which=which, feature_names=feature_names)
        names = input_feature_names(estimator, feature_names)
        return cls(records, names).plot(ax=ax, kind=kind, top_k=top_k)

    def plot(self, ax=None, *, kind="heatmap", top_k=10, cmap=None):
        """Draw the heat map or bar chart.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            New figure when None.
        kind : {"heatmap", "bar"}, default="heatmap"
        top_k : int, default=10
        cmap : str, default=None
            ``"RdBu_r"`` for one neuron (signed), ``"Reds"`` for several.

        Returns
        -------
        self
        """
        if kind not in ("heatmap", "bar"):
            raise ValueError(f"kind must be 'heatmap' or 'bar', got {kind!r}.")
        self.figure_, self.ax_ = _axes(ax)
        self.image_ = self.bars_ = None
        single = len(set(self.records["neuron"])) == 1
        if kind == "heatmap":
            matrix = self.matrix_
            limit = float(np.max(np.abs(matrix))) or 1.0
            if single:
                self.image_ = self.ax_.imshow(matrix, cmap=cmap or "RdBu_r", vmin=-limit, vmax=limit)
            else:
                self.image_ = self.ax_.imshow(matrix, cmap=cmap or "Reds", vmin=0, vmax=limit)
            ticks = np.arange(len(self.feature_names))
            self.ax_.set_xticks(ticks, labels=self.feature_names, rotation=90)
            self.ax_.set_yticks(ticks, labels=self.feature_names)
            label = "importance × sign of the coefficient" if single else "importance, summed over neurons"
            self.figure_.colorbar(self.image_, ax=self.ax_, label=label)
            self.ax_.set_title("Pairwise terms x_j x_k; squares on the diagonal")
            return self
        records = self.records
        keep = records["term"] != "linear"
        labels = np.array(
            [f"{a} × {b}" if t == "interaction" else f"{a}²" for t, a, b in zip(records["term"], records["feature_1"], records["feature_2"])],
            dtype=object,
        )
        importance, coefficient = records["importance"][keep], records["coefficient"][keep]
        labels = labels[keep]
        if not single:
            totals = {}
            for label, value in zip(labels, importance):
                totals[label] = totals.get(label, 0.0) + value
            labels = np.array(list(totals), dtype=object)
            importance = np.array(list(totals.values()))
            coefficient = np.ones_like(importance)
        order = np.argsort(-importance, kind="stable")[:top_k]
        colors = np.where(coefficient[order] >= 0, "tab:red", "tab:blue")
        positions = np.arange(order.size)[::-1]
        self.bars_ = self.ax_.barh(positions, importance[order], color=colors)
        self.ax_.set_yticks(positions, labels=labels[order])
        self.ax_.set_xlabel("importance (mean |term - mean| on X)")
        title = f"Top {order.size} quadratic terms"
        self.ax_.set_title(title + (" (red: positive, blue: negative coefficient)" if single else ""))
        return self


class QuadricSliceDisplay:
    """A neuron's score on a 2-D slice through two features, with its zero level.

    The slice of the quadric ``x^T Q x + w^T x + b = level`` at fixed values of
    the other features is a conic in the two chosen features; its type is
    in ``slice_analysis_``.

    Attributes
    ----------
    xx0_, xx1_ : ndarray of shape (grid_resolution, grid_resolution)
        The grid, in the estimator's input units.
    response_ : ndarray of shape (grid_resolution, grid_resolution)
        The neuron's score on the grid.
    slice_analysis_ : QuadricAnalysis
        The conic of the slice.
    figure_, ax_ : matplotlib Figure and Axes
    surface_ : QuadContourSet (filled contours of the score)
    boundary_ : QuadContourSet (the ``level`` line)

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from skquad import QuadraticLogisticRegression
    >>> from skquad.inspection import QuadricSliceDisplay
    >>> X, y = make_circles(n_samples=200, factor=0.5, noise=0.05, random_state=0)
    >>> clf = QuadraticLogisticRegression(C=10).fit(X, y)
    >>> display = QuadricSliceDisplay.from_estimator(clf, X, features=(0, 1))
    >>> display.slice_analysis_.surface_type
    'ellipsoid'
    """

    def __init__(self, xx0, xx1, response, slice_analysis, feature_names, *, level=0.0, neuron_name="", X=None, y=None):
        self.xx0_, self.xx1_, self.response_ = xx0, xx1, response
        self.slice_analysis_ = slice_analysis
        self.feature_names = feature_names
        self.level = level
        self.neuron_name = neuron_name
        self.X = X
        self.y = y

    @classmethod
    def from_estimator(
        cls, estimator, X=None, y=None, *, features=(0, 1), neuron=0, layer=None, which=None, fixed=None,
        level=0.0, grid_resolution=200, feature_names=None, ax=None,
    ):
        """Slice a neuron of a fitted estimator and plot it.

        Parameters
        ----------
        estimator : fitted skquad estimator or Pipeline ending in one
        X : array-like, default=None
            Data (Pipeline input units): sets the plotted range, the default
            ``fixed`` values (the mean of the transformed data) and is drawn
            as points.
        y : array-like, default=None
            Labels to colour the points.
        features : pair of int or str
            The two features of the slice (indices or names of the
            estimator's input features).
        neuron : int or str, default=0
            Index into :func:`quadratic_neurons` (or a neuron's name).
        layer, which
            As in :func:`quadratic_neurons`.
        fixed : array-like of shape (n_features,) or dict, default=None
            Values of the other features (estimator units): an array, or a
            ``{name_or_index: value}`` dict over the default. Default: the
            mean of the transformed ``X``, or 0.
        level : float, default=0.0
        grid_resolution : int, default=200
        feature_names : array-like of str, default=None
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : QuadricSliceDisplay
        """
        neurons = quadratic_neurons(estimator, layer=layer, which=which, feature_names=feature_names)
        if isinstance(neuron, str):
            matches = [n for n in neurons if n.name == neuron]
            if not matches:
                raise ValueError(f"neuron={neuron!r} is not one of {[n.name for n in neurons]}.")
            chosen = matches[0]
        else:
            if not 0 <= int(neuron) < len(neurons):
                raise ValueError(f"neuron={neuron} is out of range: there are {len(neurons)} quadratic neurons.")
            chosen = neurons[int(neuron)]
        names = list(chosen.feature_names)
        d = len(names)
        if d < 2:
            raise ValueError(
                f"QuadricSliceDisplay draws the neuron on a plane of two features, but "
                f"neuron {chosen.name!r} has {d} input feature{'s' if d != 1 else ''} "
                f"({names}); plot its score against that feature instead "
                "(e.g. sklearn.inspection.PartialDependenceDisplay)."
            )
        pair = [names.index(f) if isinstance(f, str) else int(f) for f in features]
        if len(pair) != 2 or pair[0] == pair[1] or not all(0 <= i < d for i in pair):
            raise ValueError(f"features must name two different features of the neuron's input, got {features!r}.")
        Xt = None
        if X is not None:
            if not chosen.on_input_features:
                raise ValueError("X can only be drawn for neurons on the input features.")
            Xt = transform_to_estimator_input(estimator, X)
        base = Xt.mean(axis=0) if Xt is not None else np.zeros(d)
        if isinstance(fixed, dict):
            for key, value in fixed.items():
                base[names.index(key) if isinstance(key, str) else int(key)] = value
        elif fixed is not None:
            base = np.asarray(fixed, dtype=np.float64).copy()
            if base.shape != (d,):
                raise ValueError(f"fixed must have {d} values, got shape {base.shape}.")
        i, j = pair
        if Xt is not None:
            low, high = Xt[:, pair].min(axis=0), Xt[:, pair].max(axis=0)
            margin = 0.05 * np.maximum(high - low, 1e-12)
            low, high = low - margin, high + margin
        else:
            low, high = base[pair] - 3.0, base[pair] + 3.0
        xx0, xx1 = np.meshgrid(np.linspace(low[0], high[0], grid_resolution), np.linspace(low[1], high[1], grid_resolution))
        grid = np.tile(base, (xx0.size, 1))
        grid[:, i], grid[:, j] = xx0.ravel(), xx1.ravel()
        response = chosen.value(grid).reshape(xx0.shape)
        # the conic of the slice: f(base + s_i e_i + s_j e_j) in (t_i, t_j) = (x_i, x_j)
        Q, w = chosen.Q, chosen.w
        rest = base.copy()
        rest[pair] = 0.0
        Q2 = Q[np.ix_(pair, pair)]
        w2 = w[pair] + 2.0 * Q[pair] @ rest
        b2 = chosen.b + rest @ Q @ rest + w @ rest
        analysis = analyze_quadric(Q2, w2, b2, level=level, feature_names=[names[i], names[j]], name=f"{chosen.name} (slice)")
        display = cls(
            xx0, xx1, response, analysis, [names[i], names[j]], level=level, neuron_name=chosen.name,
            X=None if Xt is None else Xt[:, pair], y=y,
        )
        return display.plot(ax=ax)

    def plot(self, ax=None, *, cmap="RdBu_r", n_levels=21):
        """Draw the filled score, the level line and the data.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        cmap : str, default="RdBu_r"
        n_levels : int, default=21

        Returns
        -------
        self
        """
        import matplotlib

        self.figure_, self.ax_ = _axes(ax)
        limit = float(np.max(np.abs(self.response_ - self.level))) or 1.0
        levels = np.linspace(self.level - limit, self.level + limit, n_levels)
        self.surface_ = self.ax_.contourf(self.xx0_, self.xx1_, self.response_, levels=levels, cmap=cmap, alpha=0.8)
        self.boundary_ = None
        if self.response_.min() < self.level < self.response_.max():
            self.boundary_ = self.ax_.contour(self.xx0_, self.xx1_, self.response_, levels=[self.level], colors="k", linewidths=2)
        if self.X is not None:
            style = {"s": 10, "edgecolors": "none", "alpha": 0.6}
            if self.y is None:
                self.ax_.scatter(self.X[:, 0], self.X[:, 1], c="k", **style)
            else:
                classes, codes = np.unique(np.asarray(self.y), return_inverse=True)
                colors = matplotlib.colormaps["coolwarm"](np.linspace(0, 1, max(len(classes), 2)))
                for code, label in enumerate(classes):
                    mask = codes == code
                    self.ax_.scatter(self.X[mask, 0], self.X[mask, 1], color=colors[code], label=str(label), **style)
        center = self.slice_analysis_.center
        if center is not None and self.xx0_.min() <= center[0] <= self.xx0_.max() and self.xx1_.min() <= center[1] <= self.xx1_.max():
            self.ax_.plot(*center, marker="x", color="k", markersize=9, linestyle="none", label="center of the slice")
        if self.ax_.get_legend_handles_labels()[0]:
            self.ax_.legend(loc="best", fontsize=8)
        self.ax_.set_xlabel(str(self.feature_names[0]))
        self.ax_.set_ylabel(str(self.feature_names[1]))
        conic = _CONIC_NAMES.get(self.slice_analysis_.surface_type, self.slice_analysis_.surface_type)
        self.ax_.set_title(f"{self.neuron_name}\nslice: {conic}", fontsize=10)
        self.figure_.colorbar(self.surface_, ax=self.ax_, label="score")
        return self
