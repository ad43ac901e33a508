"""Fit and predict on torch tensors under the array API dispatch against numpy (``--suite array-api``).

The six estimators with the ``array_api_support`` tag fit and predict the same
synthetic data as numpy arrays (dispatch off) and as torch tensors on
``--device`` (``"auto"``: the CPU) with ``array_api_dispatch=True``; the
report gives the best CPU time of the process of the fit and of the predict
for each (``--repeats``, default 7, taken in turns; one thread by default, so
that a loaded machine's waits do not count) and their ratios, the overhead of
following ``X``. On a GPU the times are wall times. Needs ``SCIPY_ARRAY_API=1``
in the environment (scikit-learn's condition for the dispatch).
"""

import os
import time

import numpy as np
import pandas as pd
import sklearn
import torch
from sklearn.base import clone

from .._report import fit_at_budget, markdown_table

__all__ = ["run"]


def _cases(quick):
    from skquad import (
        QNNClassifier,
        QNNRegressor,
        QuadraticLogisticRegression,
        QuadraticRegression,
        QuadraticRegressionCV,
        RPQNNClassifier,
        RPQNNRegressor,
    )

    network = {"hidden_layer_sizes": (32,), "max_iter": 5 if quick else 20, "random_state": 0}
    return [
        (QuadraticLogisticRegression(), True),
        (QuadraticRegression(), False),
        (QuadraticRegressionCV(), False),
        (QNNClassifier(**network), True),
        (QNNRegressor(**network), False),
        (RPQNNClassifier(**network), True),
        (RPQNNRegressor(**network), False),
    ]


def _fit_predict_time(estimator, X, y, dispatch):
    """``(fit seconds, predict seconds)`` of one fresh model."""
    clock = time.perf_counter if getattr(X, "is_cuda", False) else time.process_time
    sync = torch.cuda.synchronize if clock is time.perf_counter else lambda: None
    model = clone(estimator)
    with sklearn.config_context(array_api_dispatch=dispatch):
        start = clock()
        fit_at_budget(model, X, y)
        sync()
        middle = clock()
        model.predict(X)
        sync()
        return np.array([middle - start, clock() - middle])


def _best_times(estimator, inputs, repeats):
    """Best fit and predict times of numpy and of tensors, taken in turns after one warm-up each."""
    best = [np.full(2, np.inf), np.full(2, np.inf)]
    for repeat in range(repeats + 1):
        for which, (X, y, dispatch) in enumerate(inputs):
            elapsed = _fit_predict_time(estimator, X, y, dispatch)
            best[which] = np.minimum(best[which], elapsed) if repeat else best[which]
    return best


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """Numpy against tensors, fit + predict; ``output_dir`` and ``datasets`` are not used."""
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        raise ValueError("the array-api suite needs SCIPY_ARRAY_API=1 set in the environment")
    target = torch.device("cpu" if str(device).lower() == "auto" else str(device).lower())
    repeats = repeats or 7
    rng = np.random.default_rng(0)
    n_samples, n_features = (500, 10) if quick else (5000, 20)
    X = rng.standard_normal((n_samples, n_features))
    targets = {True: (X[:, 0] * X[:, 1] > 0).astype(np.int64), False: X[:, 0] * X[:, 1] + X[:, 2]}
    rows = []
    for estimator, classifier in _cases(quick):
        name = type(estimator).__name__
        progress(f"array-api: {name}")
        y = targets[classifier]
        numpy_time, tensor_time = _best_times(estimator, [
            (X, y, False), (torch.asarray(X, device=target), torch.asarray(y, device=target), True)
        ], repeats)
        rows.append({"estimator": name, **{
            f"{step} {label} s": times[k] for k, step in enumerate(("fit", "predict"))
            for label, times in (("numpy", numpy_time), (f"torch {target}", tensor_time))
        }, "fit tensors / numpy": tensor_time[0] / numpy_time[0],
            "predict tensors / numpy": tensor_time[1] / numpy_time[1]})
    table = pd.DataFrame(rows)
    markdown = (
        f"fit and predict on {n_samples} x {n_features} float64, best of {repeats} (seconds of CPU on "
        "the CPU, wall on a GPU): numpy arrays "
        f"(dispatch off) against torch tensors on {target} (array_api_dispatch=True).\n\n"
        + markdown_table(table, floatfmt=".3g")
    )
    return {"title": "Array API: tensors against numpy", "markdown": markdown,
            "tables": {"array_api_speed": table}, "figures": []}
