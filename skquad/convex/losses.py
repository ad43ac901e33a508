"""The SDP's losses in torch: values, dual variables and convex conjugates.

Shared by the factor solver (:mod:`skquad.convex.factor_solver`) and the
certificate (:mod:`skquad.convex.certificate`). Scores ``f`` and targets have
shape (n_samples, n_outputs); targets are ±1 labels (or reals for the
squared loss) for one output and one-hot rows for vector outputs, as in
:mod:`skquad.convex.formulation`.

Every loss is written as ``l(f) = max_lam <lam, f> - l*(lam)`` (Fenchel), and
a *dual point* ``lam`` of the right domain gives ``l(f') >= <lam, f'> -
l*(lam)`` for every ``f'``, which the certificate sums over the samples:

* squared ``sum_k (f_k - t_k)^2``: ``l*(lam) = sum_k lam_k t_k + lam_k^2 / 4``,
  any ``lam``;
* logistic ``log(1 + exp(-y f))``: with ``s = -y lam`` in [0, 1],
  ``l*(lam) = s log s + (1 - s) log(1 - s)``;
  multinomial ``logsumexp(f) - f_y``: with ``pi = lam + e_y`` on the simplex,
  ``l*(lam) = sum_k pi_k log pi_k``;
* hinge ``max(0, 1 - y f)``: with ``s = -y lam`` in [0, 1], ``l*(lam) = -s``;
  Crammer-Singer ``max_k (f_k + D_k) - f_y`` (``D_k = [k != y]``): with
  ``pi = lam + e_y`` on the simplex, ``l*(lam) = -sum_k pi_k D_k``.

The hinge losses are not smooth; the solver minimises their proximal
(augmented Lagrangian) form in the dual ``pi`` (:func:`hinge_prox`), which is
smooth in ``f`` and equals the loss at a fixed point of the dual update.
"""

import torch

__all__ = [
    "conjugate",
    "dual_point",
    "hinge_dual_point",
    "hinge_prox",
    "initial_hinge_dual",
    "loss_per_sample",
    "project_dual",
]


def _xlogx(value):
    return torch.special.xlogy(value, value)


def loss_per_sample(scores, target, loss):
    """The loss of every sample, shape (n_samples,)."""
    if scores.shape[1] == 1:
        f, t = scores[:, 0], target[:, 0]
        if loss == "hinge":
            return torch.clamp(1.0 - t * f, min=0.0)
        if loss == "logistic":
            return torch.nn.functional.softplus(-t * f)
        return (f - t) ** 2
    true_score = (scores * target).sum(dim=1)
    if loss == "hinge":
        return (scores + 1.0 - target).max(dim=1).values - true_score
    if loss == "logistic":
        return torch.logsumexp(scores, dim=1) - true_score
    return ((scores - target) ** 2).sum(dim=1)


def dual_point(scores, target, loss):
    """``lam = l'(f)``, the dual point of a smooth loss at the scores ``f``.

    (The hinge losses take theirs from the solver's proximal dual or from a
    conic solver's constraint duals: :func:`hinge_dual_point`.)
    """
    if loss == "squared":
        return 2.0 * (scores - target)
    if scores.shape[1] == 1:
        t = target
        return -t * torch.sigmoid(-t * scores)
    return torch.softmax(scores, dim=1) - target


def _project_simplex(values):
    """Euclidean projection of every row onto the probability simplex."""
    sorted_values, _ = torch.sort(values, dim=1, descending=True)
    cumulative = torch.cumsum(sorted_values, dim=1) - 1.0
    index = torch.arange(1, values.shape[1] + 1, device=values.device, dtype=values.dtype)
    condition = sorted_values - cumulative / index > 0
    count = condition.sum(dim=1, keepdim=True).clamp(min=1)
    threshold = torch.gather(cumulative, 1, count - 1) / count.to(values.dtype)
    return torch.clamp(values - threshold, min=0.0)


def project_dual(lam, target, loss):
    """Move ``lam`` into the domain of ``l*`` (a no-op for an exact dual point).

    Binary logistic and hinge: ``-y lam`` clipped to [0, 1]; vector outputs:
    ``lam + e_y`` projected on the simplex. The squared loss has no constraint.
    Without this, round-off could put ``lam`` where ``l* = +inf``.
    """
    if loss == "squared":
        return lam
    if lam.shape[1] == 1:
        return -target * torch.clamp(-target * lam, 0.0, 1.0)
    return _project_simplex(lam + target) - target


def conjugate(lam, target, loss):
    """``l*(lam)`` of every sample for ``lam`` in the domain, shape (n_samples,)."""
    if loss == "squared":
        return (lam * target + 0.25 * lam**2).sum(dim=1)
    if lam.shape[1] == 1:
        s = torch.clamp(-target[:, 0] * lam[:, 0], 0.0, 1.0)
        if loss == "logistic":
            return _xlogx(s) + _xlogx(1.0 - s)
        return -s
    pi = torch.clamp(lam + target, min=0.0)
    if loss == "logistic":
        return _xlogx(pi).sum(dim=1)
    return -(pi * (1.0 - target)).sum(dim=1)


def initial_hinge_dual(target):
    """The hinge dual at ``f = 0`` after one proximal step: every margin is active."""
    if target.shape[1] == 1:
        return torch.ones_like(target)
    others = 1.0 - target
    return others / others.sum(dim=1, keepdim=True)


def hinge_prox(scores, target, dual, sigma):
    """Proximal form of the hinge loss and its updated dual.

    For the binary hinge, with margin ``m = 1 - y f`` and dual ``s`` in
    [0, 1]: ``phi(m; s) = s' m - (s' - s)^2 / (2 sigma)`` with
    ``s' = clip(s + sigma m, 0, 1)``, a smooth function of ``f`` whose
    gradient is ``-y s'``. For Crammer-Singer, with ``pi`` on the simplex:
    ``pi' = proj(pi + sigma (f + D))`` and ``phi = <pi', f + D> - f_y -
    ||pi' - pi||^2 / (2 sigma)``. ``phi`` is at most the hinge loss and
    equals it at a fixed point of ``s -> s'`` (proximal method of multipliers).

    Parameters
    ----------
    scores, target : tensors of shape (n_samples, n_outputs)
    dual : tensor
        ``s`` of shape (n_samples, 1) or ``pi`` of shape (n_samples, n_outputs).
    sigma : float

    Returns
    -------
    values : tensor of shape (n_samples,)
        Differentiable in ``scores`` (the new dual is held fixed: by the
        envelope theorem this is the exact gradient).
    new_dual : tensor, detached
    """
    if scores.shape[1] == 1:
        margin = 1.0 - target * scores
        with torch.no_grad():
            new = torch.clamp(dual + sigma * margin, 0.0, 1.0)
        values = new * margin - (new - dual) ** 2 / (2.0 * sigma)
        return values[:, 0], new
    shifted = scores + 1.0 - target
    with torch.no_grad():
        new = _project_simplex(dual + sigma * shifted)
    values = (new * shifted).sum(dim=1) - (scores * target).sum(dim=1)
    values = values - ((new - dual) ** 2).sum(dim=1) / (2.0 * sigma)
    return values, new


def hinge_dual_point(dual, target):
    """``lam`` of the hinge loss from its dual (``-y s``, or ``pi - e_y``)."""
    if target.shape[1] == 1:
        return -target * dual
    return dual - target
