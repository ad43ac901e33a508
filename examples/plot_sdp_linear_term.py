"""
========================================================================
The quantized classifier's linear term and its ``beta`` on held-out rows
========================================================================

A :math:`\\pm 1` first layer weighs every input alike in each neuron's linear part, so
:class:`~skquad.SDPQuantizedClassifier`'s network alone (the paper's model) pays as much
penalty for a linear boundary as for a quadratic one, and on few rows it fits the
noise instead. On two classes the default therefore fits a ridge linear term first
(``linear_term="auto"``) and the network to its residuals, and chooses ``beta`` among
fractions of ``beta_max_`` on held-out fifths of the rows (``beta="auto"``): at the
fraction 1 the network is zero and the model is the linear term alone.

Two problems of 300 training rows of standard normal inputs show both sides:

* classes set by ``x0 + x1`` under noise among 30 inputs: the other 28 are noise;
* classes set by the distance from the origin in 5 inputs: no linear model does better
  than chance, and the neurons :math:`(z^\top u)^2` are the model.
"""

# %%
# Every fraction of ``beta_max``, with and without the linear term
# -----------------------------------------------------------------

import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from skquad import SDPQuantizedClassifier

# small sizes for the test suite
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

rng = np.random.default_rng(0)
n_train, n_test = 300, 1000 if QUICK else 5000
n_neurons = 200 if QUICK else 1000
linear_X = rng.standard_normal((n_train + n_test, 30))
radial_X = rng.standard_normal((n_train + n_test, 5))
radius = np.sum(radial_X**2, axis=1) + rng.standard_normal(len(radial_X))
problems = {
    "x0 + x1 under noise": (linear_X, (linear_X[:, 0] + linear_X[:, 1]
                                       + rng.standard_normal(len(linear_X)) > 0).astype(int)),
    "distance from the origin": (radial_X, (radius > np.median(radius)).astype(int)),
}
fractions = np.array([1e-3, 1e-2, 3e-2, 1e-1, 1.0])  # some of the search's candidates

results = {}
for name, (X, y) in problems.items():
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    default = SDPQuantizedClassifier(n_neurons, random_state=0).fit(X_train, y_train)
    # the paper's problem: the network alone, beta by the (p / n)^2 rule
    paper = SDPQuantizedClassifier(n_neurons, linear_term=False, beta="rule", random_state=0)
    paper.fit(X_train, y_train)
    curves = {}
    for linear_term in (True, False):
        reference = default if linear_term else paper  # beta_max_ of that problem
        with warnings.catch_warnings():
            # at beta_max the network is zero by definition: the linear term alone
            warnings.filterwarnings("ignore", message="beta=.* the zero network")
            curves[linear_term] = [
                SDPQuantizedClassifier(n_neurons, linear_term=linear_term, beta=f * reference.beta_max_,
                                       random_state=0).fit(X_train, y_train).score(X_test, y_test)
                for f in fractions[: -1 if not linear_term else None]  # 1 alone: a constant
            ]
    results[name] = dict(
        curves=curves, chosen=default.beta_ / default.beta_max_, default=default.score(X_test, y_test),
        paper=(paper.beta_ / paper.beta_max_, paper.score(X_test, y_test)),
        linear=LogisticRegression().fit(X_train, y_train).score(X_test, y_test),
    )
    print(f"{name}: default {results[name]['default']:.3f} (beta_ / beta_max_ = "
          f"{results[name]['chosen']:g}), the paper's problem {results[name]['paper'][1]:.3f}, "
          f"LogisticRegression {results[name]['linear']:.3f}")

# %%
# Test accuracy against ``beta / beta_max``
# -----------------------------------------
# The lines are fits at each fixed fraction, with the linear term and without it (the
# network alone); the star is the default's choice, made on held-out fifths of the
# training rows only; the square is the paper's problem at the rule's ``beta``.

fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
for ax, (name, result) in zip(axes, results.items()):
    ax.semilogx(fractions, result["curves"][True], "o-", label="with the linear term")
    ax.semilogx(fractions[:-1], result["curves"][False], "s--", label="the network alone")
    ax.axhline(result["linear"], color="gray", linestyle=":", label="LogisticRegression")
    ax.plot(result["chosen"], result["default"], "*", markersize=16, color="C3",
            label='defaults (beta="auto")')
    ax.plot(*result["paper"], "s", markersize=9, color="C1", label='paper: beta="rule", no term')
    ax.set_title(name)
    ax.set_xlabel("beta / beta_max  (1: no network)")
axes[0].set_ylabel("test accuracy")
fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=5)
fig.tight_layout(rect=(0, 0.1, 1, 1))
fig.savefig(OUTPUT_DIR / "sdp_linear_term.png")

# %%
# What the plot shows
# -------------------
# On the noisy linear boundary the network alone stays far below the linear model at
# every ``beta``; with the linear term the default matches it, choosing no network. On
# the radial problem the network is the model: the default keeps one, far above chance.

noisy, radial = results["x0 + x1 under noise"], results["distance from the origin"]
assert noisy["paper"][1] < noisy["linear"] - 0.1
assert max(noisy["curves"][False]) < noisy["linear"] - 0.05
assert noisy["default"] >= noisy["linear"] - 0.02
assert radial["chosen"] < 1 and radial["default"] > radial["linear"] + 0.2
