"""
==================================================================
Reading a quadratic model: feature interactions on diabetes data
==================================================================

A :class:`~skquad.QuadraticLogisticRegression` has one coefficient for every
pair of features, so it *is* a model of which features act together. This
example fits one on the Pima Indians diabetes data (UCI, 768 patients, 8 named
measurements), reads its pairwise interactions with
:func:`skquad.inspection.interaction_table` and the shape of its decision
surface with :func:`skquad.inspection.quadric_analysis`, and compares the
interactions with the pairs that InterpretML's Explainable Boosting Machine
(EBM) finds on the same data. Both measure a term's importance the same way,
as the mean absolute (centered) contribution of the term to the log-odds, so
the two rankings, and their sizes, compare directly. Last, the models' sizes
with :func:`skquad.inspection.model_size`.

EBM comes from the ``interpret-core`` package (in skquad's ``docs`` extra);
it is not needed by skquad itself. Without the UCI data folder (``SKQUAD_DATA``)
and without network access, the example runs on the first eight (``mean ...``)
features of scikit-learn's bundled breast cancer data instead, which has the
same number of terms.
"""

# %%
# Data and models
# ---------------
# The eight measurements are standardized in a Pipeline, so the quadratic
# model's coefficients are per standard deviation of each feature. With 36
# quadratic terms on 576 training patients the quadratic model needs real
# regularization: ``C`` is chosen by 5-fold cross-validation on the log-loss.
# A small MLP (strongly regularized, not tuned) and EBM are fitted for
# reference. (Zeros in
# ``plas``, ``pres``, ``skin``, ``insu`` and ``mass`` are missing values in the
# original data; they are kept as they are, as in the UCI benchmark.)

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from interpret.glassbox import ExplainableBoostingClassifier
from scipy.stats import spearmanr
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skquad import QuadraticLogisticRegression
from skquad.datasets import load_uci
from skquad.inspection import (
    InteractionDisplay,
    QuadricSliceDisplay,
    interaction_table,
    model_size,
    quadric_analysis,
)

# small sizes for the test suite
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

try:
    diabetes = load_uci("diabetes", as_frame=True)
    X, y = diabetes.data, diabetes.target
    DIABETES = True  # the findings stated below are about this data
except (FileNotFoundError, OSError):
    # Offline and without SKQUAD_DATA: eight named measurements that ship with
    # scikit-learn.
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :8]
    DIABETES = False
X_train, X_test, y_train, y_test = train_test_split(
    X, y, stratify=y, test_size=0.25, random_state=0
)
assert X.shape[1] == 8 and (not DIABETES or len(X_train) == 576)

search = GridSearchCV(
    make_pipeline(StandardScaler(), QuadraticLogisticRegression()),
    {
        "quadraticlogisticregression__C": [0.03, 0.3]
        if QUICK
        else [0.003, 0.01, 0.03, 0.1, 0.3, 1.0]
    },
    scoring="neg_log_loss",
    cv=3 if QUICK else 5,
).fit(X_train, y_train)
qlr = search.best_estimator_
print(f"C chosen by cross-validation: {qlr[-1].C}")
ebm = ExplainableBoostingClassifier(
    outer_bags=1 if QUICK else 8,
    max_rounds=500 if QUICK else 50000,
    n_jobs=1,
    random_state=0,
).fit(X_train, y_train)
linear = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
mlp = make_pipeline(
    StandardScaler(),
    MLPClassifier((16,), solver="lbfgs", alpha=3.0, max_iter=2000, random_state=0),
).fit(X_train, y_train)
for name, model in [
    ("logistic regression", linear),
    ("quadratic LR", qlr),
    ("MLP (16)", mlp),
    ("EBM", ebm),
]:
    print(f"{name:>20}: test accuracy {model.score(X_test, y_test):.3f}")

# %%
# Which pairs interact?
# ---------------------
# The table ranks every term of the model: the 28 pairs ``x_j x_k``, the 8
# squares and the 8 linear terms, with the coefficient and the importance on
# the training data.

table = interaction_table(qlr, X_train)
pairs = table[table["term"] == "interaction"]
terms_per_kind = table["term"].value_counts()
assert terms_per_kind.to_dict() == {"interaction": 28, "self": 8, "linear": 8}
# One neuron here (the score), so its column is dropped from the printout.
print(pairs.head(8).drop(columns="neuron").to_string(index=False))
print()
others = table[table["term"] != "interaction"].head(6)
print(others.drop(columns="neuron").to_string(index=False))

fig, (ax_heat, ax_bars) = plt.subplots(1, 2, figsize=(12, 4.8))
InteractionDisplay.from_estimator(qlr, X_train, ax=ax_heat)
InteractionDisplay.from_estimator(qlr, X_train, kind="bar", top_k=10, ax=ax_bars)
ax_heat.set_title("Quadratic LR: pair and square importances")
ax_bars.set_title("Top 10 quadratic terms (red +, blue -)")
fig.tight_layout()
fig.savefig(OUTPUT_DIR / "feature_interactions_qlr.png", dpi=90)

# %%
# The same question to EBM
# ------------------------
# EBM fits one shape function per feature and per selected pair (it picks
# the pairs by a boosting-based test, FAST); its term importance is the mean
# absolute term score in log-odds, the quantity the table's ``importance``
# measures for the quadratic model. Pairs that EBM did not select count as 0.

ebm_importance = dict(zip(ebm.term_names_, ebm.term_importances()))
qlr_pairs = {
    f"{a} & {b}": v
    for a, b, v in zip(pairs["feature_1"], pairs["feature_2"], pairs["importance"])
}
ebm_pairs = {}
for name in qlr_pairs:
    a, b = name.split(" & ")
    ebm_pairs[name] = ebm_importance.get(
        f"{a} & {b}", ebm_importance.get(f"{b} & {a}", 0.0)
    )
names = list(qlr_pairs)
q = np.array([qlr_pairs[n] for n in names])
e = np.array([ebm_pairs[n] for n in names])
top_qlr = [names[i] for i in np.argsort(-q)[:5]]
top_ebm = [names[i] for i in np.argsort(-e)[:5]]
rho = spearmanr(q, e).statistic
print("top 5 pairs")
print("  quadratic LR:", ", ".join(top_qlr))
print("  EBM:         ", ", ".join(top_ebm))
print(f"in both top 5: {sorted(set(top_qlr) & set(top_ebm))}")
print(f"Spearman rank correlation over the 28 pairs: {rho:.2f}")
main = {n: v for n, v in ebm_importance.items() if "&" not in n}
print(
    f"largest main effect, EBM: {max(main, key=main.get)} {max(main.values()):.3f}"
)
print(f"largest pair: EBM {e.max():.3f}, quadratic LR {q.max():.3f} (log-odds)")
qlr_main = table.loc[table["term"] != "interaction", "importance"].max()
print(f"largest main effect, quadratic LR: {qlr_main:.3f}")

fig, ax = plt.subplots(figsize=(6.4, 5.2))
ax.scatter(e, q, color="tab:purple")
for i in set(np.argsort(-q)[:5]) | set(np.argsort(-e)[:5]):
    ax.annotate(
        names[i],
        (e[i], q[i]),
        fontsize=8,
        xytext=(4, 2),
        textcoords="offset points",
    )
limit = 1.1 * max(q.max(), e.max())
ax.plot(
    [0, limit], [0, limit], color="grey", linestyle=":", label="equal importance"
)
ax.set_xlim(0, limit)
ax.set_ylim(0, limit)
ax.set_xlabel("EBM pair importance (mean |term| in log-odds)")
ax.set_ylabel("quadratic LR pair importance (mean |term - mean|)")
ax.set_title(f"The 28 feature pairs (Spearman {rho:.2f})")
ax.legend(loc="lower right")
fig.tight_layout()
fig.savefig(OUTPUT_DIR / "feature_interactions_vs_ebm.png", dpi=90)

# %%
# How stable is each ranking?
# ---------------------------
# Refitting the quadratic model (with the chosen ``C``) on bootstrap resamples
# of the training set shows which of its pairs are signal: a pair that is
# in the top 5 of most resamples is a finding, one that comes and goes is noise.

rng = np.random.default_rng(0)
n_boot = 5 if QUICK else 50
counts = dict.fromkeys(names, 0)
for _ in range(n_boot):
    index = rng.integers(0, len(X_train), len(X_train))
    refit = make_pipeline(
        StandardScaler(), QuadraticLogisticRegression(C=qlr[-1].C)
    )
    refit.fit(X_train.iloc[index], y_train.iloc[index])
    boot = interaction_table(refit, X_train)
    boot = boot[boot["term"] == "interaction"].head(5)
    for a, b in zip(boot["feature_1"], boot["feature_2"]):
        counts[f"{a} & {b}"] += 1
stable = sorted(counts.items(), key=lambda item: -item[1])[:6]
print("share of bootstrap fits with the pair in their top 5:")
for name, count in stable:
    share, importance = count / n_boot, ebm_pairs[name]
    print(f"  {name:>12}: {share:.0%}   (EBM importance {importance:.3f})")

# %%
# What the comparison says: on this data the main effects dominate in both
# models (``plas``, the glucose test, moves the log-odds far more than any
# pair), and the two models do not agree on which weak pairs come next (their
# top-5 lists share at most one pair). The quadratic model's strongest pair
# involves ``skin`` or ``insu``, the two
# columns where a value of 0 means "not measured" (shares printed below): a
# product of features bends the score where those zeros sit,
# which a binned model like EBM handles differently. The slice below shows
# them as the column of points at the left edge. Interactions read from any
# model are only as good as the features: impute such zeros first
# (``SimpleImputer(missing_values=0)``) before reading pairs as medicine.

zero_coded = [c for c in ["skin", "insu"] if c in X_train]  # the diabetes columns
print(
    "share of zeros (missing):",
    {c: f"{(X_train[c] == 0).mean():.0%}" for c in zero_coded},
)
# The main effects dominate in both models: each model's largest main effect
# is above its largest pair.
assert max(main.values()) > e.max() and qlr_main > q.max()
if DIABETES:
    # plas leads EBM's main effects; the quadratic model's strongest pair
    # involves a zero-coded column; the models' top-5 pairs share at most one.
    assert max(main, key=main.get) == "plas"
    strongest = {pairs.iloc[0]["feature_1"], pairs.iloc[0]["feature_2"]}
    assert strongest & set(zero_coded)
    assert len(set(top_qlr) & set(top_ebm)) <= 1

# %%
# The shape of the decision surface
# ---------------------------------
# The score ``x^T Q x + w^T x + b = 0`` is a quadric in the 8 standardized
# features; :func:`~skquad.inspection.quadric_analysis` gives its type from
# the signs of ``Q``'s eigenvalues, its center and its principal axes.
# ``units="raw"`` undoes the StandardScaler: the same surface in the original
# units (same type, different axes).

(surface,) = quadric_analysis(qlr)
print(surface.summary(n_axes=3, n_center=4))
(raw,) = quadric_analysis(qlr, units="raw")
largest = np.abs(raw.eigenvalues).max()
print(f"in raw units: {raw.surface_type}")
print(f"the largest |eigenvalue| is now {largest:.3g} per unit^2")
assert raw.surface_type == surface.surface_type  # same type in either units

# %%
# A slice through the strongest pair, with the other six features at their
# training means: the black line is the decision boundary of the slice (a
# conic, here a hyperbola whose center is the cross), the background the
# log-odds, the points the training patients (coloured by class). The center of
# the full 8-dimensional quadric lies far outside the data (many standard
# deviations away): inside the data range the surface is a gently curved sheet,
# which is what the slice shows.

top = pairs.iloc[0]
# The slice's conic is a hyperbola where Q restricted to the pair is indefinite.
pair = [list(X_train.columns).index(top[f"feature_{k}"]) for k in (1, 2)]
slice_is_hyperbola = np.linalg.det(surface.Q[np.ix_(pair, pair)]) < 0
center_distance = np.abs(surface.center).max()
print(f"slice: {'a hyperbola' if slice_is_hyperbola else 'an ellipse or parabola'}; "
      f"the quadric's center is {center_distance:.1f} standard deviations out")
if DIABETES:
    assert slice_is_hyperbola and center_distance > 3
fig, ax = plt.subplots(figsize=(6.4, 5.2))
QuadricSliceDisplay.from_estimator(
    qlr, X_train, y_train, features=(top["feature_1"], top["feature_2"]), ax=ax
)
ax.set_xlabel(f"{top['feature_1']} (standardized)")
ax.set_ylabel(f"{top['feature_2']} (standardized)")
fig.tight_layout()
fig.savefig(OUTPUT_DIR / "feature_interactions_slice.png", dpi=90)

# %%
# Sizes
# -----
# Trainable parameters and floating-point operations per predicted patient
# (the StandardScaler's 16 operations included): the quadratic model costs
# the same as ``PolynomialFeatures(2)`` followed by logistic regression.

for name, model in [
    ("logistic regression", linear),
    ("quadratic LR", qlr),
    ("MLP (16)", mlp),
]:
    size = model_size(model)
    n_parameters, n_flops = size.n_parameters, size.n_flops
    print(
        f"{name:>20}: {n_parameters:4d} parameters, {n_flops:4d} FLOPs per sample"
    )
# The same size as the explicit pipeline's: PolynomialFeatures(2) then
# LogisticRegression on the 44 degree-2 features.
explicit = make_pipeline(
    StandardScaler(), PolynomialFeatures(2, include_bias=False), LogisticRegression()
).fit(X_train, y_train)
sizes = [model_size(model) for model in (explicit, qlr)]
assert len({(size.n_parameters, size.n_flops) for size in sizes}) == 1
