"""
===================================
XOR with a single quadratic neuron
===================================

No single linear neuron can learn XOR, but one quadratic neuron
:math:`\\sigma(x^\\top Q x + w^\\top x + b)` can: its decision boundary
:math:`x^\\top Q x + w^\\top x + b = 0` is a conic section. Noel et al.
(section 2 and Fig. 1 of their paper, see :ref:`references`) train one neuron on the
four bipolar XOR points with plain stochastic gradient descent and report two
solutions:

* :math:`Q` started at the identity ends with an **ellipse** around one class;
* :math:`Q` started at random ends with a **hyperbola** between the classes.

This example reproduces both with :class:`~skquad.QuadraticLogisticRegression`
and the paper's unregularised SGD updates (``solver="sgd"``, ``C=np.inf``,
``batch_size=1``). The type of conic is read from the eigenvalues of ``Q_``:
same signs give an ellipse, opposite signs a hyperbola.

XOR is separable, so without regularisation there is no finite optimum: the
weights keep growing along a separating direction and the boundary keeps
changing. The ellipse is the boundary at the moment the identity-started neuron
first classifies all four points (where the paper stops). Trained on, the
off-diagonal entry of :math:`Q` (the coefficient of :math:`x_1 x_2`, the only
term that tells the classes apart, since :math:`x_1^2 = x_2^2 = 1` on all four
points) outgrows the diagonal and the ellipse opens into a hyperbola: the third
panel shows it.
"""

# %%
# Train the three neurons
# -----------------------

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from skquad import QuadraticLogisticRegression
from skquad.datasets import make_xor

# the example is fast either way
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

X, y = make_xor()  # bipolar: inputs and labels in {-1, +1}

sgd = dict(solver="sgd", C=np.inf, batch_size=1, learning_rate_init=0.05)


def conic_type(Q):
    eigenvalues = np.linalg.eigvalsh(Q)
    return "ellipse" if eigenvalues[0] * eigenvalues[1] > 0 else "hyperbola"


# Q = I, stopped at the first epoch that separates the four points
# (``partial_fit`` runs one SGD epoch per call and continues from the last).
identity_early = QuadraticLogisticRegression(
    Q_init="identity", random_state=0, **sgd
)
for epoch in range(1, 201):
    identity_early.partial_fit(X, y, classes=np.unique(y))
    if identity_early.score(X, y) == 1.0:
        break
print(f"Q = I, stopped at epoch {epoch}: {conic_type(identity_early.Q_[0])}")

# Q = I, trained until the loss stops improving by tol.
identity_long = QuadraticLogisticRegression(
    Q_init="identity", max_iter=2000, tol=1e-4, random_state=0, **sgd
).fit(X, y)
long_epochs = int(identity_long.n_iter_[0])  # one entry per class score
print(f"Q = I, {long_epochs} epochs: {conic_type(identity_long.Q_[0])}")

# Random symmetric Q (this seed draws an indefinite one).
random_start = QuadraticLogisticRegression(
    Q_init="random", max_iter=2000, tol=1e-4, random_state=3, **sgd
).fit(X, y)
random_epochs = int(random_start.n_iter_[0])
print(f"random Q, {random_epochs} epochs: {conic_type(random_start.Q_[0])}")

# What the text above says, checked: all three separate the points; the early
# stop is an ellipse, the two long runs hyperbolas, and in the long identity run
# the x1*x2 coefficient has outgrown the diagonal.
for model in (identity_early, identity_long, random_start):
    assert model.score(X, y) == 1.0
assert conic_type(identity_early.Q_[0]) == "ellipse"
assert conic_type(identity_long.Q_[0]) == "hyperbola"
assert conic_type(random_start.Q_[0]) == "hyperbola"
Q_long = identity_long.Q_[0]
assert abs(Q_long[0, 1]) > max(abs(Q_long[0, 0]), abs(Q_long[1, 1]))

# %%
# Draw the decision boundaries
# ----------------------------
# Filled regions show the sign of the neuron's score, the black curve the
# boundary :math:`z(x) = 0`. The score is computed from ``Q_``, ``coef_`` and
# ``intercept_`` on the whole grid: the estimator's own predictions clip each
# input to the training square :math:`[-1, 1]^2` (``clip_inputs=True``), which
# would draw straight lines beyond it instead of the conic.


def neuron_score(model, points):
    Q, w, b = model.Q_[0], model.coef_[0], model.intercept_[0]
    return np.einsum("ij,jk,ik->i", points, Q, points) + points @ w + b


grid = np.linspace(-2.5, 2.5, 121 if QUICK else 301)
xx, yy = np.meshgrid(grid, grid)
points = np.column_stack([xx.ravel(), yy.ravel()])

panels = [
    (identity_early, f"Q0 = I, stopped when separated (epoch {epoch})"),
    (identity_long, f"Q0 = I, trained on ({long_epochs} epochs)"),
    (random_start, f"Q0 random, {random_epochs} epochs"),
]
# A constrained layout keeps the axis labels inside the figure (square panels
# leave tight_layout no room for them).
fig, axes = plt.subplots(1, 3, figsize=(13, 5.2), sharey=True, layout="constrained")
for ax, (model, title) in zip(axes, panels):
    # inside the training square the score is the estimator's
    assert np.allclose(neuron_score(model, X), model.decision_function(X))
    scores = neuron_score(model, points).reshape(xx.shape)
    ax.contourf(
        xx, yy, scores > 0, levels=[-0.5, 0.5, 1.5], colors=["#f4c7a1", "#a9c9ec"]
    )
    ax.contour(xx, yy, scores, levels=[0.0], colors="black", linewidths=2)
    for label, marker, color in ((-1, "o", "#c8540c"), (1, "s", "#1f5fa6")):
        mask = y == label
        ax.scatter(
            X[mask, 0],
            X[mask, 1],
            marker=marker,
            s=120,
            c=color,
            edgecolors="black",
            label=f"y = {label:+d}",
        )
    ax.set_title(f"{title}\n{conic_type(model.Q_[0])}", fontsize=10)
    ax.set_xlabel("$x_1$")
    ax.set_aspect("equal")
axes[0].set_ylabel("$x_2$")
axes[0].legend(loc="lower left", fontsize=8)
fig.suptitle("One quadratic neuron on XOR (unregularised SGD)")
fig.savefig(OUTPUT_DIR / "plot_xor.png", dpi=110)
