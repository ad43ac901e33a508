"""The SDP's data without the lifted matrices: ``L(x) = S ∘ (ẑ ẑᵀ)``.

Every lifting of :class:`~skquad.convex.lifting.InputLifting` has the form
``L(x) = S ∘ (ẑ ẑᵀ)`` for a fixed ``p x p`` pattern ``S``: ``ẑ = z`` and
``S = 1`` for the bilinear network, ``ẑ = [z, 1]`` and
``S = [[a 1 1ᵀ, (b/2) 1], [(b/2) 1ᵀ, c]]`` for the polynomial activation
``a t² + b t + c``. So ``⟨L(x_i), D⟩ = ẑ_iᵀ (S ∘ D) ẑ_i`` and
``Σ_i c_i L(x_i) = S ∘ (Ẑᵀ diag(c) Ẑ)``: the solver and the certificate need
only the ``n x w`` feature matrix (``w = p`` or ``p - 1``), never the
``n x p x p`` stack of lifted inputs.

For a factor ``F`` (``p x r``, column signs ``s``) and ``D = F diag(s) Fᵀ``,
``⟨L(x_i), D⟩ = Σ_c s_c q(g_ic, h_c)`` with ``g = Z F[:w]``, ``h = F[w]`` and
``q(g, h) = a g² + b g h + c h²`` (``q = g²`` for the bilinear lifting).
"""

from dataclasses import dataclass

import numpy as np
import torch

from .losses import loss_per_sample

__all__ = ["LiftedData", "encode_targets"]


def encode_targets(y, n_outputs):
    """The targets as a float64 matrix of shape (n_samples, n_outputs).

    ``y`` is either 1-D, ±1 labels or real values for one output and class
    indices (one-hot encoded here) for more, or already 2-D real targets of
    shape (n_samples, n_outputs) (a vector-output regression, squared loss).
    """
    y = np.asarray(y)
    if y.ndim == 2:
        if y.shape[1] != n_outputs:
            raise ValueError(f"y has {y.shape[1]} columns for {n_outputs} outputs.")
        return y.astype(np.float64)
    if n_outputs == 1:
        return y.astype(np.float64).reshape(-1, 1)
    onehot = np.zeros((y.shape[0], n_outputs))
    onehot[np.arange(y.shape[0]), y.astype(np.int64)] = 1.0
    return onehot


@dataclass
class LiftedData:
    """The weighted training set of the SDP, as tensors on one device.

    Attributes
    ----------
    features : tensor of shape (n_samples, w)
        ``z`` of every sample (standardized, intercept, replicas).
    polynomial : tuple (a, b, c) or None
        The activation's coefficients; None for the bilinear lifting.
    weight : tensor of shape (n_samples,)
        Sample weights summing to one.
    target : tensor of shape (n_samples, n_outputs)
        ±1 labels (or reals, squared loss) for one output, one-hot rows for more.
    loss : {"hinge", "logistic", "squared"}
    beta : float
    """

    features: torch.Tensor
    polynomial: object
    weight: torch.Tensor
    target: torch.Tensor
    loss: str
    beta: float
    lifted: torch.Tensor = None

    @classmethod
    def from_lifting(cls, lifting, X, y, weight, *, loss, beta, n_outputs,
                     device="cpu", dtype=torch.float64):
        """Build from an :class:`~skquad.convex.lifting.InputLifting` and raw ``X``."""
        return cls.from_arrays(
            lifting.features(X), y, weight, loss=loss, beta=beta, n_outputs=n_outputs,
            polynomial=lifting.activation if lifting.polynomial else None,
            device=device, dtype=dtype,
        )

    @classmethod
    def from_arrays(cls, features, y, weight, *, loss, beta, n_outputs, polynomial=None,
                    device="cpu", dtype=torch.float64):
        """Build from numpy arrays (``y``: ±1 / reals, or class indices).

        Parameters
        ----------
        features : ndarray of shape (n_samples, w)
            ``InputLifting.features(X)``.
        y : ndarray of shape (n_samples,)
        weight : ndarray of shape (n_samples,)
            Non-negative, normalised here.
        loss, beta, n_outputs :
            As in :func:`skquad.convex.solve_sdp`.
        polynomial : tuple (a, b, c) or None
        device, dtype : torch device and floating dtype.
        """
        weight = np.asarray(weight, dtype=np.float64)
        weight = weight / weight.sum()
        target = encode_targets(y, n_outputs)

        def tensor(array):
            return torch.as_tensor(np.array(array, dtype=np.float64), device=device).to(dtype)

        return cls(
            features=tensor(features),
            polynomial=None if polynomial is None else tuple(float(v) for v in polynomial),
            weight=tensor(weight),
            target=tensor(target),
            loss=loss,
            beta=float(beta),
        )

    @classmethod
    def from_lifted_matrices(cls, lifted, y, weight, *, loss, beta, n_outputs):
        """Build from explicit lifted inputs ``L(x_i)`` (n x p x p; the CVXPY path).

        Only the certificate's products are available then (no factor solver).
        """
        data = cls.from_arrays(
            np.zeros((len(y), 0)), y, weight, loss=loss, beta=beta, n_outputs=n_outputs
        )
        lifted = np.asarray(lifted, dtype=np.float64)
        data.lifted = torch.as_tensor(0.5 * (lifted + np.transpose(lifted, (0, 2, 1))))
        return data

    @property
    def n_lifted(self):
        """``p``, the side of the lifted matrices."""
        if self.lifted is not None:
            return self.lifted.shape[1]
        return self.features.shape[1] + int(self.polynomial is not None)

    @property
    def n_outputs(self):
        return self.target.shape[1]

    @property
    def penalty_per_rho(self):
        """``2 beta p``: the penalty of one unit of ``rho``."""
        return 2.0 * self.beta * self.n_lifted

    def zero_network_value(self):
        """Objective of the zero network (``rho = 0``): ``Σ w l(0)``."""
        zeros = torch.zeros_like(self.target)
        return float(self.weight @ loss_per_sample(zeros, self.target, self.loss))

    def rho_max(self):
        """An upper bound on every block's optimal ``rho``: ``Σ w l(0) / (2 beta p)``.

        The zero network is feasible and the losses are non-negative, so
        ``2 beta p rho_k <= optimum <= Σ w l(0)``. Infinite when ``beta = 0``.
        """
        if self.penalty_per_rho <= 0.0:
            return float("inf")
        return self.zero_network_value() / self.penalty_per_rho

    def objective(self, scores, rho_sum):
        """``Σ w l(f) + 2 beta p Σ rho``."""
        values = loss_per_sample(scores, self.target, self.loss)
        return self.weight @ values + self.penalty_per_rho * rho_sum

    # ----------------------------------------------------------- products
    def factor_inner(self, factor, signs):
        """``⟨L(x_i), F diag(s) Fᵀ⟩`` for every sample, shape (n_samples,)."""
        width = self.features.shape[1]
        g = self.features @ factor[:width]
        if self.polynomial is None:
            return (g * g) @ signs
        a, b, c = self.polynomial
        h = factor[width]
        return (a * g * g + b * g * h + c * h * h) @ signs

    def matrix_inner(self, matrix):
        """``⟨L(x_i), D⟩`` for a symmetric ``p x p`` matrix ``D``, shape (n_samples,)."""
        matrix = 0.5 * (matrix + matrix.T)
        if self.lifted is not None:
            return torch.einsum("nij,ij->n", self.lifted, matrix)
        width = self.features.shape[1]
        Z = self.features
        quadratic = ((Z @ matrix[:width, :width]) * Z).sum(dim=1)
        if self.polynomial is None:
            return quadratic
        a, b, c = self.polynomial
        return a * quadratic + b * (Z @ matrix[:width, width]) + c * matrix[width, width]

    def weighted_matrix(self, coefficients):
        """``Σ_i c_i L(x_i) = S ∘ (Ẑᵀ diag(c) Ẑ)``, shape (p, p)."""
        if self.lifted is not None:
            return torch.einsum("n,nij->ij", coefficients, self.lifted)
        Z = self.features
        gram = Z.T @ (Z * coefficients[:, None])
        if self.polynomial is None:
            return gram
        a, b, c = self.polynomial
        width = Z.shape[1]
        column = Z.T @ coefficients
        out = torch.empty((width + 1, width + 1), dtype=Z.dtype, device=Z.device)
        out[:width, :width] = a * gram
        out[:width, width] = 0.5 * b * column
        out[width, :width] = 0.5 * b * column
        out[width, width] = c * coefficients.sum()
        return out
