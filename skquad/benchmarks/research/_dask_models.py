"""The SDP estimators and the networks' L-BFGS on Dask collections: issue 43's targets.

Suite ``dask-models`` of ``python -m skquad.benchmarks``: each case in a child
process of its own, on a ``LocalCluster`` of one-thread worker processes and
rows generated lazily on the workers (only the in-memory reference's prefix is
materialised). ``sdp`` (n=4e6, d=20): SDPQuantizedRegressor and
SDPQuantizedClassifier on a planted binary network, 2 workers: the client's
peak RSS growth, seconds per pass and of the solve, the certified gap, bytes
per task per pass, the test score; the Dask and in-memory fits of a prefix:
relaxed optima and test scores. ``qnn`` (n=2e6, d=30): QNNClassifier(lbfgs):
the Dask and in-memory losses on a prefix after the same iterations, the
client's growth, seconds and CPU per iteration with 1 and 2 workers, bytes per
evaluation. ``--quick``: small arrays. Each case records the load average.
"""

import json
import os
import time

import numpy as np

from skquad import QNNClassifier, SDPQuantizedClassifier, SDPQuantizedRegressor

from .._report import fit_at_budget
from ._dask_scaling import CPUClock, PeakRSS, _report, _run_child, cluster, timed_fit

CASES = ("sdp", "qnn")
SIZES = {"sdp": (4_000_000, 20), "qnn": (2_000_000, 30)}
QUICK_SIZE = {"sdp": (20_000, 6), "qnn": (20_000, 8)}
PREFIX, CHUNK, NEURONS, ITERATIONS = 200_000, 50_000, 300, 10


def planted_sdp(n, d, chunk, seed=0):
    """Lazy rows of a planted binary network: ``(X, y_regression, y_labels)``."""
    import dask.array as da

    U, V = np.random.default_rng(1234).choice([-1.0, 1.0], (2, 4, d + 1))
    alpha = np.array([1.0, -1.0, 0.5, -0.5]) / (d + 1)
    X = da.random.RandomState(seed).normal(size=(n, d), chunks=(chunk, d))
    Z = da.concatenate([X, da.ones((n, 1), chunks=(chunk, 1))], axis=1)
    score = ((Z @ U.T) * (Z @ V.T)) @ alpha
    noise = da.random.RandomState(seed + 1).normal(scale=0.5, size=n, chunks=chunk)
    return X, score + noise, (score > 0).astype(np.int64)


def planted_qnn(n, d, chunk, seed=0):
    import dask.array as da

    X = da.random.RandomState(seed).normal(size=(n, d), chunks=(chunk, d))
    return X, (X[:, 0] * X[:, 1] - 0.5 * X[:, 2] ** 2 + X[:, 3] + 0.5 > 0).astype(np.int64)


def _fit(model, X, y):
    start = time.perf_counter()
    fit_at_budget(model, X, y)
    return round(time.perf_counter() - start, 2)


def _client_growth(fit):
    """``(fit(), this process's peak RSS growth in MB while it ran)``."""
    with PeakRSS([os.getpid()]) as peak:
        start = peak.processes[0].memory_info().rss
        result = fit()
    return result, round((peak.peak[os.getpid()] - start) / 2**20, 1)


def case_sdp(n, d):
    from distributed import Client

    prefix, chunk = min(PREFIX, n // 4), min(CHUNK, n // 8)
    X, y_reg, y_cls = planted_sdp(n, d, chunk)
    test = [a.compute() for a in planted_sdp(100_000, d, 50_000, seed=7)]
    m = (d + 1) * (d + 2) // 2
    result = {"case": "sdp", "n": n, "d": d, "prefix": prefix, "n_neurons": NEURONS,
              "bytes_per_task_per_pass": 8 * (m * m + 2 * m + 3)}
    with cluster(2) as local, Client(local) as client:
        client.run(__import__, "skquad")
        for name, make, y, y_test in (("regressor", SDPQuantizedRegressor, y_reg, test[1]),
                                      ("classifier", SDPQuantizedClassifier, y_cls, test[2])):
            model = make(n_neurons=NEURONS, random_state=0)
            seconds, growth = _client_growth(lambda: _fit(model, X, y))
            on_prefix, in_memory = (make(n_neurons=NEURONS, random_state=0) for _ in range(2))
            _fit(on_prefix, X[:prefix], y[:prefix])
            _fit(in_memory, X[:prefix].compute(), y[:prefix].compute())
            result[name] = {
                "client_peak_growth_mb": growth, "fit_seconds": seconds,
                "pass_seconds": [round(t, 1) for t in getattr(model, "_pass_times", ())],
                "solve_seconds": round(model.solve_time_, 2),
                "certified_relative_gap": model.certified_gap_ / abs(model.relaxed_objective_),
                "test_score": model.score(test[0], y_test),
                "prefix_relaxed_optimum_relative_difference": abs(
                    on_prefix.relaxed_objective_ - in_memory.relaxed_objective_
                ) / abs(in_memory.relaxed_objective_),
                "prefix_test_score_dask": on_prefix.score(test[0], y_test),
                "prefix_test_score_in_memory": in_memory.score(test[0], y_test),
            }
    return result | {"load_average": os.getloadavg()}


def case_qnn(n, d):
    from distributed import Client

    prefix, chunk = min(PREFIX, n // 4), min(CHUNK, n // 8)

    def model(max_iter):
        return QNNClassifier(hidden_layer_sizes=(16,), solver="lbfgs", max_iter=max_iter,
                             tol=0.0, random_state=0)

    X, y = planted_qnn(n, d, chunk)
    result = {"case": "qnn", "n": n, "d": d, "prefix": prefix, "iterations": ITERATIONS}
    with cluster(2) as local, Client(local):
        on_prefix = model(ITERATIONS)
        _, result["client_peak_growth_mb_prefix_fit"] = _client_growth(
            lambda: _fit(on_prefix, X[:prefix], y[:prefix]))
        _, result["client_peak_growth_mb_full_fit"] = _client_growth(
            lambda: _fit(model(2), X, y))
    in_memory = model(ITERATIONS)
    _fit(in_memory, X[:prefix].compute(), y[:prefix].compute())
    n_parameters = sum(p.numel() for p in in_memory.to_torch().parameters())
    result.update(loss_dask=on_prefix.loss_, loss_in_memory=in_memory.loss_,
                  loss_relative_difference=abs(on_prefix.loss_ - in_memory.loss_) / in_memory.loss_,
                  n_parameters=int(n_parameters))
    for workers in (1, 2):
        with cluster(workers) as local, Client(local) as client:
            client.run(__import__, "skquad")
            per_iteration, _, cpu = timed_fit(model(ITERATIONS + 1), X, y, CPUClock(client))
        result[f"seconds_per_iteration_{workers}_workers"] = round(per_iteration, 3)
        result[f"cpu_ms_per_iteration_{workers}_workers"] = {k: round(1000 * v, 1) for k, v in cpu.items()}
        # one task per worker thread: the parameters out, the loss and gradient back
        result[f"bytes_per_evaluation_{workers}_workers"] = workers * 8 * (2 * int(n_parameters) + 1)
    result["ratio_2_over_1"] = round(
        result["seconds_per_iteration_2_workers"] / result["seconds_per_iteration_1_workers"], 3)
    return result | {"load_average": os.getloadavg()}


def _child(case, n, d, rounds):
    """Entry point of the child process: one JSON line with the case's results."""
    print(json.dumps(case_sdp(n, d) if case == "sdp" else case_qnn(n, d), default=float))


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """The cases named in ``datasets`` (default: both; ``quick``: small arrays).

    ``repeats`` and ``device`` are not used (one fit per measurement, on the workers' CPUs).
    """
    cases = list(datasets or CASES)
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        raise ValueError(f"unknown Dask model cases {unknown}; choose from {list(CASES)}")
    results = [_run_child(case, *(QUICK_SIZE if quick else SIZES)[case], 1, progress, __name__)
               for case in cases]
    return _report(
        results, "The SDP estimators and QNNClassifier(solver='lbfgs') on Dask arrays generated on "
        "a LocalCluster's worker processes (one thread each), each case in its own child process.",
        "The SDP estimators and the networks on Dask",
    )
