"""QuadraticLogisticRegression's ``quadratic_C``: the penalty on ``Q`` apart from ``w``'s.

With ``quadratic_C`` the objective is ``C sum_i s_i l_i + 1/2 (C / quadratic_C) P(Q) +
1/2 ||w||^2``; ``quadratic_C = C`` is the pipeline's problem. ``"auto"`` chooses it on
held-out rows among :data:`AUTO_FRACTIONS` of ``C`` (the rule of
:mod:`skquad._foundation._held_out`: log-loss on held-out fifths, Breiman's one standard
error towards the stronger penalty). A model with ``d`` inputs has ``d (d + 1) / 2``
quadratic coefficients against ``d`` linear ones, so one strength for both either starves
the linear part or lets the quadratic one fit the noise; the fractions run from the
pipeline's problem to one whose quadratic part is nearly off (``LogisticRegression(C)``).
"""

import numpy as np
import torch
from sklearn.base import clone

from .._foundation._held_out import can_hold_out, held_out_splits, one_standard_error_choice, search_candidate
from .._foundation._rows import duplicate_groups
from .._foundation._input_range import clip_to_range
from .._foundation._torch_utils import to_numpy
from ..nn.quadratic_form import log_loss_per_sample
from ._interactions import indexed_groups
from ._qlr_problem import column_magnitudes, evaluation_flops, is_well_scaled
from ._sparse_q import SPARSE_PENALTIES

__all__ = ["AUTO_FRACTIONS", "AUTO_SEARCH_MAX_FLOPS", "fit_quadratic_C", "fixed_quadratic_C"]

# The candidates of "auto", as fractions of C, the most penalised first.
AUTO_FRACTIONS = (1e-3, 1e-2, 1e-1, 1.0)
# "auto" searches where one evaluation of the objective (evaluation_flops: 3 K n d^2) costs
# at most this: the search fits every candidate on each fifth it holds out, a multiple of
# the fit's own cost that large problems should not pay unasked. Above it, "auto" is C.
AUTO_SEARCH_MAX_FLOPS = 1e9


def fixed_quadratic_C(estimator):
    """The ``quadratic_C`` of a fit that does not search: the number given, else None (``C``).

    Refuses a number where the problem has no L2 penalty on ``Q`` to weigh.
    """
    value = estimator.quadratic_C
    if value is None or isinstance(value, str):
        return None
    if estimator.penalty in SPARSE_PENALTIES:
        raise ValueError(
            f"quadratic_C weighs the L2 penalties ('polynomial', 'frobenius'), not "
            f"penalty={estimator.penalty!r}, whose C sets the selection of pairs: leave "
            "quadratic_C='auto' or None."
        )
    if np.isinf(estimator.C):
        raise ValueError(f"quadratic_C={value!r} needs a finite C (C=inf fits without a "
                         "penalty): pass a number as C, or leave quadratic_C='auto' or None.")
    return float(value)


def _searches(estimator, n_rows, n_features, total_weight):
    """Whether ``"auto"`` chooses on held-out rows: a convex full-batch L2 fit in memory (a
    full ``Q``: a low-rank fit's local optimum depends on its start as much as on the
    penalty) with a finite ``C``, rows to hold out, features the fit does not warn about
    (their fits would not converge either) and an objective that costs at most
    :data:`AUTO_SEARCH_MAX_FLOPS`."""
    flops = evaluation_flops(estimator._n_scores, n_rows, n_features, n_features)
    bounds = (estimator.data_min_, estimator.data_max_)
    return (estimator.quadratic_C == "auto" and estimator.solver != "sgd"
            and estimator.rank is None
            and estimator.penalty not in SPARSE_PENALTIES and np.isfinite(estimator.C)
            and can_hold_out(total_weight) and flops <= AUTO_SEARCH_MAX_FLOPS
            and is_well_scaled(column_magnitudes(bounds)))


def fit_quadratic_C(estimator, X, y_encoded, sample_weight):
    """The ``quadratic_C`` of ``fit`` on validated rows (None: ``C``).

    ``"auto"``: each candidate is fitted on the training rows of the held-out splits, along
    a path from the strongest penalty (``_fit_path``: warm starts and shared L-BFGS pairs,
    or cold Newton solves where the rule takes them), and scored by
    the weighted log-loss of each held-out row. The splits are drawn on the distinct rows
    with their summed weights, so that a weight of 2 and a repeated row choose alike. Where
    a training split lacks a class, no candidate can be scored: ``C``.
    """
    if not _searches(estimator, X.shape[0], X.shape[1], float(np.sum(sample_weight))):
        return fixed_quadratic_C(estimator)
    rows, weight = duplicate_groups(X, y_encoded, sample_weight)
    X, y_encoded, labels = X[rows], y_encoded[rows], estimator.classes_[y_encoded[rows]]
    C = float(estimator.C)
    candidates = [C * fraction for fraction in AUTO_FRACTIONS]
    # The folds are validated arrays (constraints by name become indices) whose weights hold
    # the class weights of all of y already, as QuadraticLogisticRegressionCV's folds.
    groups = indexed_groups(estimator.interaction_cst, X.shape[1],
                            getattr(estimator, "feature_names_in_", None))
    model = search_candidate(estimator, quadratic_C=None, warm_start=True, verbose=0,
                             interaction_cst=groups, class_weight=None)
    errors = []
    for train, held_out in held_out_splits(X, weight):
        if np.unique(y_encoded[train]).shape[0] != estimator.classes_.shape[0]:
            return None
        fold = clone(model)
        path = fold._fit_path(X[train], labels[train], weight[train], [C] * len(candidates),
                              quadratic_Cs=candidates)
        errors.append(np.column_stack([_log_losses(fitted, X[held_out], y_encoded[held_out])
                                       for fitted in path]) * weight[held_out, None])
    return candidates[one_standard_error_choice(np.concatenate(errors))]


def _log_losses(model, X, y_encoded):
    """Each row's log-loss under ``model`` (which knows every class), on its inputs as its
    predictions read them (clipped to its training range with ``clip_inputs``)."""
    if model.clip_inputs:
        bounds = model.data_min_, model.data_max_
        if isinstance(X, torch.Tensor):  # (the array API's tensors: the bounds follow them)
            bounds = [torch.as_tensor(bound, device=X.device) for bound in bounds]
        X = clip_to_range(X, *bounds)
    with torch.no_grad():
        scores = torch.as_tensor(model._raw_scores(X), dtype=torch.float64)
        losses = log_loss_per_sample(scores, torch.as_tensor(y_encoded, device=scores.device))
    return to_numpy(losses)
