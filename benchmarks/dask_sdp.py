"""Issue 43's measurements: the SDP estimators and QNN's L-BFGS data-parallel on Dask.

Run from the repository root, e.g.::

    nice -n 10 python benchmarks/dask_sdp.py --case sdp --rows 400000
    nice -n 10 python benchmarks/dask_sdp.py --case qnn --rows 400000

Each case starts a ``LocalCluster`` of worker processes (one thread each) on
lazily generated rows (``dask.array.random``, never materialised in this
process except the prefix that the in-memory reference fits).

``sdp``
    A planted binary network on ``d = 20`` standard normal features
    (4 neurons with ±1 weights on ``[x, 1]``): SDPQuantizedRegressor on its
    noisy output and SDPQuantizedClassifier on its sign. For each, the Dask
    fit on ``--rows`` rows (2 workers): this process's peak RSS growth, the
    seconds of each pass over the rows and of the whole fit, the certified
    relative gap; then the Dask fit and the in-memory fit of the first
    ``--prefix`` rows: the relative difference of their relaxed optima and
    their test score (R² or accuracy, on fresh rows).
``qnn``
    QNNClassifier(solver="lbfgs") on a planted quadratic problem with
    ``d = 30``: the loss after ``--iterations`` iterations of the Dask fit
    and the in-memory fit of the first ``--prefix`` rows; seconds per
    iteration on ``--rows`` rows with 1 and 2 workers (from fits of 1 and
    ``--iterations + 1`` iterations), their ratio and the load average; the
    bytes one iteration sends and receives (the parameter vector to each
    worker task, one loss and gradient back, float64).
"""

import argparse
import json
import os
import threading
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

# The in-memory reference's refit holds the neurons' outputs on the prefix (rows x neurons).
NEURONS = 300


class PeakRSS:
    """This process's peak resident memory above its level at entry, sampled every 20 ms."""

    def __enter__(self):
        import psutil

        self._process = psutil.Process()
        self.start = self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            time.sleep(0.02)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def growth_mb(self):
        return round((self.peak - self.start) / 2**20, 1)


def cluster(n_workers):
    from distributed import Client, LocalCluster

    local = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                         dashboard_address=None, worker_dashboard_address=None)
    client = Client(local)
    client.run(__import__, "skquad")  # the workers' imports, before anything is timed
    return local, client


def planted_sdp(n, chunk, seed=0, d=20):
    """Lazy rows of a planted binary network: ``(X, y_regression, y_labels)``."""
    import dask.array as da

    rng = np.random.default_rng(1234)
    U, V = rng.choice([-1.0, 1.0], (2, 4, d + 1))
    alpha = np.array([1.0, -1.0, 0.5, -0.5]) / (d + 1)
    X = da.random.RandomState(seed).normal(size=(n, d), chunks=(chunk, d))
    Z = da.concatenate([X, da.ones((n, 1), chunks=(chunk, 1))], axis=1)
    score = ((Z @ U.T) * (Z @ V.T)) @ alpha
    noise = da.random.RandomState(seed + 1).normal(scale=0.5, size=n, chunks=chunk)
    return X, score + noise, (score > 0).astype(np.int64)


def _fit(model, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        model.fit(X, y)
    return time.perf_counter() - start


def sdp_case(rows, prefix, chunk):
    from skquad import SDPQuantizedClassifier, SDPQuantizedRegressor

    X, y_reg, y_cls = planted_sdp(rows, chunk)
    X_test, y_test_reg, y_test_cls = (a.compute() for a in planted_sdp(100_000, 50_000, seed=7))
    local, client = cluster(2)
    results = {}
    try:
        for name, make, y, y_test in (
            ("regressor", SDPQuantizedRegressor, y_reg, y_test_reg),
            ("classifier", SDPQuantizedClassifier, y_cls, y_test_cls),
        ):
            model = make(n_neurons=NEURONS, random_state=0)
            with PeakRSS() as memory:
                seconds = _fit(model, X, y)
            row = {
                "rows": rows, "client_peak_growth_mb": memory.growth_mb,
                "fit_seconds": round(seconds, 1),
                "pass_seconds": [round(t, 1) for t in model._pass_times],
                "solve_seconds": round(model.solve_time_, 2),
                "certified_relative_gap": model.certified_gap_ / model.relaxed_objective_,
                "test_score_all_rows": model.score(X_test, y_test),
            }
            on_prefix = make(n_neurons=NEURONS, random_state=0)
            _fit(on_prefix, X[:prefix], y[:prefix])
            in_memory = make(n_neurons=NEURONS, random_state=0)
            _fit(in_memory, X[:prefix].compute(), y[:prefix].compute())
            row.update(
                prefix=prefix,
                relaxed_optimum_relative_difference=abs(
                    on_prefix.relaxed_objective_ - in_memory.relaxed_objective_
                ) / abs(in_memory.relaxed_objective_),
                prefix_test_score_dask=on_prefix.score(X_test, y_test),
                prefix_test_score_in_memory=in_memory.score(X_test, y_test),
            )
            results[name] = row
            print(json.dumps({name: row}), flush=True)
    finally:
        client.close()
        local.close()
    return results


def _seconds_per_iteration(model, X, y):
    """From ``verbose``'s cumulative elapsed times, the first iteration (which persists the blocks) left out."""
    import contextlib
    import io
    import re

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _fit(model.set_params(verbose=1), X, y)
    elapsed = [float(v) for v in re.findall(r"elapsed = ([0-9.]+)s", printed.getvalue())]
    return (elapsed[-1] - elapsed[0]) / (len(elapsed) - 1)


def planted_qnn(n, chunk, seed=0, d=30):
    import dask.array as da

    X = da.random.RandomState(seed).normal(size=(n, d), chunks=(chunk, d))
    score = X[:, 0] * X[:, 1] - 0.5 * X[:, 2] ** 2 + X[:, 3] + 0.5
    return X, (score > 0).astype(np.int64)


def qnn_case(rows, prefix, chunk, iterations):
    from skquad import QNNClassifier

    def model(max_iter):
        return QNNClassifier(hidden_layer_sizes=(16,), solver="lbfgs", max_iter=max_iter,
                             tol=0.0, random_state=0)

    X, y = planted_qnn(rows, chunk)
    result = {"rows": rows, "prefix": prefix, "iterations": iterations}
    local, client = cluster(2)
    try:
        with PeakRSS() as memory:
            on_prefix = model(iterations)
            _fit(on_prefix, X[:prefix], y[:prefix])
        in_memory = model(iterations)
        _fit(in_memory, X[:prefix].compute(), y[:prefix].compute())
        n_parameters = sum(p.numel() for p in in_memory.to_torch().parameters())
        result.update(
            loss_dask=on_prefix.loss_, loss_in_memory=in_memory.loss_,
            loss_relative_difference=abs(on_prefix.loss_ - in_memory.loss_) / in_memory.loss_,
            client_peak_growth_mb_prefix_fit=memory.growth_mb, n_parameters=int(n_parameters),
        )
    finally:
        client.close()
        local.close()
    for workers in (1, 2):
        local, client = cluster(workers)
        try:
            result[f"seconds_per_iteration_{workers}_workers"] = round(
                _seconds_per_iteration(model(iterations + 1), X, y), 3
            )
            tasks = workers  # one task per worker thread per evaluation
            result[f"bytes_per_evaluation_{workers}_workers"] = int(
                tasks * 8 * (n_parameters + n_parameters + 1)
            )
        finally:
            client.close()
            local.close()
    result["ratio_2_over_1"] = round(
        result["seconds_per_iteration_2_workers"] / result["seconds_per_iteration_1_workers"], 3
    )
    result["load_average"] = os.getloadavg()
    print(json.dumps(result), flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("sdp", "qnn"), required=True)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--prefix", type=int, default=200_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if args.case == "sdp":
        sdp_case(args.rows, args.prefix, args.chunk)
    else:
        qnn_case(args.rows, args.prefix, args.chunk, args.iterations)


if __name__ == "__main__":
    main()
