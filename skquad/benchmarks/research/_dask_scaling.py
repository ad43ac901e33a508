"""QuadraticLogisticRegression on Dask collections: the scaling targets of issue 20.

Suite ``dask-scaling`` of ``python -m skquad.benchmarks`` (formerly the script
``tools/measure_dask_scaling.py``). ``--datasets`` picks the cases, each run
in a child process of its own (its peak memory is its own) on a
``LocalCluster`` of worker processes with one thread each, on a dask array
generated on the workers (a planted quadratic logistic model, standard normal
features; never materialised in the parent process):

``memory``  (n=10,000,000, d=50)
    The Dask fit with 2 workers (10 L-BFGS iterations); the client process's
    peak RSS and the workers'.
``match``   (n=1,000,000, d=50)
    The Dask fit to convergence (tol=1e-6) against the in-memory fit of the
    same data (computed into the child for the reference only): both
    objectives, their relative difference, the largest difference of
    predicted probabilities.
``scaling`` (n=1,000,000, d=50)
    Seconds per L-BFGS iteration with 1 and 2 workers on the same data, 10
    iterations, the two cluster sizes interleaved for ``--repeats`` rounds
    (default 3); the medians and the median ratio (2 workers / 1 worker).
``daskml``  (n=200,000, d=50)
    The same model by dask-ml's LogisticRegression (dask-glm's L-BFGS) on
    PolynomialFeatures(2)-expanded data (d (d + 3) / 2 columns), 2 workers:
    seconds per iteration and the workers' peak RSS of each, the objectives
    (dask-glm also penalises the intercept, so the optima differ by
    O(1 / (C n)) relative). Worker memory is reported twice: the peak RSS
    of the worker processes, and the peak above their idle RSS (measured
    after both libraries are imported on the workers and before any data
    exists), which is the memory each fit's data and work take: the idle
    part (Python, numpy, torch, dask) is the same for both. Needs dask-ml.
``daskml-converged``  (n=20,000, d=10)
    The same comparison with both solvers run to convergence (tol=1e-8, at
    most 500 iterations), to compare the optima.

Seconds per iteration come from ``verbose`` (the elapsed time printed at each
L-BFGS iteration: the first iteration, which includes the persisting of the
blocks, is left out) for skquad, and from fit time / iterations for dask-ml.
``--quick`` runs ``match`` and ``scaling`` on n=20,000, d=10. Needs dask,
distributed and psutil (skquad's ``dask`` extra).
"""

import contextlib
import io
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from skquad import QuadraticLogisticRegression

from .._report import markdown_table

CASES = ("memory", "match", "scaling", "daskml", "daskml-converged")
QUICK_CASES = ("match", "scaling")
SIZES = {"memory": (10_000_000, 50), "match": (1_000_000, 50), "scaling": (1_000_000, 50), "daskml": (200_000, 50),
         "daskml-converged": (20_000, 10)}
QUICK_SIZE = (20_000, 10)
ITERATIONS = 10


def make_data(n, d, chunk_rows, seed=0):
    """A lazily generated planted quadratic logistic problem (float64)."""
    import dask.array as da

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
        import psutil

        self._gone = psutil.Error  # a process that has exited
        self.processes = [psutil.Process(pid) for pid in pids]
        self.peak = {pid: 0 for pid in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for process in self.processes:
                with contextlib.suppress(self._gone):
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
    from distributed import LocalCluster

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
        # a fixed number of iterations (tol=0) stops at max_iter on purpose
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        model.fit(X, y)
    wall = time.perf_counter() - start
    elapsed = [float(v) for v in re.findall(r"elapsed = ([0-9.]+)s", buffer.getvalue())]
    per_iteration = (elapsed[-1] - elapsed[0]) / (len(elapsed) - 1) if len(elapsed) > 1 else float("nan")
    model.set_params(verbose=0)
    return per_iteration, wall


def _import_models():
    import dask_ml.linear_model  # noqa: F401

    import skquad  # noqa: F401


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def client_peak_gib():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)


def case_memory(n, d, iterations):
    from distributed import Client

    with cluster(2) as local, Client(local) as client:
        X, y = make_data(n, d, chunk_rows(n, d, 2))
        before = client_peak_gib()
        workers = client.run(os.getpid).values()
        with PeakRSS(workers) as peak:
            model = QuadraticLogisticRegression(max_iter=iterations, tol=0.0)
            per_iteration, wall = timed_fit(model, X, y)
    return {
        "case": "memory", "n": n, "d": d, "iterations": int(np.max(model.n_iter_)),
        "gb_of_X": round(n * d * 8 / 1e9, 2), "seconds_per_iteration": round(per_iteration, 3),
        "fit_seconds": round(wall, 1), "client_peak_rss_gib_before_fit": before,
        "client_peak_rss_gib": client_peak_gib(), "worker_peak_rss_gib": peak.gib(),
    }


def case_match(n, d):
    import dask
    from distributed import Client

    with cluster(2) as local, Client(local) as client:
        X, y = make_data(n, d, chunk_rows(n, d, 2))
        remote = QuadraticLogisticRegression(tol=1e-6)
        _, remote_seconds = timed_fit(remote, X, y)
        X_local, y_local = dask.compute(X, y)
    local = QuadraticLogisticRegression(tol=1e-6)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        local.fit(X_local, y_local)
    local_seconds = time.perf_counter() - start
    rows = slice(0, min(n, 100_000))
    return {
        "case": "match", "n": n, "d": d,
        "objective_dask": remote.loss_, "objective_in_memory": local.loss_,
        "relative_difference": abs(remote.loss_ - local.loss_) / abs(local.loss_),
        "iterations_dask": int(np.max(remote.n_iter_)), "iterations_in_memory": int(np.max(local.n_iter_)),
        "max_probability_difference": float(np.abs(
            remote.predict_proba(X_local[rows]) - local.predict_proba(X_local[rows])).max()),
        "fit_seconds_dask": round(remote_seconds, 1), "fit_seconds_in_memory": round(local_seconds, 1),
    }


def case_scaling(n, d, iterations, rounds):
    from distributed import Client

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
    """``converged``: both solvers run to their own stopping rules (at most 500
    iterations, tol=1e-8) instead of exactly ``iterations`` iterations."""
    import dask.array as da
    from dask_ml.linear_model import LogisticRegression
    from distributed import Client

    if converged:
        iterations = 500
    tol = 1e-8 if converged else 0.0
    D = d * (d + 3) // 2
    result = {"case": "daskml-converged" if converged else "daskml", "n": n, "d": d, "expanded_columns": D,
              "gb_expanded": round(n * D * 8 / 1e9, 2), "iterations": iterations}
    with cluster(2) as local, Client(local) as client:
        workers = client.run(os.getpid).values()
        client.run(_import_models)
        idle = sum(client.run(_rss).values())
        result["worker_idle_rss_gib"] = round(idle / 2**30, 3)
        X, y = make_data(n, d, chunk_rows(n, D, 2))
        X, y = client.persist([X, y])
        with PeakRSS(workers) as peak:
            model = QuadraticLogisticRegression(max_iter=iterations, tol=tol)
            per_iteration, wall = timed_fit(model, X, y)
        result["skquad_iterations"] = int(model.n_iter_[0])
        result["skquad_seconds_per_iteration"] = round(per_iteration, 3)
        result["skquad_worker_peak_rss_gib"] = peak.gib()
        skquad_above_idle = sum(peak.peak.values()) - idle
        result["skquad_objective"] = model.loss_
        expanded = X.map_blocks(_expand, chunks=(X.chunks[0], (D,)), dtype=np.float64)
        expanded = client.persist(expanded)
        with PeakRSS(workers) as peak:
            reference = LogisticRegression(solver="lbfgs", C=1.0, max_iter=iterations, tol=tol)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=ConvergenceWarning)
                reference.fit(expanded, y)
            wall = time.perf_counter() - start
        result["daskml_fit_seconds"] = round(wall, 1)
        if not converged:
            result["daskml_seconds_per_iteration"] = round(wall / iterations, 3)
        result["daskml_worker_peak_rss_gib"] = peak.gib()
        daskml_above_idle = sum(peak.peak.values()) - idle
        result["skquad_worker_rss_above_idle_gib"] = round(skquad_above_idle / 2**30, 3)
        result["daskml_worker_rss_above_idle_gib"] = round(daskml_above_idle / 2**30, 3)
        result["ratio_worker_peak_rss_daskml_over_skquad"] = round(
            sum(peak.peak.values()) / (skquad_above_idle + idle), 2)
        result["ratio_worker_rss_above_idle_daskml_over_skquad"] = round(
            daskml_above_idle / max(skquad_above_idle, 1), 2)
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


def _case(case, n, d, rounds):
    if case == "memory":
        return case_memory(n, d, ITERATIONS)
    if case == "match":
        return case_match(n, d)
    if case == "scaling":
        return case_scaling(n, d, ITERATIONS, rounds)
    if case in ("daskml", "daskml-converged"):
        return case_daskml(n, d, ITERATIONS, converged=case == "daskml-converged")
    raise ValueError(f"unknown case {case!r}; choose from {list(CASES)}")


def _child(case, n, d, rounds):
    """Entry point of the child process: one JSON line with the case's results."""
    print(json.dumps(_case(case, n, d, rounds)))


def _run_child(case, n, d, rounds, progress):
    code = f"from skquad.benchmarks.research._dask_scaling import _child; _child({case!r}, {n}, {d}, {rounds})"
    env = dict(os.environ)
    # the folder that holds the skquad package: research/ -> benchmarks/ -> skquad/ -> it
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    progress(f"dask scaling: {case} n={n} d={d} (child process)")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    if completed.returncode != 0 or not lines:
        return {"case": case, "n": n, "d": d,
                "error": f"exit {completed.returncode}: {completed.stderr.strip()[-300:]}"}
    return json.loads(lines[-1])


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """The cases named in ``datasets`` (default: all; quick: ``match`` and ``scaling``, small).

    ``repeats``: rounds of the ``scaling`` case (default 3; quick 1). ``device``
    is not used (the Dask fits run on the workers' CPUs).
    """
    cases = list(datasets or (QUICK_CASES if quick else CASES))
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        raise ValueError(f"unknown Dask scaling cases {unknown}; choose from {list(CASES)}")
    rounds = repeats or (1 if quick else 3)
    results = [_run_child(case, *(QUICK_SIZE if quick else SIZES[case]), rounds, progress) for case in cases]
    sections, tables = [], {}
    for result in results:
        name = result["case"]
        table = pd.DataFrame([{"quantity": key, "value": str(value)} for key, value in result.items()])
        tables[name] = table
        sections.append(f"### {name}\n\n" + markdown_table(table))
    markdown = (
        "QuadraticLogisticRegression fitted on Dask arrays generated on a LocalCluster's worker "
        "processes (one thread each), each case in its own child process; seconds per L-BFGS "
        f"iteration leave out the first iteration (persisting the blocks). Rounds of the scaling "
        f"case: {rounds}.\n\n" + "\n\n".join(sections)
    )
    return {"title": "Dask scaling of QuadraticLogisticRegression", "markdown": markdown,
            "tables": tables, "figures": []}
