"""Ranked table of a quadratic model's terms: pairs, squares and linear terms.

A quadratic neuron's score is a sum of terms::

    sum_{j<k} 2 Q_jk x_j x_k   +   sum_j Q_jj x_j^2   +   sum_j w_j x_j   +   b

Each term has a coefficient (``2 Q_jk``, ``Q_jj``, ``w_j``: what multiplies the
product of features) and, on given data ``X``, an *importance*: the mean
absolute deviation of the term's contribution from its mean over ``X``,
``mean_i |t(x_i) - mean(t)|``, i.e. how much the term moves the score from
sample to sample (the intercept absorbs its mean). This is the convention of
InterpretML's EBM (mean absolute centered term score), so the two rankings
compare. Contributions are scores, so the importance does not depend on the
units of the features; the coefficients do.
"""

import numpy as np

from ._neurons import quadratic_neurons
from ._pipeline import transform_to_estimator_input

__all__ = ["interaction_table"]

_TERMS = ("interaction", "self", "linear")
# Elements of one block of pair products when importances are computed.
_BLOCK_ELEMENTS = 2_000_000


def _mean_abs_centered_products(X, rows, cols):
    """``mean_i |x_ij x_ik - mean(x_j x_k)|`` for each pair, in blocks of rows."""
    n = X.shape[0]
    means = (X.T @ X / n)[rows, cols]
    total = np.zeros(rows.size)
    step = max(1, _BLOCK_ELEMENTS // max(rows.size, 1))
    for start in range(0, n, step):
        block = X[start : start + step]
        total += np.abs(block[:, rows] * block[:, cols] - means).sum(axis=0)
    return total / n


def _records(neurons, X):
    """Columns of the table as a dict of numpy arrays."""
    columns = {key: [] for key in ("neuron", "term", "feature_1", "feature_2", "coefficient", "importance")}
    for neuron in neurons:
        Q, w, names = neuron.Q, neuron.w, neuron.feature_names
        d = w.shape[0]
        rows, cols = np.triu_indices(d, k=1)
        diag = np.arange(d)
        coefficients = {
            "interaction": (rows, cols, 2.0 * Q[rows, cols]),
            "self": (diag, diag, Q[diag, diag]),
            "linear": (diag, None, w),
        }
        for term, (first, second, coefficient) in coefficients.items():
            if X is None:
                importance = np.abs(coefficient)
            elif second is None:
                importance = np.abs(coefficient) * np.mean(np.abs(X - X.mean(axis=0)), axis=0)
            else:
                importance = np.abs(coefficient) * _mean_abs_centered_products(X, first, second)
            columns["neuron"] += [neuron.name] * first.size
            columns["term"] += [term] * first.size
            columns["feature_1"] += [str(names[i]) for i in first]
            columns["feature_2"] += ["" if second is None else str(names[j]) for j in (second if second is not None else first)]
            columns["coefficient"].append(coefficient)
            columns["importance"].append(importance)
    table = {key: np.asarray(value, dtype=object) for key, value in columns.items() if key not in ("coefficient", "importance")}
    table["coefficient"] = np.concatenate(columns["coefficient"])
    table["importance"] = np.concatenate(columns["importance"])
    # within each neuron: most important first
    neuron_order = {name: i for i, name in enumerate(dict.fromkeys(table["neuron"]))}
    order = np.lexsort((-table["importance"], [neuron_order[n] for n in table["neuron"]]))
    table = {key: value[order] for key, value in table.items()}
    rank = np.zeros(order.size, dtype=np.int64)
    for name in neuron_order:
        for term in _TERMS:
            mask = (table["neuron"] == name) & (table["term"] == term)
            rank[mask] = np.arange(1, mask.sum() + 1)
    table["rank"] = rank
    return table


def interaction_records(estimator, X=None, *, neuron=None, which=None, feature_names=None):
    """The table as a dict of numpy arrays (what :func:`interaction_table` wraps)."""
    neurons = [n for n in quadratic_neurons(estimator, which=which, feature_names=feature_names) if n.on_input_features]
    if not neurons:
        raise ValueError(
            "No quadratic neuron of this estimator acts on its input features (its first "
            "layer is linear). Use skquad.inspection.quadratic_neurons to read the deeper "
            "layers in hidden-unit space, or fit with quadratic_layers='all'."
        )
    if neuron is not None:
        if isinstance(neuron, str):
            chosen = [n for n in neurons if n.name == neuron]
        else:
            chosen = [neurons[i] for i in np.atleast_1d(neuron)] if np.all(np.atleast_1d(neuron) < len(neurons)) else []
        if not chosen:
            raise ValueError(
                f"neuron={neuron!r} is not one of the {len(neurons)} neurons on the input "
                f"features: {[n.name for n in neurons]} (pass a name or an index)."
            )
        neurons = chosen
    if X is not None:
        X = transform_to_estimator_input(estimator, X)
        if X.shape[1] != neurons[0].w.shape[0]:
            raise ValueError(f"X has {X.shape[1]} features after preprocessing; the model expects {neurons[0].w.shape[0]}.")
    return _records(neurons, X)


def interaction_table(estimator, X=None, *, neuron=None, which=None, feature_names=None):
    """Ranked pairwise interactions, squares and linear terms of a quadratic model.

    Parameters
    ----------
    estimator : fitted skquad estimator or Pipeline ending in one
        Its neurons on the input features are read (QLR: each class score;
        networks: the first layer when it is quadratic; quantized networks:
        the whole network's quadratic form of each score).
    X : array-like of shape (n_samples, n_features), default=None
        Data on which importances are measured, in the units the *pipeline*
        takes (it is passed through the steps before the estimator). Without
        it the importance is ``|coefficient|``, which ranks terms fairly only
        when the estimator's inputs are standardized.
    neuron : int, str or list of int, default=None
        Which neurons (index among the neurons on the input features, or
        name); None: all of them.
    which : {"sampled", "relaxed", "float"}, default=None
        Quantized networks: which network (see :func:`quadratic_neurons`).
    feature_names : array-like of str, default=None
        Names of the estimator's input features; default: its
        ``feature_names_in_``, else the Pipeline's ``get_feature_names_out``.

    Returns
    -------
    table : pandas.DataFrame, or dict of ndarray without pandas
        Columns ``neuron``, ``term`` ("interaction", "self" or "linear"),
        ``feature_1``, ``feature_2`` (empty for linear terms), ``coefficient``
        (of ``x_j x_k``, ``x_j^2`` or ``x_j`` in the score), ``importance``
        (see the module docstring) and ``rank`` (1 = most important term of
        its kind in its neuron), sorted by neuron, then importance.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import QuadraticLogisticRegression
    >>> from skquad.inspection import interaction_table
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((400, 3))
    >>> y = (X[:, 0] * X[:, 2] > 0).astype(int)
    >>> table = interaction_table(QuadraticLogisticRegression(C=10).fit(X, y), X)
    >>> top = table[table["term"] == "interaction"].iloc[0]
    >>> top["feature_1"], top["feature_2"]
    ('x0', 'x2')
    """
    records = interaction_records(estimator, X, neuron=neuron, which=which, feature_names=feature_names)
    try:
        import pandas as pd
    except ImportError:
        return records
    return pd.DataFrame(records).reset_index(drop=True)
