"""The networks' fit time against scikit-learn's MLP, side by side, in float64 and float32.

Suite ``speed-networks`` of ``python -m skquad.benchmarks``: ``classifiers``
(QNN and RPQNN classifiers against MLPClassifier on optdigits) and
``regressors`` (against MLPRegressor on Friedman #1); the shapes and settings
are in each report. Each round fits every model once, in turn, so that a
machine whose speed drifts slows all of them alike; the figure is the median
over the rounds of the per-round ratio to the MLP. Each fit is timed by the
wall clock and by the process's CPU time: on a shared machine run with
``--threads 1`` and read the CPU-time ratio.
"""

import time

import numpy as np
import pandas as pd
from sklearn.datasets import make_friedman1
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler

from skquad import QNNClassifier, QNNRegressor, RPQNNClassifier, RPQNNRegressor
from skquad.datasets import load_uci

from .._report import fit_at_budget, markdown_table

DTYPES = ("float64", "float32")
# The regression problem of the speed target (issue 23): n, d and the hidden width.
REGRESSION_SHAPE = (4000, 20, 100)
QUICK_REGRESSION_SHAPE = (1000, 20, 100)


def _timed_rounds(makers, X, y, rounds, epochs, progress, label):
    """Wall and CPU seconds per epoch of every model in every round, models fitted in turn."""
    seconds = {name: [] for name in makers}
    cpu_seconds = {name: [] for name in makers}
    for round_index in range(rounds):
        progress(f"{label}: round {round_index + 1}/{rounds}")
        for name, make in makers.items():
            model = make()
            started, cpu_started = time.perf_counter(), time.process_time()
            fit_at_budget(model, X, y)  # every epoch runs on purpose (tol=0)
            seconds[name].append((time.perf_counter() - started) / epochs)
            cpu_seconds[name].append((time.process_time() - cpu_started) / epochs)
    return seconds, cpu_seconds


def _ratio_rows(timings, baseline, dtype):
    seconds, cpu_seconds = timings
    base, cpu_base = np.asarray(seconds[baseline]), np.asarray(cpu_seconds[baseline])
    return [
        {
            "dtype": dtype,
            "model": name,
            "median epoch time (ms)": 1e3 * float(np.median(values)),
            f"ratio to {baseline} (median of rounds)": float(np.median(np.asarray(values) / base)),
            "ratios of the rounds": " ".join(f"{v:.2f}" for v in np.asarray(values) / base),
            f"CPU-time ratio to {baseline} (median of rounds)": float(
                np.median(np.asarray(cpu_seconds[name]) / cpu_base)
            ),
        }
        for name, values in seconds.items()
    ]


def classifiers(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """QNN / RPQNN against MLPClassifier on optdigits, in float64 and float32.

    ``repeats``: rounds (default 7; quick 2); 20 epochs (quick 3).
    ``datasets`` is not used (the problem is fixed).
    """
    rounds = repeats or (2 if quick else 7)
    epochs = 3 if quick else 20
    X, y = load_uci("optdigits", return_X_y=True, as_frame=True)
    X = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))
    y = np.asarray(y).astype(str)
    common = dict(
        hidden_layer_sizes=(30,), max_iter=epochs, batch_size=200, learning_rate_init=1e-3, tol=0.0,
        n_iter_no_change=10**6, early_stopping=False, random_state=0,
        alpha=1e-4,  # MLPClassifier's: the same training (the networks' "auto" would search)
    )
    makers = {
        "MLPClassifier": lambda: MLPClassifier(**common),
        "QNNClassifier": lambda: QNNClassifier(**common, device=device),
        "RPQNNClassifier": lambda: RPQNNClassifier(**common, device=device),
    }
    introduction = (
        f"64-30-10 networks on optdigits ({X.shape[0]} samples, standardized), {epochs} epochs "
        f"of Adam (learning rate 1e-3), batches of 200, every epoch run; {rounds} rounds, the "
        f"models fitted in turn in each; skquad models with device={device!r}."
    )
    return _section(makers, X, y, rounds, epochs, progress, "classifiers", introduction,
                    "Network classifiers: fit time against MLPClassifier")


def regressors(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """QNN / RPQNN against MLPRegressor on Friedman #1, in float64 and float32.

    ``repeats``: rounds (default 7; quick 2); 20 epochs (quick 3) on
    ``REGRESSION_SHAPE`` (quick: ``QUICK_REGRESSION_SHAPE``). ``datasets`` is
    not used.
    """
    rounds = repeats or (2 if quick else 7)
    epochs = 3 if quick else 20
    n, d, hidden = QUICK_REGRESSION_SHAPE if quick else REGRESSION_SHAPE
    X, y = make_friedman1(n_samples=n, n_features=d, random_state=0)
    y = (y - y.mean()) / y.std()
    common = dict(
        hidden_layer_sizes=(hidden,), max_iter=epochs, batch_size=200, tol=0.0, n_iter_no_change=10**6,
        early_stopping=False, random_state=0,
    )
    makers = {
        "MLPRegressor": lambda: MLPRegressor(**common),
        "QNNRegressor": lambda: QNNRegressor(**common, device=device),
        "RPQNNRegressor": lambda: RPQNNRegressor(**common, device=device),
    }
    introduction = (
        f"Friedman #1 (n={n}, d={d}), one hidden layer of {hidden}, Adam, batches of 200, "
        f"{epochs} epochs, every epoch run; rounds: {rounds}, the models fitted in turn in each; "
        f"skquad models with device={device!r}."
    )
    return _section(makers, X, y, rounds, epochs, progress, "regressors", introduction,
                    "Network regressors: epoch time against MLPRegressor")


def _section(makers, X, y, rounds, epochs, progress, name, introduction, title):
    """Time ``makers`` in each dtype against the first (scikit-learn's MLP): the report section."""
    rows = []
    for dtype in DTYPES:
        timings = _timed_rounds(makers, X.astype(dtype), y, rounds, epochs, progress, f"{name} {dtype}")
        rows += _ratio_rows(timings, next(iter(makers)), dtype)
    table = pd.DataFrame(rows)
    markdown = introduction + "\n\n" + markdown_table(table, floatfmt=".3g")
    return {"title": title, "markdown": markdown, "tables": {name: table}, "figures": []}
