"""``alpha="auto"`` of the network estimators: the weights' penalty chosen on held-out rows.

Each task base names its search (:class:`AlphaSearch`); :func:`chosen_alpha` runs it. The
candidates are fitted on fifths of the rows held out in turn
(:func:`~skquad._foundation._held_out.held_out_splits`: as many as it takes to score 100
rows) and a rule of :mod:`skquad._foundation._held_out` chooses from their errors:

* regressors: where the fit is one L-BFGS run, the one of 100, 10 and 1 of the smallest
  held-out squared error (else 1);
* classifiers: where the fit holds out no validation split (no early stopping),
  MLPClassifier's 1e-4 unless one of 100, 10 and 1 misclassifies fewer held-out rows by more
  than one standard error (else 1e-4). Without early stopping a network trained on few rows
  with a weak signal fits its noise; where 1e-4 holds up, MLPClassifier's network is kept.
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from .._array_api import as_a_user_call, is_tensor, to_numpy
from .._foundation._held_out import MIN_ROWS, every_class_trained, held_out_splits, search_candidate
from .._foundation._rows import duplicate_groups
from .._foundation._torch_utils import seed_from

__all__ = ["AlphaSearch", "chosen_alpha"]


@dataclass(frozen=True)
class AlphaSearch:
    """What a task's ``alpha="auto"`` searches.

    Attributes
    ----------
    alphas : tuple of float
        The candidates, most penalised first.
    unsearched : float
        ``alpha_`` where the fit does not search.
    searches : callable
        ``searches(estimator, solver, n_rows)``: whether a fit by ``solver`` searches.
    errors : callable
        ``errors(y, sample_weight)``: a fresh held-out scorer with ``add`` and
        ``by_candidate`` (:class:`~skquad._foundation._held_out.HeldOutErrors`).
    choose : callable
        ``choose(errors)``: the index of the chosen candidate, from the errors of shape
        (held-out rows, candidates).
    candidate_params : dict
        Settings of the candidates beyond ``alpha`` (class weights, which the sample
        weights the search passes already hold).
    every_class_trained : bool
        Search only where every training part holds every class of a single-label ``y``.
    min_rows : float
        Search only on at least this many rows (counted as their weights).
    """

    alphas: tuple
    unsearched: float
    searches: object
    errors: object
    choose: object
    candidate_params: dict = field(default_factory=dict)
    every_class_trained: bool = False
    min_rows: float = MIN_ROWS


def chosen_alpha(estimator, X, y, sample_weight, *, solver, search):
    """``alpha_`` of a fit: ``alpha``, or for "auto" what ``estimator._alpha_search`` picks.

    ``X``, ``y``, ``sample_weight``: the validated training data (``y`` encoded, class
    weights in ``sample_weight``); ``solver``: the one the fit runs; ``search``: False where
    the fit does not start a new network (``warm_start``, ``partial_fit``, Dask blocks).
    """
    if not isinstance(estimator.alpha, str):
        return float(estimator.alpha)
    spec = estimator._alpha_search
    if not search or float(np.sum(to_numpy(sample_weight))) < spec.min_rows \
            or not spec.searches(estimator, solver, X.shape[0]):
        return spec.unsearched
    # The distinct rows with their summed weights: a weight of 2 and a repeated row are the
    # same search (per-row standard errors would differ were a row split in two).
    rows, weight_host = duplicate_groups(X if is_tensor(X) else to_numpy(X), to_numpy(y),
                                         to_numpy(sample_weight))
    X, y, y_host = X[rows], y[rows], to_numpy(y)[to_numpy(rows)]
    sample_weight = weight_host if not is_tensor(sample_weight) else torch.as_tensor(
        weight_host, dtype=sample_weight.dtype, device=sample_weight.device)
    # a tensor's rows are hashed on its device (row_folds): only the folds come back
    splits = held_out_splits(X if is_tensor(X) else to_numpy(X), weight_host)
    if spec.every_class_trained and y_host.ndim == 1 and not every_class_trained(y_host, splits):
        return spec.unsearched
    settings = dict(solver=solver, warm_start=False, random_state=seed_from(estimator.random_state),
                    **spec.candidate_params)
    errors = spec.errors(y_host, weight_host)
    with warnings.catch_warnings(), as_a_user_call(X):
        # the candidates' own convergence is not the fit's; the final fit reports its own
        warnings.simplefilter("ignore", ConvergenceWarning)
        for train, held_out in splits:
            for alpha in spec.alphas:
                # A new candidate each time: refitting one would first deep-copy the network
                # of its last fit (the fit is atomic), a copy no candidate needs.
                candidate = search_candidate(estimator, alpha=alpha, **settings)
                candidate.fit(X[train], y[train], sample_weight[train])
                errors.add(y_host[held_out], to_numpy(candidate.predict(X[held_out])),
                           weight_host[held_out])
    return spec.alphas[spec.choose(errors.by_candidate(len(spec.alphas)))]
