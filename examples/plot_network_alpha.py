"""
=====================================================================
The network classifiers' ``alpha`` on held-out rows
=====================================================================

:class:`~skquad.QNNClassifier` and :class:`~skquad.RPQNNClassifier` train by Adam for
``max_iter`` epochs, as :class:`~sklearn.neural_network.MLPClassifier` does, and on up to
1,000 rows they hold out no validation split to stop early. Where the signal is weak their
networks then fit its noise. Their default ``alpha="auto"`` checks MLPClassifier's
``alpha=1e-4`` on held-out fifths of the training rows against 1, 10 and 100, and keeps it
unless another misclassifies fewer held-out rows by more than one standard error.

Two problems of 400 training rows show both sides:

* four classes from a weak signal in four of twenty inputs, one class the majority;
* two classes by the distance from the origin in five inputs: a strong quadratic boundary.
"""

# %%
# Every candidate ``alpha``, and the default's choice
# ---------------------------------------------------

import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from skquad import RPQNNClassifier

# small sizes for the test suite
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

n_train, n_test = 400, 1000 if QUICK else 4000
rng = np.random.default_rng(1)
weak_X = rng.standard_normal((n_train + n_test, 20))
logits = 0.5 * weak_X[:, :4] + rng.gumbel(size=(len(weak_X), 4))
logits[:, 0] += 1.5
radial_X = rng.standard_normal((n_train + n_test, 5))
radius = np.sum(radial_X**2, axis=1)
problems = {
    "weak signal, four classes": (weak_X, logits.argmax(axis=1)),
    "distance from the origin": (radial_X, (radius > np.median(radius)).astype(int)),
}
alphas = [1e-4, 1.0, 10.0, 100.0]  # the candidates of alpha="auto"

results = {}
for name, (X, y) in problems.items():
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    with warnings.catch_warnings():
        # Adam's 200 epochs end before its tolerance here; the accuracy is the point
        warnings.simplefilter("ignore", ConvergenceWarning)
        default = RPQNNClassifier((20,), random_state=0).fit(X_train, y_train)
        fixed = [RPQNNClassifier((20,), alpha=alpha, random_state=0).fit(X_train, y_train)
                 .score(X_test, y_test) for alpha in alphas]
    results[name] = dict(
        fixed=fixed, chosen=default.alpha_, default=default.score(X_test, y_test),
        linear=LogisticRegression().fit(X_train, y_train).score(X_test, y_test),
    )
    print(f"{name}: default {results[name]['default']:.3f} (alpha_ = {default.alpha_:g}), "
          f"alpha=1e-4 {fixed[0]:.3f}, LogisticRegression {results[name]['linear']:.3f}")

# %%
# Test accuracy against ``alpha``
# -------------------------------
# The line is a fit at each fixed ``alpha``; the star is the default's choice, made on
# held-out fifths of the training rows only.

fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
for ax, (name, result) in zip(axes, results.items()):
    ax.semilogx(alphas, result["fixed"], "o-", label="fixed alpha")
    ax.axhline(result["linear"], color="gray", linestyle=":", label="LogisticRegression")
    ax.plot(result["chosen"], result["default"], "*", markersize=16, color="C3",
            label='default (alpha="auto")')
    ax.set_title(name)
    ax.set_xlabel("alpha  (1e-4: MLPClassifier's)")
axes[0].set_ylabel("test accuracy")
fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3)
fig.tight_layout(rect=(0, 0.08, 1, 1))
fig.savefig(OUTPUT_DIR / "network_alpha.png")

# %%
# What the plot shows
# -------------------
# On the weak signal MLPClassifier's penalty leaves the network fitting noise, below
# LogisticRegression; the held-out rows see it, and the default takes a larger ``alpha``
# and scores at least as well as the linear model. On the distance from the origin the
# network is the model, no linear model does better than chance, and the larger
# penalties flatten it: the default keeps 1e-4.

weak, radial = results["weak signal, four classes"], results["distance from the origin"]
assert weak["fixed"][0] < weak["linear"]
assert weak["chosen"] > 1e-4 and weak["default"] > weak["fixed"][0] + 0.02
assert weak["default"] >= weak["linear"]
assert radial["chosen"] == 1e-4 and radial["default"] > radial["linear"] + 0.2
