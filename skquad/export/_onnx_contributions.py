"""The ``contributions`` option of the ONNX converters: each sample's exact terms as an output.

A score that is a quadratic form ``x^T Q x + w^T x + b`` of the estimator's
input splits into main effects ``w_a x_a + Q_aa x_a^2`` and pairs
``2 Q_ac x_a x_c`` (``a < c``, in ``np.triu_indices`` order): the terms of
:func:`skquad.inspection.local_contributions` without ``max_pairs``. With
``options={"contributions": True}`` the converter adds them as one more output,
``(N, d + d (d - 1) / 2)`` for one score, ``(N, d + d (d - 1) / 2, k)`` for k
scores (a multiclass classifier, a multi-output regressor), computed from the
input as the scores see it (after ``clip_inputs``' clipping).

``(Q, w)`` are read here from the same fitted arrays the converter turns into
the score graph (the export room does not import the inspection room): the
quadratic-form models' ``Q_`` and ``coef_``, a one-layer network's layer, and
the quantized networks' :func:`~skquad.export._torch.bilinear_parts` expanded
into one form. A regressor's output scaling multiplies the terms as it does its
prediction; ``exp`` (``loss="poisson"``) leaves them: they add up to the log.
"""

import numpy as np

from ..nn.polarization import layer_quadratic_forms
from ._torch import bilinear_parts

__all__ = ["OPTION", "add_contributions", "check_supported", "n_terms"]

OPTION = "contributions"


def check_supported(estimator):
    """Raise when the estimator's score is not a quadratic form of its input (hidden layers)."""
    layers = getattr(estimator, "layers_", None)
    if layers is not None and len(layers) > 1:
        raise ValueError(
            f"The ONNX option {OPTION}=True needs a score that is a quadratic form of the input, "
            f"but {type(estimator).__name__} with hidden_layer_sizes="
            f"{tuple(estimator.hidden_layer_sizes)!r} passes it through {len(layers) - 1} hidden "
            "layer(s) and an activation: its score has no exact split into main effects and pairs. "
            f"Fit it with hidden_layer_sizes=() or export it without the {OPTION} option."
        )


def n_terms(n_features):
    """The main effects, then every pair."""
    return n_features + n_features * (n_features - 1) // 2


def _bilinear_form(estimator):
    """The quantized network's scores as ``(Q, w)`` on its raw input.

    Neuron j is ``p t_u t_v + g_u t_u + g_v t_v + const`` with ``t_u = U_j z + u_j``,
    ``t_v = V_j z + v_j`` and ``z = (x - center) / scale`` (``p = 1``, ``g = 0`` for the
    bilinear activation; ``(a, b, c)`` the polynomial's); the scores are ``alpha``'s
    sums of the neurons plus the linear term on ``x``.
    """
    parts = bilinear_parts(estimator)
    U, V = parts["U"].astype(np.float64), parts["V"].astype(np.float64)
    alpha = parts["alpha"]  # (m, k)
    u_bias, v_bias = (np.zeros(U.shape[0]) if parts[f"{n}_bias"] is None else parts[f"{n}_bias"].astype(np.float64)
                      for n in ("U", "V"))
    p, g_u, g_v = 1.0, np.zeros(U.shape[0]), np.zeros(U.shape[0])
    if parts["activation"] is not None:
        p, b = parts["activation"][:2]
        g_u, g_v = 0.5 * b * parts["V_lift"].astype(np.float64), 0.5 * b * parts["U_lift"].astype(np.float64)
    UV = np.einsum("jk,ja,jc->kac", alpha, U, V)
    Q = 0.5 * p * (UV + UV.transpose(0, 2, 1))
    w = alpha.T @ (p * (v_bias[:, None] * U + u_bias[:, None] * V) + g_u[:, None] * U + g_v[:, None] * V)
    if parts["center"] is not None:  # z = (x - center) / scale: x^T Q' x + w'^T x + const
        inverse = 1.0 / np.asarray(parts["scale"], dtype=np.float64)
        Q = Q * np.outer(inverse, inverse)
        w = w * inverse - 2.0 * Q @ np.asarray(parts["center"], dtype=np.float64)
    return Q, w + parts["linear"]


def _score_form(estimator):
    """``(Q, w)`` of the scores the graph computes, before the link: Q (k, d, d) symmetric, w (k, d)."""
    if hasattr(estimator, "layers_"):
        state = estimator.layers_[0]
        if state["kind"] == "Linear":
            w = np.asarray(state["weight"], dtype=np.float64)
            Q = np.zeros((w.shape[0], w.shape[1], w.shape[1]))
        else:
            Q, w, _ = layer_quadratic_forms(state)
    elif hasattr(estimator, "U_"):
        Q, w = _bilinear_form(estimator)
    else:
        w = np.atleast_2d(np.asarray(estimator.coef_, dtype=np.float64))
        Q = np.reshape(np.asarray(estimator.Q_, dtype=np.float64), (w.shape[0], w.shape[1], w.shape[1]))
        Q = 0.5 * (Q + Q.transpose(0, 2, 1))
    if hasattr(estimator, "target_scale_") and getattr(estimator, "out_activation_", None) != "exp":
        scale = np.broadcast_to(np.asarray(estimator.target_scale_, dtype=np.float64), (Q.shape[0],))
        Q, w = Q * scale[:, None, None], w * scale[:, None]
    return Q, w


def add_contributions(graph, x, estimator, output):
    """Write the terms of ``x`` (the clipped input, ``(N, d)``) into the graph output ``output``."""
    Q, w = _score_form(estimator)
    k, d = w.shape
    x3 = graph.node("Reshape", x, graph.const([-1, d, 1], np.int64))
    diagonal = np.diagonal(Q, axis1=1, axis2=2)  # (k, d)
    main = graph.node("Add", graph.node("Mul", x3, graph.const(w.T)),
                      graph.node("Mul", graph.node("Mul", x3, x3), graph.const(diagonal.T)))
    terms = main
    rows, cols = np.triu_indices(d, k=1)
    if rows.size:
        first = graph.node("Gather", x, graph.const(rows, np.int64), axis=1)
        second = graph.node("Gather", x, graph.const(cols, np.int64), axis=1)
        products = graph.node("Reshape", graph.node("Mul", first, second), graph.const([-1, rows.size, 1], np.int64))
        pairs = graph.node("Mul", products, graph.const(2.0 * Q[:, rows, cols].T))
        terms = graph.node("Concat", main, pairs, axis=1)
    shape = [-1, n_terms(d)] if k == 1 else [-1, n_terms(d), k]  # one score: local_contributions drops the axis
    graph.container.add_node(
        "Reshape", [terms, graph.const(shape, np.int64)], [output],
        name=graph.scope.get_unique_operator_name("SkquadContributions"),
    )
