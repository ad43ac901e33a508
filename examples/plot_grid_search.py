"""
=========================================================
Choosing a model with Pipeline and GridSearchCV
=========================================================

skquad estimators are scikit-learn estimators: they go into a
:class:`~sklearn.pipeline.Pipeline` after the preprocessing, and
:class:`~sklearn.model_selection.GridSearchCV` tunes them, and can even choose
*between* them, like any other. This example searches, on the UCI credit
approval data (mixed nominal and numeric features with missing values):

* :class:`~skquad.QuadraticLogisticRegression` over its regularization ``C``,
* :class:`~skquad.RPQNNClassifier` and :class:`~skquad.QNNClassifier` (a
  quadratic output layer) over the L2 penalty ``alpha``,
* plain :class:`~sklearn.linear_model.LogisticRegression` as the baseline,

all behind :func:`skquad.datasets.make_uci_preprocessor` (impute and one-hot
encode nominal columns, impute and standardize numeric ones), which the search
refits on each training fold so no statistic leaks from the validation part.
Without the UCI data folder (``SKQUAD_DATA``), the example falls back to
scikit-learn's breast-cancer dataset.
"""

# %%
# Data
# ----

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import Pipeline

from skquad import QNNClassifier, QuadraticLogisticRegression, RPQNNClassifier
from skquad.datasets import load_uci, make_uci_preprocessor

# small sizes for the test suite
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

try:
    X, y = load_uci("credit-approval", return_X_y=True, as_frame=True)
    dataset = "credit-approval (UCI)"
except (FileNotFoundError, OSError):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    dataset = "breast cancer (scikit-learn)"
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, stratify=y, random_state=0
)
print(f"{dataset}: {X.shape[0]} samples, {X.shape[1]} raw features")

# %%
# One pipeline, four kinds of classifier
# --------------------------------------
# The ``classifier`` step is itself a searched parameter: each dictionary of
# the grid puts one estimator there and lists that estimator's own values.

pipeline = Pipeline(
    [
        ("preprocess", make_uci_preprocessor()),
        ("classifier", QuadraticLogisticRegression()),
    ]
)
# Each network trains to convergence (adam, up to 2000 epochs) and the L2 penalty
# ``alpha`` alone controls how closely it fits the training fold. (With
# ``early_stopping=True`` and its default patience, the validation accuracy on 10 %
# of a fold this small stops improving after a few dozen epochs, and every ``alpha``
# then scores the same: the search would learn nothing about the penalty.)
network = dict(hidden_layer_sizes=(16,), max_iter=2000, random_state=0)
alphas = [1.0] if QUICK else [1e-2, 1e-1, 1.0]
param_grid = [
    {
        "classifier": [LogisticRegression(max_iter=1000)],
        "classifier__C": [0.1, 1.0],
    },
    {
        "classifier": [QuadraticLogisticRegression()],
        "classifier__C": [0.01, 0.1] if QUICK else [0.001, 0.01, 0.1, 1.0],
    },
    {"classifier": [RPQNNClassifier(**network)], "classifier__alpha": alphas},
    {"classifier": [QNNClassifier(**network)], "classifier__alpha": alphas},
]
search = GridSearchCV(
    pipeline,
    param_grid,
    cv=StratifiedKFold(n_splits=3 if QUICK else 5, shuffle=True, random_state=0),
    n_jobs=1,
)
search.fit(X_train, y_train)

# %%
# Results
# -------

results = pd.DataFrame(search.cv_results_)
results["model"] = [
    type(params["classifier"]).__name__ for params in results["params"]
]
results["setting"] = [
    ", ".join(
        f"{key.split('__')[1]}={value}"
        for key, value in params.items()
        if "__" in key
    )
    for params in results["params"]
]
table = results[
    ["model", "setting", "mean_test_score", "std_test_score", "mean_fit_time"]
]
table.columns = ["model", "setting", "CV accuracy", "std", "fit time (s)"]
print(
    table.sort_values("CV accuracy", ascending=False)
    .round(3)
    .to_string(index=False)
)
best_setting = results.loc[search.best_index_, "setting"]
print(f"\nbest: {type(search.best_estimator_[-1]).__name__} ({best_setting})")
print(f"cross-validated accuracy of the best: {search.best_score_:.3f}")
print(f"accuracy on the held-out test part: {search.score(X_test, y_test):.3f}")

# %%
# The picture: cross-validated accuracy of every candidate (mean and standard
# deviation over the folds), grouped by model.

fig, ax = plt.subplots(figsize=(9, 0.35 * len(results) + 1.5))
labels = [
    f"{model} ({setting})"
    for model, setting in zip(results["model"], results["setting"])
]
colors = {
    name: plt.get_cmap("tab10")(i)
    for i, name in enumerate(dict.fromkeys(results["model"]))
}
positions = np.arange(len(results))
ax.barh(
    positions,
    results["mean_test_score"],
    xerr=results["std_test_score"],
    color=[colors[model] for model in results["model"]],
    capsize=3,
)
ax.set_yticks(positions, labels)
ax.invert_yaxis()
low = (results["mean_test_score"] - results["std_test_score"]).min()
ax.set_xlim(max(0.0, low - 0.05), 1.0)
ax.set_xlabel("cross-validated accuracy")
ax.set_title(f"GridSearchCV on {dataset}")
fig.tight_layout()
fig.savefig(OUTPUT_DIR / "grid_search.png", dpi=100)

# %%
# Reading the result
# ------------------
# Because every candidate runs in the same pipeline, the comparison is fair:
# same folds, same preprocessing fitted on each training fold only. Which
# candidate comes first depends on the data, the grid and the folds; the
# question the search answers is whether the pairwise interactions of the
# quadratic model help beyond plain logistic regression. Here the best setting
# of each family is compared with the spread of the scores over the folds:

best_rows = results.groupby("model")["mean_test_score"].idxmax()
best = results.loc[best_rows].set_index("model")
qlr, logreg = best.loc["QuadraticLogisticRegression"], best.loc["LogisticRegression"]
difference = qlr["mean_test_score"] - logreg["mean_test_score"]
spread = max(qlr["std_test_score"], logreg["std_test_score"])
print(
    f"best quadratic LR {qlr['mean_test_score']:.3f} ({qlr['setting']}), "
    f"best LR {logreg['mean_test_score']:.3f} ({logreg['setting']}): "
    f"difference {difference:+.3f}, fold standard deviation up to {spread:.3f}"
)
# The claim of the next paragraph, checked on the run above (it is made about
# credit approval; the breast-cancer fallback is not covered by it).
ON_CREDIT_APPROVAL = dataset.startswith("credit-approval")
if ON_CREDIT_APPROVAL:
    assert abs(difference) <= spread

# %%
# On credit approval the two convex models end within one standard deviation
# of each other over the folds (the assertion above checks it): there the
# pairwise interactions add no accuracy that the folds can tell apart from
# noise, and whichever of the two the search calls "best" is ahead by the
# chance of the split.
# That is a result too, and the search is how you find it out; on other datasets
# (see the benchmark page) the ranking differs. The networks' scores depend on
# ``alpha`` and on their random initialization; the full run (without
# ``SKQUAD_EXAMPLES_QUICK``) searches three values of ``alpha``. To run the same
# search on a cluster, wrap ``search.fit`` in ``joblib.parallel_backend("dask")``
# (see :ref:`scaling_out`).
