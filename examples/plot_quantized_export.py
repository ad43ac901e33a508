"""
=====================================================
Exporting a quantized network: ±1 weights, one scale
=====================================================

A network trained by :class:`~skquad.SDPQuantizedClassifier` has first-layer
weights in :math:`\\{-1, +1\\}` and, for a binary problem, a single real number
in its second layer. This example fits one, writes exactly that to a file (two
bit matrices, the input scaling and its training range, and one scale), reloads it, and predicts with
ten lines of numpy, without skquad, torch or CVXPY: the kind of model that runs
on a microcontroller. It then checks that these predictions are the
estimator's, and that the Appendix C export to a network of plain
quadratic-activation neurons computes the same scores.
"""

# %%
# Fit
# ---
# The Wisconsin breast-cancer data that ships with scikit-learn, standardized,
# with a network of 1000 binary neurons and ``beta`` = 0.1: with too little
# regularisation the relaxed model overfits and the sampled network needs many
# more neurons to follow it.

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import SDPQuantizedClassifier

# small sizes for the test suite
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

X, y = load_breast_cancer(return_X_y=True)
if QUICK:
    X = X[:, :8]
X_train, X_test, y_train, y_test = train_test_split(
    X, y, stratify=y, random_state=0
)

model = make_pipeline(
    StandardScaler(),
    # The paper's network: one shared second-layer weight (the default refit
    # gives every neuron its own weight) and no linear term (by default a
    # two-class fit adds a ridge term, d more floats to deploy).
    SDPQuantizedClassifier(
        n_neurons=100 if QUICK else 1000,
        beta=0.1,
        linear_term=False,
        refit_output_layer=False,
        random_state=0,
    ),
)
model.fit(X_train, y_train)
scaler, network = model[0], model[-1]
print(f"test accuracy: {model.score(X_test, y_test):.3f}")
print(f"first layer: U_ {network.U_.shape} and V_ {network.V_.shape}")
print(f"dtype {network.U_.dtype}")
first_layer = np.concatenate([network.U_, network.V_])
print(f"distinct first-layer values: {np.unique(first_layer).tolist()}")
print(f"distinct second-layer values: {np.unique(network.alpha_).tolist()}")
# ±1 first-layer weights, one real second-layer weight (a binary problem with
# refit_output_layer=False).
assert set(np.unique(first_layer).tolist()) == {-1, 1}
assert np.unique(network.alpha_).size == 1

# %%
# Export
# ------
# Everything the deployed network needs. ``fit_intercept=True`` (the default)
# appended a constant input 1, so each weight vector has one entry more than
# there are features: the neuron's binary bias. The bits are packed eight to a
# byte. The estimator clips each input to its training range before it
# predicts (``clip_inputs=True``, the default): the range goes into the file too.

(scale,) = np.unique(network.alpha_)
assert network.U_.shape[1] == X.shape[1] + 1  # the features and the constant input
export_path = OUTPUT_DIR / "quantized_network.npz"
np.savez(
    export_path,
    U_bits=np.packbits(network.U_ > 0, axis=1),
    V_bits=np.packbits(network.V_ > 0, axis=1),
    n_inputs=network.U_.shape[1],
    scale=scale,
    intercept=network.intercept_[0],
    mean=scaler.mean_,
    std=scaler.scale_,
    low=network.data_min_,
    high=network.data_max_,
    classes=network.classes_,
)
n_bits = 2 * network.U_.size
n_bytes = sum(np.load(export_path)[name].nbytes for name in ("U_bits", "V_bits"))
print(
    f"{n_bits} weight bits ({n_bytes} bytes) and two floats: {export_path.name}"
)
assert n_bytes == 2 * len(network.U_) * -(-network.U_.shape[1] // 8)  # 8 bits a byte

# %%
# Predict from the file, with numpy only
# --------------------------------------
# Each input is clipped to its training range; each neuron computes
# :math:`(z^\top u_j)(z^\top v_j)` with :math:`z = [x, 1]`;
# with :math:`\pm 1` weights the two inner products are sums and differences of
# inputs. The output is the scale times the sum over neurons plus the intercept
# (the mean of the ±1 training labels: the squared loss's output intercept); its
# sign picks the class.


def load_and_predict(path, X):
    saved = np.load(path)
    n_inputs = int(saved["n_inputs"])
    U = (
        np.unpackbits(saved["U_bits"], axis=1, count=n_inputs).astype(np.int8) * 2
        - 1
    )
    V = (
        np.unpackbits(saved["V_bits"], axis=1, count=n_inputs).astype(np.int8) * 2
        - 1
    )
    z = np.clip((X - saved["mean"]) / saved["std"], saved["low"], saved["high"])
    z = np.hstack([z, np.ones((len(z), 1))])
    scores = saved["scale"] * np.sum((z @ U.T) * (z @ V.T), axis=1) + saved["intercept"]
    return saved["classes"][(scores > 0).astype(int)], scores


exported_labels, exported_scores = load_and_predict(export_path, X_test)
np.testing.assert_allclose(
    exported_scores, model.decision_function(X_test), rtol=1e-9, atol=1e-9
)
assert np.array_equal(exported_labels, model.predict(X_test))
print("the exported network's predictions are the estimator's")

# %%
# The same network with quadratic activations
# -------------------------------------------
# Hardware and libraries more often offer a square than a bilinear unit. Since
# :math:`(z^\top u)(z^\top v) = 2\,(z^\top \tfrac{u+v}{2})^2 - \tfrac12 (z^\top u)^2
# - \tfrac12 (z^\top v)^2`, the network is also a network of :math:`3m` neurons
# with activation :math:`t^2` and weights in :math:`\{-1, 0, 1\}` (Bartan and
# Pilanci, appendix C).

quadratic = network.export_quadratic_network()
# (the network itself: its input is clipped as the estimator clips it)
inputs = np.clip(scaler.transform(X_test), network.data_min_, network.data_max_)
quadratic_scores = quadratic.scores(inputs).ravel()
np.testing.assert_allclose(quadratic_scores, exported_scores, rtol=1e-9, atol=1e-9)
n_exported = quadratic.weights.shape[0]
print(f"quadratic-activation export: {n_exported} neurons, same scores")
assert n_exported == 3 * len(network.U_)
assert set(np.unique(quadratic.weights).tolist()) <= {-1, 0, 1}

# %%
# What the weights look like
# --------------------------
# Left: the first 40 neurons' weight vectors (white +1, black -1; the last
# column is the bias input). Right: the network's scores on the test set, by
# true class; the sign of the score is the prediction.

fig, (ax_weights, ax_scores) = plt.subplots(
    1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.2, 1]}
)
shown = np.hstack(
    [network.U_[:40], np.zeros((min(40, len(network.U_)), 1)), network.V_[:40]]
)
ax_weights.imshow(
    shown, cmap="gray", vmin=-1, vmax=1, aspect="auto", interpolation="nearest"
)
ax_weights.set_title("u_j (left) and v_j (right), first 40 neurons")
ax_weights.set_xlabel("input (last column of each block: bias)")
ax_weights.set_ylabel("neuron j")

for label, name in zip(network.classes_, ["malignant", "benign"]):
    ax_scores.hist(
        exported_scores[y_test == label], bins=25, alpha=0.6, label=f"true {name}"
    )
ax_scores.axvline(0, color="k", linestyle=":")
ax_scores.set_xlabel("score f(x) of the exported network")
ax_scores.set_ylabel("test samples")
ax_scores.set_title(f"Test accuracy {np.mean(exported_labels == y_test):.3f}")
ax_scores.legend()
fig.tight_layout()
fig.savefig(OUTPUT_DIR / "quantized_export.png", dpi=100)
