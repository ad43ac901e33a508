"""The quadratic networks' ``solver="lbfgs"`` fit on Dask collections, data-parallel.

Imported only when a network's ``fit`` meets a Dask collection. Full-batch
L-BFGS needs only the weighted mean loss and its gradient, a sum over rows, so
with :mod:`skquad._dask`'s block machinery (as quadratic logistic regression):
the blocks are validated and persisted where they live; the trainer goes to the
workers once and each evaluation sends only the flat parameters, each block
computing its data term with the in-memory code; the driver runs the in-memory
fit's own L-BFGS (:meth:`~skquad._training.Trainer.fit_data_term`). The
estimator's ``fit`` runs as in memory, with a :class:`NetworkBlocks` as ``X``.
"""

import copy
import dataclasses
import threading

import dask
import numpy as np
import torch
from sklearn.base import is_classifier

from .._dask import (
    WorkerBlocks,
    add_objectives,
    check_total_weight,
    checked_classifier_block,
    checked_regressor_block,
    classifier_rows,
    check_rows,
    merge_regressor_statistics,
    persisted_blocks,
    regressor_statistics,
    set_input_attributes,
    training_blocks,
)
from .._foundation._target_scaling import scaled_targets, scaling_from_moments
from .._foundation._threads import flush_denormals
from ._regressor import check_poisson_targets

__all__ = ["NetworkBlocks", "fit_network_blocks"]


@dataclasses.dataclass
class NetworkBlocks:
    """A network's training rows on Dask, where :meth:`_train` reads ``X``.

    ``shape`` and ``dtype`` are the data's, ``largest_block`` the rows of one
    worker evaluation (the memory check's batch), ``callback_data`` the
    user's collections for scikit-learn's callbacks.
    """

    blocks: object
    shape: tuple
    dtype: np.dtype
    largest_block: int
    total_weight: float
    callback_data: tuple
    n_threads: object
    distributed = True

    def fit(self, trainer, max_iter):
        """The trainer's L-BFGS with its data term summed over the blocks."""
        objective = BlockObjective(self.blocks, trainer, self.total_weight, self.n_threads)
        return trainer.fit_data_term(objective, max_iter)


class _Evaluator:
    """A copy of the trainer, sent once per fit, of which each worker thread takes its own
    (an evaluation writes the parameters and the gradient)."""

    def __init__(self, trainer, n_threads):
        # without the fit's callbacks (they hold the estimator and the data)
        memo = {id(trainer.callback_context): None, id(trainer._callback_options): {}}
        self.trainer = copy.deepcopy(trainer, memo)
        self.n_threads = n_threads
        self._local = threading.local()

    def __getstate__(self):
        state = dict(vars(self))
        del state["_local"]
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self._local = threading.local()

    def working_trainer(self):
        trainer = getattr(self._local, "trainer", None)
        if trainer is None:
            trainer = self._local.trainer = copy.deepcopy(self.trainer)
        return trainer


def _block_objective(block, theta, evaluator, total_weight):
    """``(loss, gradient)`` of one block at ``theta``: the in-memory fit's data term, weights
    (divided by the total) and thread rule on its rows."""
    X, y, w = block[:3]
    trainer = evaluator.working_trainer()
    if X.shape[0] == 0:
        return 0.0, np.zeros(trainer.n_parameters)
    trainer.flat_parameters.copy_(torch.from_numpy(theta))
    X, y, w = trainer.to_device(X, y, w)
    weights = torch.as_tensor(w / total_weight).to(device=trainer.device, dtype=trainer.dtype)
    with trainer.step_threads(X.shape[0], evaluator.n_threads), flush_denormals():
        loss = float(trainer.batch_loss_and_gradient(X, y, weights))
    return loss, trainer.flat_gradient.double().cpu().numpy().copy()


class BlockObjective:
    """``theta -> (loss, gradient)`` summed over the blocks: :func:`fit_trainer_lbfgs`'s data term.

    The trainer goes to the workers once (scattered to every worker on a
    ``distributed`` cluster; one node of each graph otherwise); per call
    only ``theta`` travels to the workers and one ``(loss, gradient)`` per
    worker thread comes back (:class:`skquad._dask.WorkerBlocks`).
    """

    def __init__(self, blocks, trainer, total_weight, n_threads):
        self.blocks = blocks
        self.total_weight = float(total_weight)
        # the estimator's n_threads rule applies on each worker, to its blocks
        evaluator = _Evaluator(trainer, n_threads)
        if isinstance(blocks, WorkerBlocks):
            self._evaluator = blocks._client.scatter(evaluator, broadcast=True, hash=False)
        else:
            self._evaluator = dask.delayed(evaluator, traverse=False)

    def __call__(self, theta):
        loss, gradient = self.blocks.reduce(
            _block_objective, add_objectives, np.asarray(theta, dtype=np.float64),
            self._evaluator, self.total_weight,
        )
        return float(loss), np.asarray(gradient, dtype=np.float64)


# --------------------------------------------------------------------- the route
def _check_route(estimator):
    name = type(estimator).__name__
    if estimator.solver not in ("lbfgs", "auto"):
        extra = ", classes=..." if is_classifier(estimator) else ""
        raise ValueError(
            f"{name} fits Dask collections with solver='lbfgs': full-batch L-BFGS is "
            "data-parallel over the row blocks (the loss and gradient are sums over rows). "
            f"solver={estimator.solver!r} takes stochastic steps; stream the blocks "
            f"through partial_fit instead, with dask_ml.wrappers.Incremental({name}"
            f"(solver={estimator.solver!r}, ...)).fit(X, y{extra})."
        )
    if str(estimator.device) not in ("auto", "cpu"):
        raise ValueError(
            f"{name} computes on the Dask workers' CPUs; got device={estimator.device!r}. "
            "Use device='cpu' (or 'auto') with Dask collections."
        )


def fit_network_blocks(estimator, X, y, sample_weight):
    """A network's ``fit`` on Dask collections: validated, persisted blocks, then ``_start_fit``."""
    _check_route(estimator)
    X_original = X
    X, blocks = training_blocks(X, y, sample_weight)
    classifier = is_classifier(estimator)
    check = checked_classifier_block if classifier else checked_regressor_block
    # Validated once and persisted on the workers for the fit: every L-BFGS
    # evaluation reads them, and the user's graph runs once per block.
    data = persisted_blocks([dask.delayed(check)(*b) for b in blocks], X.chunks[0])
    try:
        prepare = classifier_rows if classifier else _regressor_rows
        dtype, total_weight = prepare(estimator, X_original, X.shape[1], data, y)[:2]
        rows = NetworkBlocks(
            data, (X.shape[0], X.shape[1]), dtype, max(X.chunks[0]), total_weight,
            (X_original, y, sample_weight), estimator.n_threads,
        )
        return estimator._start_fit(rows, None, None)
    finally:
        data.release()


def _target_spread(block, _, mean):
    # the weighted squares about the global mean: a second pass, no cancellation
    _, Y, w = block
    return (w @ (Y - mean) ** 2,)


def _add_spreads(*parts):
    return (sum(part[0] for part in parts),)


def _scale_regression_block(block, shift, scale):
    X, Y, w = block
    return X, scaled_targets(Y, shift, scale), w


def _cast_regression_block(block, dtype):
    # the in-memory validation's casts: X and y in X's dtype
    X, Y, w = block
    return np.ascontiguousarray(X, dtype=dtype), Y.astype(dtype, copy=False), w


def _regressor_rows(estimator, X_original, n_features, data, y):
    """Outputs, targets' checks and dtype, as the in-memory validation sets them."""
    name = type(estimator).__name__
    n_rows, n_outputs, all_float32, smallest, total_weight, weighted_sum, input_range, target_range = data.reduce(
        regressor_statistics, merge_regressor_statistics, None
    )
    check_rows(name, n_rows, n_features)
    check_poisson_targets(estimator.loss, smallest)
    set_input_attributes(estimator, X_original, n_features)
    estimator.n_outputs_ = int(n_outputs)
    estimator._fitted_y_ndim = 1 if np.ndim(y) == 1 else 2
    check_total_weight(estimator, total_weight)
    estimator.data_min_, estimator.data_max_ = input_range
    estimator.target_min_, estimator.target_max_ = target_range
    if not (estimator.warm_start and hasattr(estimator, "layers_")):
        # the in-memory fit's target scaling, from the blocks' weighted moments
        mean = weighted_sum / total_weight
        (spread,) = data.reduce(_target_spread, _add_spreads, None, mean)
        estimator.target_shift_, estimator.target_scale_ = scaling_from_moments(
            mean, spread / total_weight, loss=estimator.loss, enabled=estimator.scale_target,
        )
    data.map(_scale_regression_block, estimator.target_shift_, estimator.target_scale_)
    dtype = np.dtype(np.float32 if all_float32 else np.float64)
    data.map(_cast_regression_block, dtype)
    return dtype, total_weight
