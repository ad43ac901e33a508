"""
==============================================================
Explaining single predictions exactly: diabetes progression
==============================================================

A quadratic model's prediction is a sum of terms, one per feature (its linear
and squared parts) and one per pair of features, so each prediction can be
taken apart *exactly*: :func:`skquad.inspection.local_contributions` returns
the terms, and they add up to the prediction. The interventional SHAP values,
which a model-agnostic explainer estimates by evaluating the model on many
coalitions of features, have a closed form for such a model:
:func:`skquad.inspection.shap_values` computes them from the background data's
means and second moments. This example does both on scikit-learn's diabetes
data (442 patients, ten baseline measurements, the disease progression one
year later) and draws one patient's explanation with
:class:`skquad.inspection.LocalExplanationDisplay`.
"""

# %%
# A quadratic regression
# ----------------------
# The ten measurements are standardized in a Pipeline, so the explanations are
# in units of the model's input (standard deviations from the training mean),
# and the feature names come from the DataFrame. ``alpha`` is chosen by
# leave-one-out cross-validation.

import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticRegressionCV
from skquad.inspection import (
    LocalExplanationDisplay,
    local_contributions,
    shap_values,
)

# small sizes for the test suite
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

X, y = load_diabetes(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0
)
# one penalty on every coefficient, as RidgeCV on the degree-2 features
model = make_pipeline(
    StandardScaler(),
    QuadraticRegressionCV(
        alphas=np.logspace(-1, 3, 9 if QUICK else 25), quadratic_ratios=(1.0,)
    ),
)
model.fit(X_train, y_train)
r2 = model.score(X_test, y_test)
print(f"alpha = {model[-1].alpha_:.3g}, R² on the test patients: {r2:.3f}")

# %%
# Exact contributions of main effects and pairs
# ---------------------------------------------
# Each feature's main effect is ``w_a x_a + Q_aa x_a²`` and each pair's
# contribution ``2 Q_ab x_a x_b``; with ``max_pairs=5`` the five pairs of
# largest mean absolute contribution on the test patients are listed and the
# other 40 are added up in ``other_pairs``. Together with the intercept they
# give the prediction, to rounding.

terms = local_contributions(model, X_test, max_pairs=5)
prediction = model.predict(X_test)
rounding = 1e-10 * np.abs(prediction).max()
assert np.allclose(terms.score, prediction, rtol=0, atol=rounding)
print(f"intercept: {terms.intercept:.1f}")
for name, values in zip(terms.pair_names, terms.pair_effects.T):
    print(f"{name:>10}: mean |contribution| {np.abs(values).mean():5.2f}")
other = np.abs(terms.other_pairs).mean()
print(f"the other pairs together: mean |contribution| {other:5.2f}")

# %%
# One patient's prediction as a waterfall: from the intercept (the prediction
# for the average training patient, where every standardized feature is 0), each
# bar adds one term, largest first, and the last bar ends at the prediction.

patient = int(np.argmax(prediction))  # the largest predicted progression
fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
display = LocalExplanationDisplay.from_estimator(
    model, X_test, sample=patient, max_terms=8, ax=ax
)
assert np.isclose(display.score_value, prediction[patient])
fig.savefig(OUTPUT_DIR / "local_explanations_waterfall.png", dpi=90)

# %%
# Exact SHAP values against the training patients
# -----------------------------------------------
# The interventional SHAP value of a feature shares each pair between its two
# features equally and measures every term from its mean over a background
# set, here the training patients. They add up to the prediction minus the
# mean prediction on the background.

explanation = shap_values(model, X_test, background=X_train)
assert np.allclose(explanation.score, prediction, rtol=0, atol=rounding)
assert np.isclose(explanation.base_values, model.predict(X_train).mean())
importance = np.abs(explanation.values).mean(axis=0)
order = np.argsort(importance)[::-1]
print("mean |SHAP value| per feature:")
for index in order:
    print(f"{explanation.feature_names[index]:>4}: {importance[index]:5.2f}")
# body mass index and s5 (a log of serum triglycerides) move the predictions most
assert set(explanation.feature_names[order[:2]]) == {"bmi", "s5"}

# %%
# The contributions above are the SHAP values against a single background
# patient, the average one (zero after standardization), with each pair split
# in halves between its two features:

average = X_train.mean().to_frame().T
against_average = shap_values(model, X_test, background=average)
everything = local_contributions(model, X_test)
halves = everything.main_effects.copy()
for (a, b), values in zip(everything.pairs, everything.pair_effects.T):
    halves[:, a] += values / 2
    halves[:, b] += values / 2
assert np.allclose(against_average.values, halves, rtol=0, atol=1e-8)

# %%
# The same patient's SHAP values, and every patient's mean absolute values:

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), layout="constrained")
LocalExplanationDisplay.from_explanation(
    explanation, sample=patient, max_terms=8, ax=left
)
right.barh(np.arange(10)[::-1], importance[order], color="tab:gray")
right.set_yticks(np.arange(10)[::-1], labels=explanation.feature_names[order])
right.set_xlabel("mean |SHAP value| on the test patients")
right.set_title("Which measurements move the predictions")
fig.savefig(OUTPUT_DIR / "local_explanations_shap.png", dpi=90)

# %%
# Where the ``shap`` package is installed, its model-agnostic exact explainer
# (all ``2^10`` coalitions of the ten features, for each patient and each
# background row) gives the same values; it is run on a few patients and a
# small background, outside the quick mode.

shap = None
if not QUICK:
    # shap's import uses a colormap method that matplotlib deprecates
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        try:
            import shap
        except ImportError:
            pass
if shap is not None:
    background = X_train.iloc[:50]
    masker = shap.maskers.Independent(background, max_samples=len(background))
    reference = shap.explainers.Exact(model.predict, masker)(X_test.iloc[:3])
    closed_form = shap_values(model, X_test.iloc[:3], background=background)
    assert np.allclose(closed_form.values, reference.values, rtol=0, atol=1e-8)
    print("shap's exact explainer agrees to 1e-8 on three patients")
