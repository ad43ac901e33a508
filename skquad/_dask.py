"""Dask collections: the block machinery of the data-parallel fits, and block-wise predictions.

Imported only when an estimator meets a Dask collection (the routing is in
:mod:`skquad._dask_dispatch`, which does not import Dask). The data-parallel
fits live beside their estimators (``linear_model/_dask.py``,
``neural_network/_dask.py``, ``quantized/_dask.py``) and share what is here:
the row blocks, validated where they live; their shares added up as a tree
(fan-in ``_SPLIT_EVERY``), so that only sums reach the driver; the classifier's
and the regressor's statistics passes; and :func:`predict_blockwise` and
:func:`score_blockwise`, which run any fitted estimator block by block.

Computations run on the scheduler ``dask.compute`` would use. On a
``distributed.Client`` the persisted blocks are spread over the workers by
rows and each evaluation is one task per worker thread, pinned to the
worker that holds its blocks (:class:`WorkerBlocks`); on any other
scheduler one graph per evaluation (:class:`_GraphBlocks`).
"""

import copy
import math

import dask
import dask.array as da
import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_feature_names, check_array, check_is_fitted

from ._foundation._input_range import feature_range, merge_ranges

__all__ = [
    "WorkerBlocks", "add_objectives", "add_parts", "as_array", "block_statistics", "block_weight",
    "check_names", "check_rows", "check_total_weight", "checked_block", "checked_classifier_block",
    "checked_regressor_block", "classes_and_weights", "classifier_rows", "encoded_block",
    "merge_regressor_statistics", "merge_statistics", "persisted_blocks", "predict_blockwise",
    "reduce_tree", "regressor_statistics", "score_blockwise", "set_input_attributes", "training_blocks",
]

# Fan-in of the reduction tree: partial sums of at most this many blocks (or
# worker threads' tasks) are added on a worker before moving up, so the driver
# receives at most this many K d² sums whatever the number of blocks.
_SPLIT_EVERY = 8


# ----------------------------------------------------------------- collections
def _is_frame(obj):
    return dask.is_dask_collection(obj) and hasattr(obj, "to_dask_array")


def as_array(obj):
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
        values = as_array(values)
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


def training_blocks(X, y, sample_weight):
    """``(X, blocks)``: ``X`` as a dask array and one ``(X, y, w)`` delayed triple per row block."""
    X = as_array(X)
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


def reduce_tree(parts, combine):
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
        (result,) = dask.compute(reduce_tree(parts, combine))
        return result

    def map(self, function, *args):
        """Replace every block by ``function(block, *args)``, persisted."""
        self._blocks = list(
            dask.persist(*[dask.delayed(function)(block, *args) for block in self._blocks])
        )

    def release(self):
        self._blocks = None


class WorkerBlocks:
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

    Moves the smallest block that helps from the worker with the most rows per thread to the
    one with the fewest, while that lowers the larger of the two.
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


def persisted_blocks(delayed_blocks, rows):
    """The blocks persisted for a fit: on the active distributed client, or through dask.persist."""
    client = _active_client()
    if client is None:
        return _GraphBlocks(delayed_blocks)
    return WorkerBlocks(client, delayed_blocks, rows)


def add_parts(*items):
    """Element-wise sum of tuples (or lists) of numbers and arrays."""
    total = list(items[0])
    for item in items[1:]:
        total = [a + b for a, b in zip(total, item)]
    return tuple(total)


def checked_block(X, dtype):
    # Each worker validates its own block, with scikit-learn's messages.
    return check_array(X, dtype=dtype, ensure_min_samples=0, input_name="X")


def block_weight(w, n_rows):
    if w is None:
        return np.ones(n_rows)
    w = np.asarray(w, dtype=np.float64)
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must be finite and non-negative.")
    return w


def check_names(estimator, X, *, reset):
    """scikit-learn's feature-name rules, applied to a dask.dataframe's columns."""
    if _is_frame(X):
        import pandas as pd

        # an empty pandas frame with the same columns: scikit-learn's own checks
        X = pd.DataFrame(columns=X.columns)
    _check_feature_names(estimator, X, reset=reset)


def set_input_attributes(estimator, X_original, n_features):
    check_names(estimator, X_original, reset=True)
    estimator.n_features_in_ = int(n_features)


def check_total_weight(estimator, total):
    # The base's rule for the weights' scale, applied to their (reduced) sum.
    estimator._check_weight_scale(np.array([total]))


# ------------------------------------------------------------- classifier blocks
def checked_classifier_block(X, y, w):
    """A validated block, its rows sorted by label: ``(X, y, w)`` in numpy.

    Sorted by the raw labels, the rows come in the order of the encoded
    classes (:func:`encoded_block`; the encoding is increasing in the label),
    which the symmetric Gram products of the gradient need, so the block is
    sorted once, before the classes of the whole data are known.
    """
    X = checked_block(X, (np.float64, np.float32))
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
    w = block_weight(w, X.shape[0])
    order = np.argsort(y, kind="stable")
    return np.ascontiguousarray(X[order]), y[order], w[order]


def block_statistics(block, _):
    """Rows, column magnitudes, labels with their counts, whether ``X`` is float32."""
    X, y, _w = block
    labels, counts = np.unique(y, return_counts=True)
    magnitude = np.abs(X).max(axis=0) if X.shape[0] else np.zeros(X.shape[1])
    return X.shape[0], magnitude.astype(np.float64), labels, counts, X.dtype == np.float32


def merge_statistics(*parts):
    n_rows = sum(part[0] for part in parts)
    magnitude = np.maximum.reduce([part[1] for part in parts])
    labels, inverse = np.unique(np.concatenate([part[2] for part in parts]), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([part[3] for part in parts]),
                         minlength=labels.shape[0])
    return n_rows, magnitude, labels, counts, all(part[4] for part in parts)


def encoded_block(block, classes, per_class_weight, dtype):
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
    X, _, w, class_blocks = encoded_block(block, classes, per_class_weight, None)
    return np.array([w[start:stop].sum() for start, stop in class_blocks]), feature_range(X, w)


def _merge_class_weight_sums(*parts):
    return sum(part[0] for part in parts), merge_ranges(*(part[1] for part in parts))


def add_objectives(*parts):
    return sum(part[0] for part in parts), sum(part[1] for part in parts)


def classes_and_weights(estimator, X_original, n_features, data, n_rows, classes, counts):
    """Publish the input attributes and ``classes_``; return the per-class weights and total weight.

    What the in-memory validation of a classifier checks, on the blocks' reduced counts:
    at least two classes, and two with positive weight after ``class_weight``.
    """
    name = type(estimator).__name__
    set_input_attributes(estimator, X_original, n_features)
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
    check_total_weight(estimator, total_weight)
    if np.count_nonzero(class_weights > 0) < 2:
        raise ValueError(
            f"{name} needs samples of at least 2 classes with positive weight, but after "
            "applying sample_weight and class_weight only one class is left: "
            f"{classes[class_weights > 0].tolist()!r}."
        )
    return per_class, total_weight


# -------------------------------------------------------------- regressor blocks
def classifier_rows(estimator, X_original, n_features, data, y):
    """Classes, class weights and encoded labels, as the in-memory validation sets them.

    Returns the blocks' dtype, their total weight and the per-class weights (None: none).
    """
    name = type(estimator).__name__
    n_rows, _magnitude, classes, counts, all_float32 = data.reduce(
        block_statistics, merge_statistics, None
    )
    check_rows(name, n_rows, n_features)
    previous = getattr(estimator, "classes_", None)
    warm = getattr(estimator, "warm_start", False) and hasattr(estimator, "layers_")
    if warm and not np.array_equal(previous, classes):
        raise ValueError(
            "warm_start can only be used where `y` has the same classes as in the "
            f"previous call to fit. Previously got {previous}, `y` has "
            f"{classes}. Set warm_start=False to start over."
        )
    per_class, total_weight = classes_and_weights(estimator, X_original, n_features, data, n_rows,
                                                  classes, counts)
    dtype = np.dtype(np.float32 if all_float32 else np.float64)
    data.map(encoded_block, classes, per_class, dtype)
    return dtype, total_weight, per_class


def checked_regressor_block(X, y, w):
    """A validated block ``(X, Y, w)``: ``Y`` 2-D float64, finite (scikit-learn's messages)."""
    X = checked_block(X, (np.float64, np.float32))
    Y = np.asarray(y)
    Y = Y[:, None] if Y.ndim == 1 else Y.reshape(Y.shape[0], -1)
    Y = check_array(Y, dtype=np.float64, ensure_min_samples=0, input_name="y")
    return X, Y, block_weight(w, X.shape[0])


def regressor_statistics(block, _):
    X, Y, w = block
    smallest = float(Y.min()) if Y.size else math.inf
    return (X.shape[0], Y.shape[1], X.dtype == np.float32, smallest, float(w.sum()),
            w @ Y, feature_range(X, w), feature_range(Y, w))


def merge_regressor_statistics(*parts):
    return (
        sum(part[0] for part in parts), max(part[1] for part in parts),
        all(part[2] for part in parts), min(part[3] for part in parts),
        sum(part[4] for part in parts), sum(part[5] for part in parts),
        merge_ranges(*(part[6] for part in parts)), merge_ranges(*(part[7] for part in parts)),
    )


def check_rows(name, n_rows, n_features):
    if n_rows == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape=(0, {n_features})) while a minimum of 1 "
            f"is required by {name}."
        )


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
        check_names(estimator, X, reset=False)
        if len(X.columns) != estimator.n_features_in_:
            raise ValueError(
                f"X has {len(X.columns)} features, but {type(estimator).__name__} is "
                f"expecting {estimator.n_features_in_} features as input."
            )
        template = _output_template(estimator, method, estimator.n_features_in_, names)
        meta = np.empty((0,) + template.shape[1:], dtype=template.dtype)
        return X.map_partitions(_call, estimator, method, names, meta=meta)
    X = as_array(X)
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
    w = block_weight(w, X.shape[0])
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
    w = block_weight(w, Y.shape[0])
    return w.sum(), w @ Y


def _target_spread(y, w, y_mean):
    Y = np.asarray(y, dtype=np.float64)
    Y = Y.reshape(Y.shape[0], -1)
    return (block_weight(w, Y.shape[0]) @ np.square(Y - y_mean),)


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
    check_names(estimator, X, reset=False)
    X, blocks = training_blocks(X, y, sample_weight)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )
    scores = [dask.delayed(_score_block)(*b, estimator, names, classifier) for b in blocks]
    if classifier:
        correct, total = dask.compute(reduce_tree(scores, add_parts))[0]
        return float(correct / total)
    total, target_sums = dask.compute(
        reduce_tree([dask.delayed(_target_sums)(yb, wb) for _, yb, wb in blocks], add_parts)
    )[0]
    y_mean = target_sums / total
    spread = reduce_tree([dask.delayed(_target_spread)(yb, wb, y_mean) for _, yb, wb in blocks], add_parts)
    (residual,), (denominator,) = dask.compute(reduce_tree(scores, add_parts), spread)
    # scikit-learn's r2_score with force_finite=True: constant targets score 1 or 0
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(denominator > 0, 1.0 - residual / denominator,
                      np.where(residual == 0, 1.0, 0.0))
    return float(np.mean(r2))
