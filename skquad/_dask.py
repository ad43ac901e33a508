"""Dask collections: data-parallel fits and block-wise predictions.

Imported only when an estimator meets a Dask collection (the routing is in
:mod:`skquad._dask_dispatch`, which does not import Dask).

Fits (:func:`fit_logistic_blocks`, :func:`fit_quadratic_regression`)
never gather ``X`` into one process. The models' objectives are sums over rows,
so each row block (a chunk of a ``dask.array``, a partition of a
``dask.dataframe``) computes its share where it lives, with the same functions
the in-memory fit runs on the whole array (:mod:`skquad.nn.quadratic_form`,
:mod:`skquad.nn.quadratic_ridge`); the shares are added up as a tree (fan-in
``_SPLIT_EVERY``) and only the sums, ``O(K d²)`` numbers, reach the driver:

* quadratic logistic regression: the blocks are validated and their rows
  sorted by label once, and persisted on the workers for the fit's
  duration; from them one pass for the statistics (rows, the classes and
  their counts, the columns' magnitudes), the labels encoded in place, then
  per L-BFGS evaluation the log-loss and its gradient (the pass that sums the
  class weights also takes the inputs' range, ``clip_inputs``'s
  ``data_min_``/``data_max_``), while the driver runs
  the same L-BFGS (:func:`skquad._training.minimize_lbfgs`) as in memory.
  The user's graph (reading files, generating data) runs once per block:
  recomputing it per evaluation would cost more than the gradient. The
  cluster's memory must hold ``X`` once; the driver holds ``O(K d²)``;
* quadratic regression: one pass for the block-centred ``D x D`` normal
  equations (and the inputs' range), merged exactly and solved on the driver.

Computations run on the scheduler ``dask.compute`` would use. On a
``distributed.Client`` the persisted blocks are spread over the workers by
rows and each evaluation is one task per worker thread, pinned to the
worker that holds its blocks (:class:`_WorkerBlocks`); on any other
scheduler one graph per evaluation (:class:`_GraphBlocks`).
"""

import contextlib
import copy
import dataclasses
import functools
import math
import os
import time

import dask
import dask.array as da
import numpy as np
import torch
from sklearn.base import is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_feature_names, check_array, check_is_fitted

from ._foundation._input_range import feature_range, merge_ranges
from ._foundation._memory import check_memory
from ._foundation._reporting import progress_line, warn_user
from ._foundation._threads import choose_thread_count, flush_denormals, limit_threads
from ._training import lbfgs_convergence_message, minimize_lbfgs
from .linear_model._qlr_problem import LBFGS_SETTINGS, Route, Solution, check_feature_scale
from .nn.quadratic_form import (
    QuadraticScores,
    SymmetricPacking,
    float32_twin,
    packed_logistic_objective,
    packed_penalty_weight,
    quadratic_logistic_loss_and_gradient,
    weighted_row_scale,
)

__all__ = [
    "DATA_PARALLEL",
    "classes_and_weights",
    "fit_logistic_blocks",
    "logistic_training_blocks",
    "fit_quadratic_regression",
    "predict_blockwise",
    "score_blockwise",
]

# Fan-in of the reduction tree: partial sums of at most this many blocks (or
# worker threads' tasks) are added on a worker before moving up, so the driver
# receives at most this many K d² sums whatever the number of blocks.
_SPLIT_EVERY = 8


# ----------------------------------------------------------------- collections
def _is_frame(obj):
    return dask.is_dask_collection(obj) and hasattr(obj, "to_dask_array")


def _as_array(obj):
    """A dask array with known row chunks and one chunk across the columns."""
    if _is_frame(obj):
        obj = obj.to_dask_array(lengths=True)
    elif not isinstance(obj, da.Array):
        raise TypeError(
            f"Expected a dask.array or dask.dataframe collection, got {type(obj).__name__}."
        )
    if any(math.isnan(size) for size in obj.chunks[0]):
        obj = obj.compute_chunk_sizes()
    if obj.ndim == 2 and len(obj.chunks[1]) > 1:
        obj = obj.rechunk({1: -1})
    return obj


def _aligned(values, row_chunks, name):
    """``values`` (dask or in-memory) as a dask array chunked along ``row_chunks``."""
    n_rows = sum(row_chunks)
    if dask.is_dask_collection(values):
        values = _as_array(values)
    else:
        values = np.asarray(values)
    if values.ndim == 0 or values.shape[0] != n_rows:
        length = "a scalar" if values.ndim == 0 else values.shape[0]
        raise ValueError(
            "Found input variables with inconsistent numbers of samples: "
            f"[{n_rows}, {length}] (X and {name})."
        )
    if isinstance(values, np.ndarray):
        return da.from_array(values, chunks=(row_chunks,) + values.shape[1:])
    if values.chunks[0] != tuple(row_chunks):
        values = values.rechunk({0: row_chunks})
    return values


def _training_blocks(X, y, sample_weight):
    """``(X, blocks)``: ``X`` as a dask array and one ``(X, y, w)`` delayed triple per row block."""
    X = _as_array(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D X, got {X.ndim} dimension(s).")
    rows = X.chunks[0]
    y = _aligned(y, rows, "y")
    xs = X.to_delayed().ravel()
    ys = y.to_delayed().ravel()
    if sample_weight is None:
        ws = [None] * len(xs)
    else:
        weight = _aligned(sample_weight, rows, "sample_weight")
        if weight.ndim != 1:
            raise ValueError(f"sample_weight must be 1-D, got shape {weight.shape}.")
        ws = list(weight.to_delayed().ravel())
    # Blocks known to hold no rows add nothing to a fit or a score.
    return X, [block for block, n_rows in zip(zip(xs, ys, ws), rows) if n_rows != 0]


def _tree(parts, combine):
    """Reduce delayed ``parts`` pairwise-upward with ``combine(*items)``: one delayed result."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [
            dask.delayed(combine, pure=True)(*parts[i : i + _SPLIT_EVERY])
            for i in range(0, len(parts), _SPLIT_EVERY)
        ]
    return parts[0]


def _active_client():
    """The ``distributed.Client`` that ``dask.compute`` would run on now, or None.

    Dask's own rule (:func:`dask.base.get_scheduler`): a ``scheduler=`` set in
    the configuration wins over a default or current client.
    """
    scheduler = dask.base.get_scheduler()
    client = getattr(scheduler, "__self__", None)
    if client is None or not hasattr(client, "submit") or getattr(client, "asynchronous", False):
        return None
    return client


def _reduce_group(function, combine, args, *blocks):
    """``combine`` of ``function(block, *args)`` over some blocks: one task's share."""
    return combine(*(function(block, *args) for block in blocks))


def _moved(block):
    # a copy of a block under a new key, computed where the task is pinned
    return block


class _GraphBlocks:
    """Persisted blocks reduced by one Dask graph per call (any scheduler).

    Each call builds one task per block (the shared argument travels once)
    and a tree of ``combine`` tasks (fan-in ``_SPLIT_EVERY``).
    """

    def __init__(self, delayed_blocks):
        self._blocks = list(dask.persist(*delayed_blocks))

    def reduce(self, function, combine, shared, *args):
        shared = dask.delayed(shared, pure=True, traverse=False)
        parts = [dask.delayed(function, pure=True)(block, shared, *args) for block in self._blocks]
        (result,) = dask.compute(_tree(parts, combine))
        return result

    def map(self, function, *args):
        """Replace every block by ``function(block, *args)``, persisted."""
        self._blocks = list(
            dask.persist(*[dask.delayed(function)(block, *args) for block in self._blocks])
        )

    def release(self):
        self._blocks = None


class _WorkerBlocks:
    """Persisted blocks on a ``distributed`` cluster, reduced by one task per worker thread.

    Per call the driver submits one task per worker thread, pinned to the
    worker that holds its blocks, which loops over them and returns one sum;
    the driver gathers those sums (through a tree of ``combine`` tasks on the
    workers when there are more than ``_SPLIT_EVERY``): a fraction of the
    latency and client CPU of a graph of one task per block and a reduction
    tree. Pinning also keeps the scheduler from stealing a block's task to
    another worker, which copies the block there and unbalances the
    following calls.

    Blocks are spread over the workers by rows, in proportion to their
    threads: after persisting, blocks are moved (once) from a worker holding
    more than its share to one holding less while that lowers the most loaded
    worker's rows per thread.
    """

    def __init__(self, client, delayed_blocks, rows):
        self._client = client
        futures = client.compute(list(delayed_blocks))
        _wait(futures)
        holders = client.who_has(futures)
        threads = client.nthreads()
        holder = [(list(holders.get(f.key, ())) or [None])[0] for f in futures]
        owner = _balanced_owners(rows, holder, threads)
        moved = {}
        for index, (future, worker) in enumerate(zip(futures, owner)):
            if worker != holder[index]:
                moved[index] = client.submit(
                    _moved, future, workers=[worker], allow_other_workers=True, pure=False
                )
        if moved:
            _wait(list(moved.values()))
            for index, future in moved.items():
                futures[index] = future
        self._groups = []
        for worker in sorted(set(owner)):
            mine = [i for i in range(len(futures)) if owner[i] == worker]
            for group in _split_rows([rows[i] for i in mine], threads.get(worker, 1)):
                self._groups.append((worker, [futures[mine[j]] for j in group]))

    def reduce(self, function, combine, shared, *args):
        client = self._client
        # allow_other_workers: a task whose worker left runs elsewhere (fetching the blocks)
        parts = [
            client.submit(_reduce_group, function, combine, (shared, *args), *blocks,
                          workers=[worker], allow_other_workers=True, pure=False)
            for worker, blocks in self._groups
        ]
        while len(parts) > _SPLIT_EVERY:
            parts = [client.submit(combine, *parts[i : i + _SPLIT_EVERY], pure=False)
                     for i in range(0, len(parts), _SPLIT_EVERY)]
        return combine(*client.gather(parts))

    def map(self, function, *args):
        """Replace every block by ``function(block, *args)``, computed where the block lives.

        The old blocks are released as their replacements are computed.
        """
        client = self._client
        self._groups = [
            (worker, [client.submit(function, block, *args, workers=[worker],
                                    allow_other_workers=True, pure=False) for block in blocks])
            for worker, blocks in self._groups
        ]
        _wait([block for _, blocks in self._groups for block in blocks])

    def release(self):
        self._groups = None


def _wait(futures):
    """Wait for ``futures``; raise the first failed one's error, with its message."""
    from distributed import wait

    wait(futures)
    for future in futures:
        if future.status == "error":
            future.result()


def _balanced_owners(rows, holder, threads):
    """The worker each block is reduced on: its holder, unless moving it balances the rows.

    ``rows[i]`` rows of block ``i`` live on ``holder[i]``; ``threads``: each
    worker's thread count. Moves the smallest block that helps from the
    worker with the most rows per thread to the one with the fewest, while
    that lowers the larger of the two.
    """
    workers = sorted(threads)
    owner = [h if h in threads else workers[0] for h in holder]
    load = {w: 0 for w in workers}
    for r, w in zip(rows, owner):
        load[w] += r

    def per_thread(w, extra=0):
        return (load[w] + extra) / max(1, threads[w])

    for _ in range(len(rows) * len(workers)):
        busiest = max(workers, key=per_thread)
        idlest = min(workers, key=per_thread)
        candidates = [i for i in range(len(rows)) if owner[i] == busiest and rows[i] > 0
                      and per_thread(idlest, rows[i]) < per_thread(busiest)]
        if not candidates:
            break
        index = min(candidates, key=lambda i: rows[i])
        owner[index] = idlest
        load[busiest] -= rows[index]
        load[idlest] += rows[index]
    return owner


def _split_rows(rows, n_groups):
    """Indices of ``rows`` in at most ``n_groups`` groups of nearly equal sums (largest first)."""
    groups = [[] for _ in range(max(1, min(int(n_groups), len(rows))))]
    sums = [0] * len(groups)
    for index in sorted(range(len(rows)), key=lambda i: -rows[i]):
        target = sums.index(min(sums))
        groups[target].append(index)
        sums[target] += rows[index]
    return [sorted(group) for group in groups if group]


def _persisted_blocks(delayed_blocks, rows):
    """The blocks persisted for a fit: on the active distributed client, or through dask.persist."""
    client = _active_client()
    if client is None:
        return _GraphBlocks(delayed_blocks)
    return _WorkerBlocks(client, delayed_blocks, rows)


def _add(*items):
    """Element-wise sum of tuples (or lists) of numbers and arrays."""
    total = list(items[0])
    for item in items[1:]:
        total = [a + b for a, b in zip(total, item)]
    return tuple(total)


def _checked_block(X, dtype):
    # Each worker validates its own block, with scikit-learn's messages.
    return check_array(X, dtype=dtype, ensure_min_samples=0, input_name="X")


def _block_weight(w, n_rows):
    if w is None:
        return np.ones(n_rows)
    w = np.asarray(w, dtype=np.float64)
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must be finite and non-negative.")
    return w


def _check_names(estimator, X, *, reset):
    """scikit-learn's feature-name rules, applied to a dask.dataframe's columns."""
    if _is_frame(X):
        import pandas as pd

        # an empty pandas frame with the same columns: scikit-learn's own checks
        X = pd.DataFrame(columns=X.columns)
    _check_feature_names(estimator, X, reset=reset)


def _set_input_attributes(estimator, X_original, n_features):
    _check_names(estimator, X_original, reset=True)
    estimator.n_features_in_ = int(n_features)


def _check_total_weight(estimator, total):
    # The base's rule for the weights' scale, applied to their (reduced) sum.
    estimator._check_weight_scale(np.array([total]))


# ---------------------------------------------------- quadratic logistic regression
def _checked_classifier_block(X, y, w):
    """A validated block, its rows sorted by label: ``(X, y, w)`` in numpy.

    Sorted by the raw labels, the rows come in the order of the encoded
    classes (:func:`_encoded_block`; the encoding is increasing in the label),
    which the symmetric Gram products of the gradient need, so the block is
    sorted once, before the classes of the whole data are known.
    """
    X = _checked_block(X, (np.float64, np.float32))
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(
            "On Dask collections y must hold 1-D class labels; multilabel y is only "
            "supported in memory."
        )
    if y.shape[0]:
        check_classification_targets(y)
    w = _block_weight(w, X.shape[0])
    order = np.argsort(y, kind="stable")
    return np.ascontiguousarray(X[order]), y[order], w[order]


def _block_statistics(block, _):
    """Rows, column magnitudes, labels with their counts, whether ``X`` is float32."""
    X, y, _w = block
    labels, counts = np.unique(y, return_counts=True)
    magnitude = np.abs(X).max(axis=0) if X.shape[0] else np.zeros(X.shape[1])
    return X.shape[0], magnitude.astype(np.float64), labels, counts, X.dtype == np.float32


def _merge_statistics(*parts):
    n_rows = sum(part[0] for part in parts)
    magnitude = np.maximum.reduce([part[1] for part in parts])
    labels, inverse = np.unique(np.concatenate([part[2] for part in parts]), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([part[3] for part in parts]),
                         minlength=labels.shape[0])
    return n_rows, magnitude, labels, counts, all(part[4] for part in parts)


def _encoded_block(block, classes, per_class_weight, dtype):
    """The evaluations' block: ``(X, y, w, class_blocks)``, labels encoded, class weights applied.

    ``X`` is the checked block's array itself when it already has ``dtype``.
    """
    X, y, w = block
    X = np.ascontiguousarray(X, dtype=dtype)
    encoded = np.searchsorted(classes, y).astype(np.int64)
    if per_class_weight is not None:
        w = w * per_class_weight[encoded]
    counts = np.bincount(encoded, minlength=classes.shape[0])
    bounds = np.concatenate([[0], np.cumsum(counts)])
    class_blocks = [(int(bounds[k]), int(bounds[k + 1])) for k in range(classes.shape[0])]
    return X, encoded, w, class_blocks


def _class_weight_sums(block, _, classes, per_class_weight):
    """Per class, the block's weights with the class weights applied, and the inputs' range over rows of positive weight."""
    X, _, w, class_blocks = _encoded_block(block, classes, per_class_weight, None)
    return np.array([w[start:stop].sum() for start, stop in class_blocks]), feature_range(X, w)


def _merge_class_weight_sums(*parts):
    return sum(part[0] for part in parts), merge_ranges(*(part[1] for part in parts))


@functools.lru_cache(maxsize=4)
def _packing(n_features, allowed=None):
    """The :class:`SymmetricPacking` of ``n_features`` (its index maps built once per process).

    ``allowed``: the interaction constraints' boolean matrix as bytes (hashable), or None.
    """
    if allowed is not None:
        allowed = np.frombuffer(allowed, dtype=bool).reshape(n_features, n_features)
    return SymmetricPacking(n_features, allowed)


def _block_objective(block, theta, total_weight, settings):
    """``(loss, gradient)`` of one block at the flat packed ``theta``, without the penalty.

    The in-memory fit's objective (:func:`packed_logistic_objective`) on this
    block's rows, with its weights divided by the total as the in-memory
    trainer divides them, and its thread and denormal policy.
    """
    X, y, w, class_blocks = block
    n_features = X.shape[1]
    if settings.get("float32"):
        X = X.astype(np.float32)  # the in-memory fit's float32 twin (float32_twin)
    objective = packed_logistic_objective(
        X, y, (w / total_weight).astype(X.dtype, copy=False),
        _packing(n_features, settings.get("allowed")),
        settings["n_scores"], 0.0, cross_weight=settings["cross_weight"],
        fit_intercept=settings["fit_intercept"], class_blocks=class_blocks,
    )
    threads = choose_thread_count(3.0 * settings["n_scores"] * X.shape[0] * n_features**2)
    with limit_threads(threads), flush_denormals():
        return objective(theta)


def _logistic_loss_and_gradient(X, y, w, params, l2, *, fit_intercept, cross_weight,
                                 class_blocks, dtype):
    """``(loss, [gradients])`` of the trainable parameters on one block (or the penalty alone).

    The in-memory fit's function (:func:`quadratic_logistic_loss_and_gradient`),
    run on this block's rows with the driver's parameters.
    """
    tensors = [torch.from_numpy(np.asarray(p)).to(dtype) for p in params]
    module = QuadraticScores(tensors, fit_intercept=fit_intercept)
    trainable = [p for p in module.parameters() if p.requires_grad]
    for parameter in trainable:
        parameter.grad = torch.zeros_like(parameter)
    function = quadratic_logistic_loss_and_gradient(
        module, l2, cross_weight=cross_weight, class_blocks=class_blocks
    )
    # the in-memory trainer's thread and denormal policy, per block
    n_features = X.shape[1]
    threads = choose_thread_count(3.0 * params[0].shape[0] * X.shape[0] * n_features * n_features)
    with torch.no_grad(), limit_threads(threads), flush_denormals():
        loss = function(
            torch.from_numpy(X).to(dtype),
            torch.from_numpy(y),
            torch.from_numpy(w).to(dtype),
        )
    return float(loss), np.concatenate([p.grad.double().numpy().ravel() for p in trainable])


def _factored_block_objective(block, params, total_weight, settings):
    """``(loss, gradient)`` of one block for a low-rank ``Q`` (``rank``): the in-memory
    fit's autograd objective on the factors, flat over the trainable parameters."""
    X, y, w, class_blocks = block
    # the in-memory trainer's normalisation: weights divided by their sum
    return _logistic_loss_and_gradient(
        X, y, w / total_weight, params, 0.0, class_blocks=class_blocks, **settings
    )


def _block_row_scale(block, _, total_weight):
    """The block's part of :func:`~skquad.nn.quadratic_form.weighted_row_scale`, weights over the total."""
    X, _y, w, _blocks = block
    return (weighted_row_scale(X, w / total_weight),)


def _add_objectives(*parts):
    return sum(part[0] for part in parts), sum(part[1] for part in parts)


class _NonFinite(Exception):
    pass


def _packed_problem(tensors, l2, fit_intercept, cross_weight, dtype, allowed=None):
    """The in-memory fit's L-BFGS problem for a full ``Q``.

    Each ``Q_k`` as its packed upper triangle (``sqrt(2) Q_ij`` off the
    diagonal), then ``coef`` and the intercepts (when fitted); the blocks
    compute :func:`packed_logistic_objective`, the driver its diagonal
    penalty; the stopping test reads the full matrix's entries and L-BFGS
    keeps the in-memory fit's correction pairs.

    Returns ``(theta0, block_objective, settings, penalty, unflatten,
    gradient_scale)``: ``settings(theta)`` gives the blocks'
    arguments before the total weight, ``penalty(theta)`` its value and
    gradient, ``unflatten(theta)`` the ``[Q, coef, intercept]`` tensors in
    the computation dtype. ``allowed``: the interaction constraints (bytes, see
    :func:`_packing`), the entries packed.
    """
    n_scores, n_features = tensors[1].shape
    packing = _packing(n_features, allowed)
    n_packed, n_coef = n_scores * packing.rows.size, n_scores * n_features
    weight = packed_penalty_weight(
        packing, n_scores, l2, cross_weight=cross_weight, fit_intercept=fit_intercept
    )
    scale = np.ones(weight.shape[0])
    scale[:n_packed] = np.tile(packing.scale, n_scores)
    options = {"n_scores": n_scores, "fit_intercept": fit_intercept, "cross_weight": cross_weight,
               "allowed": allowed}
    intercept = tensors[2]

    def penalty(theta):
        weighted = weight * theta
        return 0.5 * float(weighted @ theta), weighted

    def unflatten(theta):
        values = torch.from_numpy(theta).to(dtype)
        Q = packing.unpack(values[:n_packed].reshape(n_scores, -1))
        coef = values[n_packed : n_packed + n_coef].reshape(n_scores, n_features)
        return [Q, coef, values[n_packed + n_coef :] if fit_intercept else intercept]

    theta0 = np.concatenate(
        [packing.pack(tensors[0]).numpy().ravel(), tensors[1].numpy().ravel()]
        + ([intercept.numpy()] if fit_intercept else [])
    ).astype(np.float64)
    return theta0, _block_objective, lambda theta: (theta, options), penalty, unflatten, scale


def _factored_problem(tensors, l2, fit_intercept, cross_weight, dtype):
    """:func:`_packed_problem` for a low-rank ``Q`` (``rank``): the factors, flat, by autograd."""
    params = [t.numpy() for t in tensors]
    trainable = [i for i in range(len(params)) if fit_intercept or i != len(params) - 1]
    sizes = [params[i].size for i in trainable]
    options = {"fit_intercept": fit_intercept, "cross_weight": cross_weight, "dtype": dtype}
    empty = (np.zeros((0, params[-2].shape[1]), params[0].dtype), np.zeros(0, np.int64),
             np.zeros(0, params[0].dtype))

    def unflatten(theta):
        current = [p.copy() for p in params]
        for index, piece in zip(trainable, np.split(theta, np.cumsum(sizes)[:-1])):
            current[index] = piece.reshape(params[index].shape)
        return current

    def penalty(theta):
        # the same function on no rows, with the L2 strength
        return _logistic_loss_and_gradient(
            *empty, unflatten(theta), l2, class_blocks=None, **options
        )

    def as_tensors(theta):
        return [torch.from_numpy(np.asarray(p)).to(dtype) for p in unflatten(theta)]

    theta0 = np.concatenate([params[i].ravel() for i in trainable]).astype(np.float64)
    return (theta0, _factored_block_objective, lambda theta: (unflatten(theta), options), penalty,
            as_tensors, None)


@dataclasses.dataclass
class BlockRows:
    """QLR's training data on Dask collections, as its drivers read it.

    ``blocks``: the persisted, checked blocks (:func:`_persisted_blocks`);
    their statistics: the columns' largest magnitudes, the classes, the
    per-class weights (``class_weight``), the data's dtype and total weight.
    """

    blocks: object
    n_features: int
    n_rows: int
    magnitude: np.ndarray
    classes: np.ndarray
    per_class: np.ndarray
    dtype: np.dtype
    total_weight: float
    given = None
    distributed = True


@contextlib.contextmanager
def logistic_training_blocks(estimator, X, y, sample_weight):
    """:meth:`QuadraticLogisticRegression.fit`'s data on Dask collections: :class:`BlockRows`.

    Sets the input attributes and ``classes_``; the blocks are released on
    the workers when the block ends.
    """
    name = type(estimator).__name__
    if estimator.solver not in ("auto", "lbfgs"):
        raise ValueError(
            f"{name} fits Dask collections with solver='auto' or 'lbfgs' (L-BFGS: the "
            f"full-batch objective is a sum over blocks); got solver={estimator.solver!r}. "
            "For stochastic "
            f"training stream the blocks with dask_ml.wrappers.Incremental({name}"
            "(solver='sgd')), which calls partial_fit on each block."
        )
    if str(estimator.device) not in ("auto", "cpu"):
        raise ValueError(
            f"{name} computes on the Dask workers' CPUs; got device={estimator.device!r}. "
            "Use device='cpu' (or 'auto') with Dask collections."
        )
    X_original = X
    X, blocks = _training_blocks(X, y, sample_weight)
    # Validated and sorted once, then persisted on the workers for the fit:
    # the statistics pass and every L-BFGS evaluation read them, and the
    # user's graph (reading files, generating data) runs once.
    data = _persisted_blocks(
        [dask.delayed(_checked_classifier_block)(*b) for b in blocks], X.chunks[0]
    )
    try:
        yield _block_rows(estimator, X_original, X.shape[1], data)
    finally:
        data.release()  # releases the persisted blocks on the workers


def classes_and_weights(estimator, X_original, n_features, data, n_rows, classes, counts):
    """Publish the input attributes and ``classes_``; return the per-class weights and total weight.

    What the in-memory validation of a classifier checks, on the blocks' reduced counts:
    at least two classes, and two with positive weight after ``class_weight``.
    """
    name = type(estimator).__name__
    _set_input_attributes(estimator, X_original, n_features)
    estimator._multilabel = False
    estimator.classes_ = classes
    if classes.shape[0] < 2:
        raise ValueError(
            f"{name} needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes[0]!r}."
        )
    per_class = None
    if estimator.class_weight == "balanced":
        per_class = n_rows / (classes.shape[0] * counts)
    elif estimator.class_weight is not None:
        per_class = estimator._class_weights(estimator.class_weight, np.arange(classes.shape[0]))
    class_weights, (estimator.data_min_, estimator.data_max_) = data.reduce(
        _class_weight_sums, _merge_class_weight_sums, None, classes, per_class
    )
    total_weight = float(class_weights.sum())
    _check_total_weight(estimator, total_weight)
    if np.count_nonzero(class_weights > 0) < 2:
        raise ValueError(
            f"{name} needs samples of at least 2 classes with positive weight, but after "
            "applying sample_weight and class_weight only one class is left: "
            f"{classes[class_weights > 0].tolist()!r}."
        )
    return per_class, total_weight


def _block_rows(estimator, X_original, n_features, data):
    """The statistics of the checked blocks ``data``, validated as the in-memory fit validates."""
    name = type(estimator).__name__
    (n_rows, magnitude, classes, counts, all_float32) = data.reduce(
        _block_statistics, _merge_statistics, None
    )
    if n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape=(0, {n_features})) while a minimum of 1 is required by {name}.")
    check_feature_scale(magnitude[None, :], name)
    per_class, total_weight = classes_and_weights(estimator, X_original, n_features, data, n_rows,
                                                  classes, counts)
    dtype = np.dtype(np.float32 if all_float32 else np.float64)
    return BlockRows(data, n_features, n_rows, magnitude, classes, per_class, dtype, total_weight)


def fit_logistic_blocks(problem, data):
    """QLR's data-parallel driver: L-BFGS on the driver, the objective's shares on the blocks."""
    policy, blocks, n_features = problem.policy, data.blocks, data.n_features
    blocks.map(_encoded_block, data.classes, data.per_class, policy.numpy_dtype)
    make = _factored_problem
    allowed = None if problem.allowed is None else problem.allowed.tobytes()
    if problem.rank is None:
        make = functools.partial(_packed_problem, allowed=allowed)
    theta0, block_objective, settings, penalty, unflatten, gradient_scale = make(
        problem.initial_params(), problem.l2, problem.fit_intercept, problem.cross_weight,
        policy.dtype,
    )
    total_weight, best = data.total_weight, {"loss": math.inf, "theta": theta0}

    def evaluate(theta, float32=False):
        shared, options = settings(theta)
        loss, gradient = blocks.reduce(
            block_objective, _add_objectives, shared, total_weight,
            dict(options, float32=True) if float32 else options,
        )
        penalty_value, penalty_gradient = penalty(theta)
        return float(loss) + penalty_value, gradient + penalty_gradient

    def objective(theta):
        loss, gradient = evaluate(theta)
        if not (math.isfinite(loss) and np.all(np.isfinite(gradient))):
            raise _NonFinite
        if loss < best["loss"]:
            best.update(loss=loss, theta=theta.copy())
        return loss, gradient

    # the in-memory fit's float32 twin (see minimize_lbfgs), on the same rule
    twin = coarse = None
    if problem.rank is None and policy.numpy_dtype == np.float64:
        (row_scale,) = blocks.reduce(_block_row_scale, _add, None, total_weight)
        twin = float32_twin(
            data.magnitude, row_scale, problem.n_scores, _packing(n_features, allowed)
        )
    if twin is not None:
        coarse = lambda theta: evaluate(theta, float32=True)
        vars(coarse).update(twin)
    estimator, started, curve = problem.estimator, time.perf_counter(), []

    def on_iteration(iteration, loss, theta):
        curve.append(loss)
        if estimator.verbose:
            print(progress_line(iteration, loss, time.perf_counter() - started), flush=True)
        return False

    # The driver's work is O(K d²) per step (L-BFGS's vector updates, the
    # penalty): the policy's one thread, as the in-memory trainer's L-BFGS.
    threads, result = policy.n_threads, None
    try:
        with limit_threads(threads, blas=threads):
            result = minimize_lbfgs(
                objective, theta0, max_iter=estimator.max_iter, max_fun=estimator.max_fun,
                tol=estimator.tol, on_iteration=on_iteration, gradient_scale=gradient_scale,
                coarse_objective=coarse, **LBFGS_SETTINGS,
            )
    except _NonFinite:
        pass
    # no finite evaluation: the start is kept, reported as diverged
    diverged = result is None or not math.isfinite(best["loss"])
    if diverged:
        warn_user(
            "Training diverged: the loss or its gradient became NaN or infinite. The best "
            "parameters seen were kept. Try standardized features (e.g. "
            "dask_ml.preprocessing.StandardScaler in a Pipeline) or a smaller C.",
            ConvergenceWarning,
        )
    else:
        message = lbfgs_convergence_message(
            result, estimator.max_iter, estimator.max_fun,
            "Standardise the features (e.g. dask_ml.preprocessing.StandardScaler) or lower C.",
        )
        if message is not None:
            warn_user(message, ConvergenceWarning)
    # fitted arrays in the computation dtype, as the in-memory fit stores them
    return Solution(unflatten(best["theta"]), len(curve), best["loss"], diverged)


DATA_PARALLEL = Route(
    "lbfgs", fit_logistic_blocks,
    # the driver's process holds the parameters only, on its CPU and one thread
    lambda problem, n_rows: (None, problem.lbfgs_memory(0)), {"device": "cpu", "n_threads": 1},
)


# ------------------------------------------------------------- quadratic regression
def _regression_block(X, Y, w):
    X = _checked_block(X, (np.float64, np.float32))
    Y = check_array(np.asarray(Y).reshape(X.shape[0], -1), dtype=np.float64,
                    ensure_min_samples=0, input_name="y")
    return X, Y, _block_weight(w, X.shape[0])


def _block_regression_statistics(X, Y, w, fit_intercept, allowed=None):
    """One block's ``(rows, float32?, W, m, ȳ, G, R, range)``, centred at its own weighted means.

    ``G = Σ w (φ - m)(φ - m)ᵀ`` and ``R = Σ w (φ - m)(y - ȳ)ᵀ`` with ``m``, ``ȳ``
    this block's means (zeros without an intercept, where the sums simply add);
    ``range`` is the inputs' over the rows of positive weight (``clip_inputs``).
    """
    from .nn.quadratic_ridge import normal_equations, weighted_sums

    X, Y, w = _regression_block(X, Y, w)
    total, feature_sums, target_sums = weighted_sums(X, Y, w, allowed)
    if fit_intercept and total > 0:
        mean, y_mean = feature_sums / total, target_sums / total
    else:
        mean, y_mean = np.zeros_like(feature_sums), np.zeros_like(target_sums)
    G, R = normal_equations(X, Y, w, mean, y_mean, allowed)
    return X.shape[0], X.dtype == np.float32, total, mean, y_mean, G, R, feature_range(X, w)


def _merge_regression_statistics(*parts):
    """Blocks' centred statistics merged into those of their union, in one pass.

    Chan, Golub & LeVeque's pairwise update: for blocks ``a`` and ``b`` with
    weights ``Wa``, ``Wb`` and means differing by ``δ = m_b - m_a`` (``δy`` for
    ``y``), the union's centred sums are ``G_a + G_b + (Wa Wb / W) δ δᵀ`` and
    ``R_a + R_b + (Wa Wb / W) δ δyᵀ``, about ``m = m_a + δ Wb / W``. Exact
    algebra; unlike summing uncentred moments and centring at the end, it never
    subtracts two large degree-4 sums, so it keeps the two-pass accuracy.
    Without an intercept every mean is zero and the update is a plain sum.
    """
    rows, all_float32, W, mean, y_mean, G, R, _ = parts[0]
    G, R = G.copy(), R.copy()
    for rows_b, float32_b, W_b, mean_b, y_mean_b, G_b, R_b, _ in parts[1:]:
        rows += rows_b
        all_float32 = all_float32 and float32_b
        total = W + W_b
        G += G_b
        R += R_b
        if W > 0 and W_b > 0:
            delta, delta_y = mean_b - mean, y_mean_b - y_mean
            share = W * W_b / total
            G += share * np.outer(delta, delta)
            R += share * np.outer(delta, delta_y)
            mean = mean + delta * (W_b / total)
            y_mean = y_mean + delta_y * (W_b / total)
        elif W_b > 0:
            mean, y_mean = mean_b, y_mean_b
        W = total
    return rows, all_float32, W, mean, y_mean, G, R, merge_ranges(*(part[7] for part in parts))


def gathered_if_kernel(estimator, X, y, sample_weight):
    """``(X, y, sample_weight)`` computed, when the in-memory fit would take the kernel path, else None.

    With fewer rows than quadratic features (``n < D``) the in-memory fit
    solves the ``n x n`` dual instead of the ``D x D`` normal equations that
    every block would otherwise build (D² per block, D = d(d+3)/2); such
    data are small enough to gather. Unknown row counts (a dask.dataframe)
    keep the blockwise path.
    """
    X_array = _as_array(X)
    n_rows = sum(X_array.chunks[0]) if X_array.ndim == 2 else np.nan
    if X_array.ndim != 2 or not np.isfinite(n_rows) or estimator.solver != "auto":
        return None
    if estimator._choose_solver(int(n_rows), X_array.shape[1]) != "kernel":
        return None
    check_memory(
        8.0 * n_rows * (X_array.shape[1] + 3 * n_rows), "X", f"a {type(X).__name__}",
        "gathering it for the kernel path (fewer rows than quadratic features)",
        advice="fit on fewer rows.",
    )
    return dask.compute(X, y, sample_weight)


def fit_quadratic_regression(estimator, X, y, sample_weight):
    """:meth:`QuadraticRegression.fit` on Dask collections: the normal equations, reduced."""
    from .linear_model._interactions import estimator_entries
    from .linear_model._regression import publish_penalties, publish_quadratic_model
    from .nn.quadratic_ridge import expansion_size, solve_normal_equations

    name = type(estimator).__name__
    X_original = X
    y_ndim = 1 if (y.ndim if hasattr(y, "ndim") else np.ndim(y)) == 1 else 2
    X, blocks = _training_blocks(X, y, sample_weight)
    n_features = X.shape[1]
    _check_names(estimator, X_original, reset=True)  # names first: interaction_cst may use them
    allowed = estimator_entries(estimator, n_features)
    D = expansion_size(n_features, allowed)
    solver = estimator.solver
    if solver == "auto":
        solver = "cholesky"
    if solver != "cholesky":
        raise ValueError(
            f"{name} fits Dask collections with solver='cholesky' (or 'auto'): the "
            f"{D} x {D} normal equations are sums over blocks, solved on the driver. "
            f"solver={estimator.solver!r} needs all the rows in one process."
        )
    # Each block's D x D statistics, those of the blocks in flight and the
    # merge's: estimated before any is built.
    from .linear_model._regression import check_regression_memory

    in_flight = min(len(blocks), os.cpu_count() or 1)
    check_regression_memory("cholesky", D, 0, 1, copies=in_flight + 1)
    # One pass over the user's graph: each block's statistics about its own
    # means, merged exactly (_merge_regression_statistics).
    (n_rows, all_float32, total, mean, y_mean, G, R, input_range), = dask.compute(
        _tree(
            [dask.delayed(_block_regression_statistics)(*b, estimator.fit_intercept, allowed)
             for b in blocks],
            _merge_regression_statistics,
        )
    )
    if n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) while a minimum of 1 is required by {name}.")
    _set_input_attributes(estimator, X_original, n_features)
    _check_total_weight(estimator, total)
    n_outputs = y_mean.shape[0]
    if isinstance(estimator.alpha, str):
        alpha, quadratic_alpha = _auto_penalties(estimator, blocks, n_rows, total, n_outputs)
    else:
        alpha = estimator._checked_alpha(n_outputs)
        quadratic_alpha = estimator.quadratic_alpha
        if quadratic_alpha is not None and np.any(np.asarray(alpha) == 0):
            raise ValueError("quadratic_alpha needs a positive alpha; got alpha=0.")
    with np.errstate(over="ignore", invalid="ignore"):
        coefficients, intercept = solve_normal_equations(
            G, R, mean, y_mean, alpha, quadratic_alpha, n_features)
    if not (np.all(np.isfinite(coefficients)) and np.all(np.isfinite(intercept))):
        raise ValueError(
            f"{name} could not fit X: the degree-4 products of the quadratic features "
            "overflow. Scale the features, e.g. with dask_ml.preprocessing.StandardScaler."
        )
    estimator.n_outputs_ = n_outputs
    estimator._fitted_y_ndim = y_ndim
    estimator.data_min_, estimator.data_max_ = input_range
    publish_quadratic_model(
        estimator, coefficients, intercept, n_features, np.float32 if all_float32 else np.float64,
        allowed,
    )
    estimator.n_iter_ = np.ones(n_outputs, dtype=np.int64)
    estimator.solver_ = "cholesky"
    publish_penalties(estimator, alpha, quadratic_alpha)
    return estimator


def _every_kth_row(X, Y, w, k):
    X, Y, w = _regression_block(X, Y, w)
    return X[::k], Y[::k], w[::k]


def _auto_penalties(estimator, blocks, n_rows, total_weight, n_outputs):
    """``alpha="auto"`` on Dask: the in-memory rule's leave-one-out on every k-th row of
    each block (at most about 2,000 rows, gathered), scaled to the weight of all rows."""
    from .linear_model._regression import _AUTO_MAX_ROWS, check_degree4_range

    k = -(-n_rows // _AUTO_MAX_ROWS)
    parts = dask.compute(*[dask.delayed(_every_kth_row)(*b, k) for b in blocks])
    X = np.concatenate([part[0] for part in parts])
    Y = np.concatenate([part[1] for part in parts]).reshape(-1, n_outputs)
    w = np.concatenate([part[2] for part in parts])
    check_degree4_range(estimator, X)
    return estimator._selected_penalties(X, Y, w, total_weight)


# -------------------------------------------------------------------- prediction
def _as_frame_block(block, feature_names):
    """A numpy block with the fitted column names, so scikit-learn's name checks pass."""
    if feature_names is None:
        return block
    import pandas as pd

    return pd.DataFrame(block, columns=feature_names, copy=False)


def _call(block, estimator, method, feature_names):
    if block.shape[0] == 0:
        # a block of zero rows (scikit-learn's validation refuses an empty X)
        return _output_template(estimator, method, block.shape[1], feature_names)[:0]
    return getattr(estimator, method)(_as_frame_block(block, feature_names))


def _output_template(estimator, method, n_features, feature_names):
    """One prediction on a row of zeros: the output's trailing shape and dtype."""
    return _call(np.zeros((1, n_features)), estimator, method, feature_names)


def predict_blockwise(estimator, method, X):
    """``estimator.<method>(X)`` as a dask array computed block by block on the workers.

    As dask-ml's ``ParallelPostFit``: the fitted estimator travels with the
    graph, each row block is predicted where it lives, and the result has
    ``X``'s row chunks (unknown sizes for a dask.dataframe, whose partitions
    are predicted as they are).
    """
    check_is_fitted(estimator)
    # A shallow copy travels with the graph: a fit published before the graph
    # is computed replaces the live estimator's state, not this model's.
    estimator = copy.copy(estimator)
    names = getattr(estimator, "feature_names_in_", None)
    if _is_frame(X):
        _check_names(estimator, X, reset=False)
        if len(X.columns) != estimator.n_features_in_:
            raise ValueError(
                f"X has {len(X.columns)} features, but {type(estimator).__name__} is "
                f"expecting {estimator.n_features_in_} features as input."
            )
        template = _output_template(estimator, method, estimator.n_features_in_, names)
        meta = np.empty((0,) + template.shape[1:], dtype=template.dtype)
        return X.map_partitions(_call, estimator, method, names, meta=meta)
    X = _as_array(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D X, got {X.ndim} dimension(s).")
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    template = _output_template(estimator, method, X.shape[1], names)
    if template.ndim == 1:
        return X.map_blocks(
            _call, estimator, method, names, dtype=template.dtype, drop_axis=1,
            chunks=(X.chunks[0],), meta=np.empty((0,), dtype=template.dtype),
        )
    return X.map_blocks(
        _call, estimator, method, names, dtype=template.dtype,
        chunks=(X.chunks[0], template.shape[1:]),
        meta=np.empty((0, 0), dtype=template.dtype),
    )


def _score_block(X, y, w, estimator, names, classifier):
    prediction = _call(X, estimator, "predict", names)  # (an empty partition of a frame too)
    y = np.asarray(y)
    w = _block_weight(w, X.shape[0])
    if classifier:
        correct = prediction == y.reshape(prediction.shape)
        if correct.ndim == 2:  # multilabel: subset accuracy, as accuracy_score
            correct = correct.all(axis=1)
        return w @ correct, w.sum()
    Y = y.reshape(X.shape[0], -1).astype(np.float64)
    P = np.asarray(prediction, dtype=np.float64).reshape(Y.shape)
    return (w @ np.square(Y - P),)


def _target_sums(y, w):
    Y = np.asarray(y, dtype=np.float64)
    Y = Y.reshape(Y.shape[0], -1)
    w = _block_weight(w, Y.shape[0])
    return w.sum(), w @ Y


def _target_spread(y, w, y_mean):
    Y = np.asarray(y, dtype=np.float64)
    Y = Y.reshape(Y.shape[0], -1)
    return (_block_weight(w, Y.shape[0]) @ np.square(Y - y_mean),)


def score_blockwise(estimator, X, y, sample_weight=None):
    """``estimator.score(X, y)`` reduced block by block: a float, as scikit-learn's ``score``.

    Accuracy (classifiers) or R² (regressors, averaged uniformly over the
    outputs, as :func:`~sklearn.metrics.r2_score`). Only per-block sums travel;
    the predictions are never gathered.
    """
    check_is_fitted(estimator)
    estimator = copy.copy(estimator)  # one model throughout (see predict_blockwise)
    classifier = is_classifier(estimator)
    names = getattr(estimator, "feature_names_in_", None)
    _check_names(estimator, X, reset=False)
    X, blocks = _training_blocks(X, y, sample_weight)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    scores = [dask.delayed(_score_block)(*b, estimator, names, classifier) for b in blocks]
    if classifier:
        correct, total = dask.compute(_tree(scores, _add))[0]
        return float(correct / total)
    total, target_sums = dask.compute(
        _tree([dask.delayed(_target_sums)(yb, wb) for _, yb, wb in blocks], _add)
    )[0]
    y_mean = target_sums / total
    spread = _tree([dask.delayed(_target_spread)(yb, wb, y_mean) for _, yb, wb in blocks], _add)
    (residual,), (denominator,) = dask.compute(_tree(scores, _add), spread)
    # scikit-learn's r2_score with force_finite=True: constant targets score 1 or 0
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(denominator > 0, 1.0 - residual / denominator,
                      np.where(residual == 0, 1.0, 0.0))
    return float(np.mean(r2))
