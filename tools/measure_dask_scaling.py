"""QuadraticLogisticRegression on Dask collections: the scaling targets of issue 20.

Usage: python tools/measure_dask_scaling.py CASE [N D] [ITERATIONS] [ROUNDS]

Every case runs on a ``LocalCluster`` of worker processes with one thread
each, on a dask array generated on the workers (a planted quadratic logistic
model, standard normal features; never materialised in this process):

* ``memory``  (default N=10_000_000, D=50): the Dask fit with 2 workers
  (ITERATIONS L-BFGS iterations, default 10); prints this (client) process's
  peak RSS and the workers' peak RSS.
* ``match``   (default N=1_000_000, D=50): the Dask fit to convergence
  (tol=1e-6) against the in-memory fit of the same data (computed into this
  process for the reference only); prints both objectives, their relative
  difference and the largest difference of predicted probabilities.
* ``scaling`` (default N=1_000_000, D=50): seconds per L-BFGS iteration with
  1 and 2 workers on the same data, ITERATIONS iterations (default 10), the
  two cluster sizes interleaved for ROUNDS rounds (default 3); prints the
  medians and the median ratio (2 workers / 1 worker).
* ``daskml``  (default N=200_000, D=50): the same model by dask-ml's
  LogisticRegression (dask-glm's L-BFGS) on PolynomialFeatures(2)-expanded
  data (D (D + 3) / 2 columns), 2 workers: seconds per iteration and the
  workers' peak RSS of each, the objectives (dask-glm also penalises the
  intercept, so the optima differ by O(1 / (C n)) relative).
* ``daskml-converged`` (default N=20_000, D=10): the same, both solvers run to
  convergence (tol=1e-8, at most 500 iterations), to compare the optima.

Seconds per iteration come from ``verbose`` (the elapsed time printed at each
L-BFGS iteration: the first iteration, which includes the persisting of the
blocks, is left out) for skquad, and from fit time / iterations for dask-ml.
Run alone on a quiet machine; on a loaded one, say so with the numbers.
"""

import contextlib
import io
import json
import os
import re
import resource
import sys
import threading
import time
import warnings

import dask
import dask.array as da
import numpy as np
import psutil
from distributed import Client, LocalCluster

from skquad import QuadraticLogisticRegression


def make_data(n, d, chunk_rows, seed=0):
    """A lazily generated planted quadratic logistic problem (float64)."""
    state = da.random.RandomState(seed)
    X = state.normal(size=(n, d), chunks=(chunk_rows, d))
    score = X[:, 0] * X[:, 1] - 0.5 * X[:, 2] ** 2 + X[:, 3] + 0.5
    y = (score + state.logistic(size=n, chunks=chunk_rows) > 0).astype(np.int64)
    return X, y


def chunk_rows(n, d, n_workers):
    # about 64 MB blocks, at least 2 per worker
    return int(max(1000, min(n // (2 * n_workers), (64 << 20) // (8 * d))))


class PeakRSS:
    """Peak resident memory of some processes, sampled every 50 ms in a thread."""

    def __init__(self, pids):
        self.processes = [psutil.Process(pid) for pid in pids]
        self.peak = {pid: 0 for pid in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for process in self.processes:
                with contextlib.suppress(psutil.Error):
                    rss = process.memory_info().rss
                    self.peak[process.pid] = max(self.peak[process.pid], rss)
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def gib(self):
        return {str(pid): round(value / 2**30, 3) for pid, value in self.peak.items()}


def cluster(n_workers):
    return LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True,
        dashboard_address=None, worker_dashboard_address=None,
    )


def timed_fit(model, X, y):
    """Fit with verbose output captured: (seconds per iteration after the first, wall seconds)."""
    model.set_params(verbose=1)
    buffer = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(buffer), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    wall = time.perf_counter() - start
    elapsed = [float(v) for v in re.findall(r"elapsed = ([0-9.]+)s", buffer.getvalue())]
    per_iteration = (elapsed[-1] - elapsed[0]) / (len(elapsed) - 1) if len(elapsed) > 1 else float("nan")
    model.set_params(verbose=0)
    return per_iteration, wall


def client_peak_gib():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)


def case_memory(n, d, iterations):
    with cluster(2) as local, Client(local) as client:
        X, y = make_data(n, d, chunk_rows(n, d, 2))
        before = client_peak_gib()
        workers = client.run(os.getpid).values()
        with PeakRSS(workers) as peak:
            model = QuadraticLogisticRegression(max_iter=iterations, tol=0.0)
            per_iteration, wall = timed_fit(model, X, y)
    return {
        "case": "memory", "n": n, "d": d, "iterations": int(model.n_iter_[0]),
        "gb_of_X": round(n * d * 8 / 1e9, 2), "seconds_per_iteration": round(per_iteration, 3),
        "fit_seconds": round(wall, 1), "client_peak_rss_gib_before_fit": before,
        "client_peak_rss_gib": client_peak_gib(), "worker_peak_rss_gib": peak.gib(),
    }


def case_match(n, d):
    with cluster(2) as local, Client(local) as client:
        X, y = make_data(n, d, chunk_rows(n, d, 2))
        remote = QuadraticLogisticRegression(tol=1e-6)
        _, remote_seconds = timed_fit(remote, X, y)
        X_local, y_local = dask.compute(X, y)
    local = QuadraticLogisticRegression(tol=1e-6)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local.fit(X_local, y_local)
    local_seconds = time.perf_counter() - start
    rows = slice(0, min(n, 100_000))
    return {
        "case": "match", "n": n, "d": d,
        "objective_dask": remote.loss_, "objective_in_memory": local.loss_,
        "relative_difference": abs(remote.loss_ - local.loss_) / abs(local.loss_),
        "iterations_dask": int(remote.n_iter_[0]), "iterations_in_memory": int(local.n_iter_[0]),
        "max_probability_difference": float(np.abs(
            remote.predict_proba(X_local[rows]) - local.predict_proba(X_local[rows])).max()),
        "fit_seconds_dask": round(remote_seconds, 1), "fit_seconds_in_memory": round(local_seconds, 1),
    }


def case_scaling(n, d, iterations, rounds):
    times = {1: [], 2: []}
    for _ in range(rounds):
        for n_workers in (1, 2):
            with cluster(n_workers) as local, Client(local):
                # the same blocks for both cluster sizes (2 per worker of the larger)
                X, y = make_data(n, d, chunk_rows(n, d, 2))
                model = QuadraticLogisticRegression(max_iter=iterations, tol=0.0)
                per_iteration, _ = timed_fit(model, X, y)
                times[n_workers].append(per_iteration)
    ratios = np.array(times[2]) / np.array(times[1])
    return {
        "case": "scaling", "n": n, "d": d, "iterations": iterations, "rounds": rounds,
        "seconds_per_iteration_1_worker": [round(t, 3) for t in times[1]],
        "seconds_per_iteration_2_workers": [round(t, 3) for t in times[2]],
        "median_ratio_2_over_1": round(float(np.median(ratios)), 3),
    }


def _expand(block):
    from sklearn.preprocessing import PolynomialFeatures

    return PolynomialFeatures(2, include_bias=False).fit_transform(block)


def case_daskml(n, d, iterations, converged=False):
    """``converged``: both solvers run to their own stopping rules (max_iter=500) instead
    of exactly ``iterations`` iterations, to compare the optima."""
    from dask_ml.linear_model import LogisticRegression

    if converged:
        iterations = 500

    D = d * (d + 3) // 2
    result = {"case": "daskml", "n": n, "d": d, "expanded_columns": D,
              "gb_expanded": round(n * D * 8 / 1e9, 2), "iterations": iterations}
    with cluster(2) as local, Client(local) as client:
        workers = client.run(os.getpid).values()
        X, y = make_data(n, d, chunk_rows(n, D, 2))
        X, y = client.persist([X, y])
        with PeakRSS(workers) as peak:
            model = QuadraticLogisticRegression(max_iter=iterations, tol=1e-8 if converged else 0.0)
            per_iteration, wall = timed_fit(model, X, y)
        result["skquad_iterations"] = int(model.n_iter_[0])
        result["skquad_seconds_per_iteration"] = round(per_iteration, 3)
        result["skquad_worker_peak_rss_gib"] = peak.gib()
        result["skquad_objective"] = model.loss_
        expanded = X.map_blocks(_expand, chunks=(X.chunks[0], (D,)), dtype=np.float64)
        expanded = client.persist(expanded)
        with PeakRSS(workers) as peak:
            reference = LogisticRegression(
                solver="lbfgs", C=1.0, max_iter=iterations, tol=1e-8 if converged else 0.0)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reference.fit(expanded, y)
            wall = time.perf_counter() - start
        result["daskml_fit_seconds"] = round(wall, 1)
        if not converged:
            result["daskml_seconds_per_iteration"] = round(wall / iterations, 3)
        result["daskml_worker_peak_rss_gib"] = peak.gib()
        # dask-ml's solution in skquad's objective (loss_ is divided by C * n)
        # (penalty="polynomial" is the L2 norm of the expanded coefficients)
        coef = np.asarray(reference.coef_).ravel()
        scores = expanded @ coef + reference.intercept_
        data = da.logaddexp(0, -da.where(y == 1, 1, -1) * scores).sum()
        penalty = 0.5 * np.square(coef).sum()
        result["daskml_objective_in_skquad_terms"] = float((data.compute() + penalty) / n)
        if not converged:
            result["ratio_time_daskml_over_skquad"] = round(
                result["daskml_seconds_per_iteration"] / result["skquad_seconds_per_iteration"], 2)
    return result


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else "match"
    defaults = {"memory": (10_000_000, 50), "match": (1_000_000, 50),
                "scaling": (1_000_000, 50), "daskml": (200_000, 50),
                "daskml-converged": (20_000, 10)}
    n, d = (int(v) for v in sys.argv[2:4]) if len(sys.argv) > 3 else defaults[case]
    iterations = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    if case == "memory":
        result = case_memory(n, d, iterations)
    elif case == "match":
        result = case_match(n, d)
    elif case == "scaling":
        result = case_scaling(n, d, iterations, rounds)
    elif case in ("daskml", "daskml-converged"):
        result = case_daskml(n, d, iterations, converged=case == "daskml-converged")
    else:
        raise SystemExit(f"unknown case {case!r}: memory, match, scaling, daskml or daskml-converged")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
