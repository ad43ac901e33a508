"""QuadraticLogisticRegression on Dask collections: the scaling targets of issue 20.

Suite ``dask-scaling`` of ``python -m skquad.benchmarks``. ``--datasets`` picks
the cases, each in a child process of its own on a ``LocalCluster`` of
one-thread worker processes, on a planted quadratic logistic model generated
on the workers (never materialised in the parent):

``memory`` (n=10,000,000, d=50)
    The fit with 2 workers (10 L-BFGS iterations): the client's and the workers' peak RSS.
``match`` (n=1,000,000, d=50)
    The fit to convergence (tol=1e-6) against the in-memory fit of the same
    data: both objectives, their relative difference, the largest difference
    of predicted probabilities.
``scaling`` (n=1,000,000, d=50)
    Seconds per iteration with 1 and 2 workers, interleaved for ``--repeats``
    rounds (default 3): medians, the median ratio, and the CPU ms per iteration
    of the client's main thread, its other threads (the scheduler and nannies
    run in its event loop) and the workers (CPU time, which a shared machine's other
    processes do not inflate);
    also the same parts' CPU ms per second with the cluster idle (3 s before
    the fit), a background that grows with wall time.
``overhead`` (n=6,000, d=50, blocks of 1,000 rows)
    ``scaling`` (40 iterations) on blocks too small to compute anything: what
    Dask's machinery costs per iteration.
``daskml`` (n=200,000, d=50), ``daskml-converged`` (n=20,000, d=10, to convergence)
    dask-ml's LogisticRegression (dask-glm's L-BFGS, which also penalises the
    intercept) on PolynomialFeatures(2)-expanded data, 2 workers: seconds per
    iteration, the objectives, and the workers' peak RSS, also above their idle
    RSS (measured after both libraries are imported, before any data exists).
    Needs dask-ml.

skquad's seconds per iteration come from ``verbose`` (the first iteration,
which persists the blocks, left out), dask-ml's from fit time / iterations. ``--quick`` runs ``match`` and ``scaling`` on n=20,000,
d=10. Needs skquad's ``dask`` extra.
"""

import contextlib
import io
import json
import os
import re
import resource
import threading
import time

import numpy as np
import pandas as pd

from skquad import QuadraticLogisticRegression

from .._report import fit_at_budget, markdown_table, run_child

CASES = ("memory", "match", "scaling", "overhead", "daskml", "daskml-converged")
QUICK_CASES = ("match", "scaling")
SIZES = {"memory": (10_000_000, 50), "match": (1_000_000, 50), "scaling": (1_000_000, 50),
         "overhead": (6_000, 50), "daskml": (200_000, 50), "daskml-converged": (20_000, 10)}
QUICK_SIZE = (20_000, 10)
ITERATIONS = 10
OVERHEAD_ITERATIONS = 40


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


class CPUClock:
    """CPU seconds (user + system) of this process's threads and of the worker processes.

    ``snapshot()``: the client's main thread (L-BFGS, the tasks), its other threads (a
    ``LocalCluster``'s scheduler, nannies and communication) and the workers. CPU time, unlike
    wall time, says who uses the cores on a loaded machine.
    """

    def __init__(self, client=None):
        import psutil

        self._main = threading.get_native_id()
        self._self = psutil.Process()
        self._workers = []
        if client is not None:
            self._workers = [psutil.Process(pid) for pid in client.run(os.getpid).values()]

    @staticmethod
    def _cpu(process):
        times = process.cpu_times()
        return times.user + times.system

    def idle_rates(self, seconds=3.0):
        """CPU milliseconds per second of each part while nothing runs (Dask's own background)."""
        before = self.snapshot()
        time.sleep(seconds)
        after = self.snapshot()
        return {key: round(1000 * (after[key] - before[key]) / seconds, 1) for key in before}

    def snapshot(self):
        threads = {t.id: t.user_time + t.system_time for t in self._self.threads()}
        main = threads.pop(self._main, 0.0)
        return {
            "client_main": main, "client_other_threads": sum(threads.values()),
            "workers": sum(map(self._cpu, self._workers)),
        }


class _IterationMarks(io.StringIO):
    """Captured verbose output; a CPU snapshot at each L-BFGS iteration line."""

    def __init__(self, clock):
        super().__init__()
        self.clock, self.marks = clock, []

    def write(self, text):
        if "elapsed =" in text:
            self.marks.append(self.clock.snapshot())
        return super().write(text)


def timed_fit(model, X, y, clock=None):
    """Fit with verbose output captured: (seconds per iteration after the first, wall seconds, and
    the :class:`CPUClock`'s CPU seconds per iteration after the first, by process)."""
    model.set_params(verbose=1)
    buffer = _IterationMarks(clock or CPUClock())
    start = time.perf_counter()
    with contextlib.redirect_stdout(buffer):
        fit_at_budget(model, X, y)
    wall = time.perf_counter() - start
    elapsed = [float(v) for v in re.findall(r"elapsed = ([0-9.]+)s", buffer.getvalue())]
    per_iteration = (elapsed[-1] - elapsed[0]) / (len(elapsed) - 1) if len(elapsed) > 1 else float("nan")
    model.set_params(verbose=0)
    if clock is None:
        return per_iteration, wall
    marks = buffer.marks
    cpu = {key: (marks[-1][key] - marks[0][key]) / (len(marks) - 1) if len(marks) > 1 else float("nan")
           for key in marks[0]} if marks else {}
    return per_iteration, wall, cpu


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
        # (on Dask quadratic_C="auto" is C: the in-memory fit says so too, to match)
        remote = QuadraticLogisticRegression(quadratic_C=None, tol=1e-6)
        _, remote_seconds = timed_fit(remote, X, y)
        X_local, y_local = dask.compute(X, y)
    local = QuadraticLogisticRegression(quadratic_C=None, tol=1e-6)
    start = time.perf_counter()
    fit_at_budget(local, X_local, y_local)
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


def _median_cpu(samples, scale=1000):
    """Medians over rounds of CPU seconds (times ``scale``: milliseconds by default)."""
    return {key: round(scale * float(np.median([s[key] for s in samples])), 1) for key in samples[0]}


def case_scaling(n, d, iterations, rounds, block_rows=None, name="scaling"):
    """``block_rows``: rows per block (default :func:`chunk_rows`; the ``overhead`` case's 1000)."""
    from distributed import Client

    times, cpu, idle = {1: [], 2: []}, {1: [], 2: []}, {1: [], 2: []}
    for _ in range(rounds):
        for n_workers in (1, 2):
            with cluster(n_workers) as local, Client(local) as client:
                # the same blocks for both cluster sizes (2 per worker of the larger)
                X, y = make_data(n, d, block_rows or chunk_rows(n, d, 2))
                model = QuadraticLogisticRegression(max_iter=iterations, tol=0.0)
                clock = CPUClock(client)
                idle[n_workers].append(clock.idle_rates())
                per_iteration, _, seconds = timed_fit(model, X, y, clock)
                times[n_workers].append(per_iteration)
                cpu[n_workers].append(seconds)
    ratios = np.array(times[2]) / np.array(times[1])
    return {
        "case": name, "n": n, "d": d, "blocks": len(X.chunks[0]), "iterations": iterations,
        "rounds": rounds,
        "seconds_per_iteration_1_worker": [round(t, 3) for t in times[1]],
        "seconds_per_iteration_2_workers": [round(t, 3) for t in times[2]],
        "median_ratio_2_over_1": round(float(np.median(ratios)), 3),
        "cpu_ms_per_iteration_1_worker": _median_cpu(cpu[1]),
        "cpu_ms_per_iteration_2_workers": _median_cpu(cpu[2]),
        # Dask's background (event-loop ticks, memory monitors, heartbeats) with no work
        "idle_cpu_ms_per_second_1_worker": _median_cpu(idle[1], scale=1),
        "idle_cpu_ms_per_second_2_workers": _median_cpu(idle[2], scale=1),
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
            fit_at_budget(reference, expanded, y)
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
    if case == "overhead":
        return case_scaling(n, d, OVERHEAD_ITERATIONS, rounds, block_rows=1000, name="overhead")
    if case in ("daskml", "daskml-converged"):
        return case_daskml(n, d, ITERATIONS, converged=case == "daskml-converged")
    raise ValueError(f"unknown case {case!r}; choose from {list(CASES)}")


def _child(case, n, d, rounds):
    """Entry point of the child process: one JSON line with the case's results."""
    print(json.dumps(_case(case, n, d, rounds)))


def _run_child(case, n, d, rounds, progress, module=__name__):
    """``module``'s ``_child`` of the case in a child process: its JSON result, or the error."""
    code = f"from {module} import _child; _child({case!r}, {n}, {d}, {rounds})"
    progress(f"{module.rsplit('.', 1)[-1]}: {case} n={n} d={d} (child process)")
    completed, result = run_child(code)
    if result is None:
        return {"case": case, "n": n, "d": d,
                "error": f"exit {completed.returncode}: {completed.stderr.strip()[-300:]}"}
    return result


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
    return _report(
        results, "QuadraticLogisticRegression fitted on Dask arrays generated on a LocalCluster's "
        "worker processes (one thread each), each case in its own child process; seconds per "
        "L-BFGS iteration leave out the first iteration (persisting the blocks). Rounds of the "
        f"scaling case: {rounds}.", "Dask scaling of QuadraticLogisticRegression",
    )


def _report(results, introduction, title):
    """The suite contract's report: one table of quantities per case, after ``introduction``."""
    sections, tables = [], {}
    for result in results:
        name = result["case"]
        table = pd.DataFrame([{"quantity": key, "value": str(value)} for key, value in result.items()])
        tables[name] = table
        sections.append(f"### {name}\n\n" + markdown_table(table))
    markdown = introduction + "\n\n" + "\n\n".join(sections)
    return {"title": title, "markdown": markdown, "tables": tables, "figures": []}
