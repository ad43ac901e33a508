"""
=====================================================================
Selecting few interactions: sparse Q on breast cancer data, and EBM
=====================================================================

A quadratic logistic regression on ``d`` features has ``d(d-1)/2`` pairwise
interactions: 435 for the 30 measurements of scikit-learn's breast cancer
data. ``penalty="l1"`` puts LogisticRegression's L1 penalty on the
coefficients of those pairs (and of the squares and the linear terms), so that
most of them are exactly zero; :class:`skquad.QuadraticLogisticRegressionCV`
chooses ``C`` along the path. The model is the *global optimum* of its convex
problem (certified by a duality gap), with exact local explanations. Where
InterpretML is installed, its Explainable Boosting Machine, an additive model
with boosted pairs (three times as many pairs as features by default), is
fitted side by side.
"""

# %%
# Dense and sparse quadratic models
# ---------------------------------

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticLogisticRegression, QuadraticLogisticRegressionCV

QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y,
                                                    random_state=0)
dense = make_pipeline(StandardScaler(), QuadraticLogisticRegression())
dense.fit(X_train, y_train)
sparse = make_pipeline(
    StandardScaler(),
    QuadraticLogisticRegressionCV(
        Cs=np.logspace(-2, 0, 3 if QUICK else 7), penalty="l1", cv=3, tol=1e-3,
        max_iter=3000,
    ),
).fit(X_train, y_train)
model = sparse[-1]
n_pairs = X.shape[1] * (X.shape[1] - 1) // 2
dense_accuracy = dense.score(X_test, y_test)
sparse_accuracy = sparse.score(X_test, y_test)
print(f"dense QLR:  accuracy {dense_accuracy:.3f} with all {n_pairs} pairs")
print(f"sparse QLR: accuracy {sparse_accuracy:.3f} with {model.n_interactions_} "
      f"pairs (C_={model.C_:.3g})")

# %%
# The selected pairs are the only nonzero cross terms of ``Q_``, and far fewer
# than all of them; the sparse model loses little accuracy for it.

off_diagonal = np.triu(model.Q_[0] != 0, 1)
nonzero_pairs = sorted(map(tuple, np.argwhere(off_diagonal)))
assert nonzero_pairs == sorted(map(tuple, model.interactions_))
assert model.n_interactions_ <= n_pairs // 10
assert sparse.score(X_test, y_test) >= dense.score(X_test, y_test) - 0.03

names = X.columns.to_numpy()
strength = np.abs(model.Q_[0][tuple(model.interactions_.T)])
ranked = sorted(zip(model.interactions_.tolist(), strength), key=lambda t: -t[1])[:10]
fig, ax = plt.subplots(figsize=(7, 3))
ax.barh([f"{names[a]} x {names[b]}" for (a, b), _ in ranked][::-1],
        [value for _, value in ranked][::-1])
ax.set_xlabel("|Q_ab| (standardized features)")
ax.set_title(f"The {model.n_interactions_} pairs of the sparse QLR (of {n_pairs})")
fig.tight_layout()
fig.savefig(OUTPUT_DIR / "sparse_interactions_pairs.png", dpi=90)

# %%
# Side by side with an Explainable Boosting Machine
# -------------------------------------------------
# EBM (InterpretML) fits one shape function per feature and per selected pair
# by boosting; skipped when InterpretML is not installed, and in the quick run.

try:
    from interpret.glassbox import ExplainableBoostingClassifier
except ImportError:
    ExplainableBoostingClassifier = None

if ExplainableBoostingClassifier is not None and not QUICK:
    ebm = ExplainableBoostingClassifier(random_state=0, n_jobs=1)
    ebm.fit(X_train, y_train)
    ebm_pairs = [term for term in ebm.term_features_ if len(term) == 2]
    ebm_accuracy = ebm.score(X_test, y_test)
    print(f"EBM:        accuracy {ebm_accuracy:.3f} with {len(ebm_pairs)} pairs")
    # the sparse quadratic model keeps within 5 pp of EBM with far fewer pairs
    assert abs(ebm.score(X_test, y_test) - sparse.score(X_test, y_test)) <= 0.05
    assert model.n_interactions_ < len(ebm_pairs)
