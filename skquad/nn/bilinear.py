"""The bilinear network of the SDP path as torch and numpy math (Bartan & Pilanci).

``f(z) = ((z U^T) * (z V^T)) @ A``: the module trained by
:class:`~skquad.BackpropQuantizedClassifier`, its per-sample losses (the torch
twins of :func:`skquad.convex.formulation.loss_value`), the curvature that
sets its step size, and the post-training sign quantizer.
"""

import numpy as np
import torch

__all__ = ["BilinearModule", "bilinear_loss", "bilinear_curvature", "quantize_bilinear"]


class BilinearModule(torch.nn.Module):
    """``f(z) = ((z U^T) * (z V^T)) @ A`` with real ``U, V`` and a fixed ``A``."""

    def __init__(self, U, V, output_weights):
        super().__init__()
        self.U = torch.nn.Parameter(U)
        self.V = torch.nn.Parameter(V)
        self.register_buffer("output_weights", output_weights)

    def forward(self, Z):
        return ((Z @ self.U.T) * (Z @ self.V.T)) @ self.output_weights


def bilinear_loss(loss, n_outputs, *, real_targets=False):
    """Per-sample loss ``(scores, targets) -> (n,)`` matching the SDP's losses.

    ``real_targets``: vector-output regression, targets of shape
    (n, n_outputs) compared as they are (the squared loss only).
    """
    functional = torch.nn.functional

    if real_targets and n_outputs > 1:
        if loss != "squared":
            raise ValueError(f"Real vector targets need the squared loss, got loss={loss!r}.")

        def vector(scores, target):
            return ((scores - target) ** 2).sum(dim=1)

        return vector

    if n_outputs == 1:
        def binary(scores, target):
            margin = target * scores[:, 0]
            if loss == "hinge":
                return functional.relu(1.0 - margin)
            if loss == "logistic":
                return functional.softplus(-margin)
            return (scores[:, 0] - target) ** 2

        return binary

    def multiclass(scores, target):
        if loss == "logistic":
            return functional.cross_entropy(scores, target, reduction="none")
        onehot = functional.one_hot(target, n_outputs).to(scores.dtype)
        if loss == "hinge":
            return (scores + 1.0 - onehot).max(dim=1).values - (scores * onehot).sum(dim=1)
        return ((scores - onehot) ** 2).sum(dim=1)

    return multiclass


def bilinear_curvature(Z, sample_weight, batch_size, n_power_iterations=30):
    """Largest output curvature per unit first-layer step of the fresh network.

    With ``u_j, v_j ~ N(0, I/p)`` and the step on the first layer scaled by
    ``m_k`` (undoing ``alpha_j = 1 / m_k``), an SGD step of size ``eta`` moves
    the outputs through the kernel ``eta * 2 (z^T z')^2 / p`` (the network's
    tangent kernel, averaged over the neurons). Gradient descent on a
    minibatch is stable when ``eta`` times the kernel's largest eigenvalue on
    that minibatch stays below a constant, so the step must be divided by

    * the largest eigenvalue of the (weighted) full-data kernel
      ``[(z_i^T z_j)^2 / p]`` (power iteration, each product
      ``z_i^T (Z^T diag(w) Z) z_i`` costs ``O(n p^2)``), and
    * the largest single-sample term ``||z_i||^4 / (p B)``, which dominates
      any minibatch holding that sample: standardized features with rare
      values (sparse pixels, skewed measurements) give ``||z_i||^2`` many
      times ``p``, and the quadratic network sees its square.

    This is what made a fixed step diverge on optdigits, segment or
    load_digits while working on well-conditioned data: the curvature grows
    with ``||z||^4``, not with ``||z||^2`` as in a linear model.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n_samples, n_lifted = Z.shape
    weight = np.asarray(sample_weight, dtype=np.float64)
    weight = weight / weight.sum()
    squared_norms = np.einsum("ij,ij->i", Z, Z)
    batch = max(1, min(int(batch_size or 200), n_samples))
    single_sample = float(np.max(squared_norms[weight > 0] ** 2)) / (n_lifted * batch)
    vector = np.full(n_samples, 1.0 / np.sqrt(n_samples))
    eigenvalue = 0.0
    for _ in range(n_power_iterations):
        # (K w v)_i = z_i^T (sum_j w_j v_j z_j z_j^T) z_i / p, symmetrized by sqrt(w).
        root = np.sqrt(weight) * vector
        middle = (Z * root[:, None]).T @ Z
        image = np.sqrt(weight) * np.sum((Z @ middle) * Z, axis=1) / n_lifted
        norm = float(np.linalg.norm(image))
        if not np.isfinite(norm) or norm == 0.0:
            break
        eigenvalue, vector = norm, image / norm
    return max(eigenvalue, single_sample, 1e-12)


def quantize_bilinear(U, V, output_weights, neuron_class):
    """Post-training quantization: signs, and the least-squares scale per output.

    For the neurons of output ``k``, ``c_k = <Zhat, Z> / <Zhat, Zhat>`` with
    ``Zhat = sum_j sign(u_j) sign(v_j)^T`` and ``Z = sum_j alpha_jk u_j v_j^T``
    minimises ``||c Zhat - Z||_F``.

    Returns
    -------
    U_sign, V_sign : int8 arrays
    alpha : ndarray, the quantized second layer
    scale : ndarray of shape (n_outputs,)
    """
    U_sign = np.where(U >= 0, 1, -1).astype(np.int8)
    V_sign = np.where(V >= 0, 1, -1).astype(np.int8)
    n_outputs = output_weights.shape[1]
    scale = np.zeros(n_outputs)
    alpha = np.zeros_like(output_weights)
    for k in range(n_outputs):
        rows = neuron_class == k
        real = (U[rows] * output_weights[rows, k][:, None]).T @ V[rows]
        signs = U_sign[rows].T.astype(np.float64) @ V_sign[rows].astype(np.float64)
        scale[k] = np.sum(signs * real) / max(np.sum(signs * signs), 1e-300)
        alpha[rows, k] = scale[k]
    return U_sign, V_sign, alpha, scale
