"""The SDP solver's targets (issue 9): time, certified gap and peak memory per case.

Suite ``sdp-targets`` of ``python -m skquad.benchmarks``; ``--datasets`` picks the cases:

``credit``, ``credit_scs``
    SDPQuantizedClassifier (logistic loss) on credit-approval, native solver / SCS.
``planted200``, ``planted784``
    A planted network (2,000 samples, 10 planted neurons, 200 / 784 features), 1,000 neurons.
``optdigits``, ``optdigits_tol1e-3``, ``letter``
    The default classifier on 4,496 training digits (letter: 16,000 rows, 26
    classes); test accuracy of the sampled and the relaxed network, process CPU time.
``wide{n}x{d}_regressor``, ``wide{n}x{d}_classifier`` (``WIDE_CASES``, issue 36)
    The SDP regressor / classifier at their defaults on a planted quadratic
    target (or its sign); the test score on 2,000 new rows, the route, ``beta_``
    and the certified gap, or the message of a shape refused up front. The
    ``...cv`` cases: the CV estimators' refitted model.
``small``, ``small_uci``
    Fits of one relaxation (``SOLVER_FIT``: the paper's problem at the rule's
    ``beta``, the second layer refitted in the SDP's loss)
    against each CVXPY reference of ``REFERENCES`` on iris, wine
    and breast cancer (standardized) / the UCI sets ``SMALL_UCI``, interleaved
    after a warm-up; medians of the process CPU time (run with ``--threads 1``),
    the ratios ``SCS / native``, ``CLARABEL / native`` and ``CLARABEL at tol /
    native`` (CLARABEL stopped at a tenth of the native ``tol``, ``MATCHED_OPTIONS``,
    near the gap the native fit is asked for) and each side's certified relative
    gap. A reference over ``REFERENCE_SKIP_SECONDS`` in the warm-up is not
    repeated (the row's ``note`` says so).
``large_uci``
    One fit each on ``LARGE_UCI``; each reference runs in a child process capped
    at ``CAP_RATIO`` times the native CPU time (SCS's ``time_limit_secs`` and
    ``RLIMIT_CPU``) and at half the available memory (at most ``MEMORY_CAP``).
    A reference stopped short gives a lower bound on its ratio, and the note
    says where it stopped.

Each case runs in a child process of its own, so that its peak resident
memory is its own. The UCI cases need the UCI data (``SKQUAD_DATA``).
"""

import json
import math
import resource
import signal
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skquad import SDPQuantizedClassifier, SDPQuantizedClassifierCV, SDPQuantizedRegressor, SDPQuantizedRegressorCV
from skquad.datasets import load_uci, make_planted_quantized, make_uci_preprocessor

from .._report import active_thread_limit, markdown_table, run_child, thread_limit

# Wide data at the defaults (issue 36): n rows x d features, a planted quadratic
# target (regressor) or its sign about the median (classifier).
WIDE_CASES = tuple(
    f"wide{n}x{d}_{kind}"
    for n, d in ((1000, 100), (2000, 250), (5000, 300), (150, 1100))
    for kind in ("regressor", "classifier")
) + ("wide2000x250_regressorcv", "wide2000x250_classifiercv")
_WIDE_MODELS = {"regressor": SDPQuantizedRegressor, "classifier": SDPQuantizedClassifier,
                "regressorcv": SDPQuantizedRegressorCV, "classifiercv": SDPQuantizedClassifierCV}
CASES = ("credit", "credit_scs", "planted200", "planted784", "optdigits", "optdigits_tol1e-3",
         "letter", "small", "small_uci", "large_uci") + WIDE_CASES
# The UCI sets of case small_uci (issue 18: every quick-benchmark and UCI set
# where SCS finishes in reasonable time).
SMALL_UCI = ("breast.cancer", "glass", "ionosphere", "diabetes", "vehicle", "credit-approval",
             "segment")
# The UCI sets of case large_uci, where SCS is run under a cap (issue 18).
LARGE_UCI = ("spambase", "waveform5000", "optdigits", "pendigits", "letter")
QUICK_CASES = ("small",)


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _relative_gap(model):
    return model.certified_gap_ / model.relaxed_objective_


def _summary(model, elapsed):
    return {
        "fit time (s)": elapsed,
        "solve time (s)": model.solve_time_,
        "status": model.solver_status_,
        "relaxed objective": model.relaxed_objective_,
        "lower bound": model.lower_bound_,
        "relative gap": _relative_gap(model),
        "iterations": model.n_iter_,
    }


def _fit(model, X, y, clock=time.perf_counter):
    started = clock()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return clock() - started, [f"{w.category.__name__}: {w.message}" for w in caught]


# The CVXPY references every such fit is timed against: SCS (first
# order, the issues' yardstick) and CLARABEL (interior point, more accurate).
REFERENCES = ("SCS", "CLARABEL")
# Cases small and small_uci also time CLARABEL stopped at a tenth of the native fit's tol, near
# the certified gap the native fit is asked for (its own stopping rules go on to far smaller gaps).
MATCHED_REFERENCE = "CLARABEL at tol"
MATCHED_OPTIONS = {
    key: 0.1 * SDPQuantizedClassifier().tol for key in ("tol_gap_abs", "tol_gap_rel", "tol_feas")
}
# A reference fit above this many CPU seconds in the warm-up is not repeated (the row says so).
REFERENCE_SKIP_SECONDS = 60.0


def _versus_references(label, X, y, rounds):
    """Fits (``SOLVER_FIT``) against each solver of ``REFERENCES`` on ``(X, y)`` (module docstring): one row,
    with each side's certified gap, so that a ratio can be read at the gap each side reached."""
    sides = {"native": {}, **{name: {"solver": name} for name in REFERENCES},
             MATCHED_REFERENCE: {"solver": "CLARABEL", "solver_options": MATCHED_OPTIONS}}
    times = {name: [] for name in sides}
    models, skipped = {}, []
    for round_index in range(rounds + 1):  # round 0 warms up (imports, compilation)
        for name, options in sides.items():
            if name in skipped:
                continue
            models[name] = SDPQuantizedClassifier(random_state=0, **SOLVER_FIT, **options)
            elapsed, _ = _fit(models[name], X, y, clock=time.process_time)
            if round_index:
                times[name].append(elapsed)
            elif name != "native" and elapsed > REFERENCE_SKIP_SECONDS:
                skipped.append(name)
                times[name].append(elapsed)
    model = models["native"]
    native = float(np.median(times["native"]))
    row = {"case": label, "n": X.shape[0], "d": X.shape[1], "classes": len(np.unique(y)),
           "fit time (s)": native, "solver": model.solver_, "relative gap": _relative_gap(model),
           "training accuracy": model.score(X, y)}
    for name in (*REFERENCES, MATCHED_REFERENCE):
        seconds = float(np.median(times[name]))
        row.update({f"{name} fit time (s)": seconds, f"{name} / native": seconds / native,
                    f"{name} relative gap": _relative_gap(models[name]),
                    f"{name} training accuracy": models[name].score(X, y)})
    if skipped:
        row["note"] = "; ".join(
            f"{name} took {times[name][0]:.0f} s (over {REFERENCE_SKIP_SECONDS:.0f} s) in the "
            "warm-up round: timed once, not repeated" for name in skipped)
    return row


# The cases against the references compare the relaxation's solvers on one relaxation each:
# the paper's problem (no linear term) at the (p / n)^2 rule's beta, where beta="auto" would
# solve a held-out search's candidates too. Both sides refit the second layer in the SDP's
# loss, as the references' route is chosen by the solver alone (the multiclass default's
# logistic refit would be a cost common to both sides).
SOLVER_FIT = {"refit_output_layer": True, "beta": "rule", "linear_term": False}

# Case large_uci: a reference stops at this many times the native fit's CPU time.
CAP_RATIO = 10.0
# ... and within half the available memory, at most this many bytes (CVXPY's
# compilation of spambase's problem alone peaked at 4.4 GB).
MEMORY_CAP = 12e9


def _uci_set(name):
    X, y = load_uci(name, return_X_y=True, as_frame=True)
    return make_uci_preprocessor().fit_transform(X), np.asarray(y).astype(str)


def _proc_bytes(path, key):
    """A ``key: N kB`` line of a Linux ``/proc`` file, in bytes (the caps are
    Linux's too); None when absent."""
    with open(path) as lines:
        for line in lines:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return None


def _time_limit(solver, seconds):
    """The ``solver_options`` that stop ``solver``'s iterations after ``seconds``: SCS's (CLARABEL
    returns no point at a limit, so only the CPU cap ends it)."""
    return {"time_limit_secs": seconds} if solver == "SCS" else {}


def _capped_reference_child(solver, name, cpu_cap, memory_cap, threads=None):
    """Entry point of a capped reference fit (case large_uci): one JSON line. The CPU and address
    space limits are set after the imports and the data, so that they bound the fit alone."""
    X, y = _uci_set(name)
    with thread_limit(threads):
        used = resource.getrusage(resource.RUSAGE_SELF)
        setup = used.ru_utime + used.ru_stime
        # The CPU time before the fit, flushed now: if CVXPY's C++ runs out of
        # memory (std::bad_alloc ends the process), the parent subtracts it
        # from the child's CPU time to get the fit's time until then.
        print(json.dumps({"setup CPU (s)": setup}), flush=True)
        limit = math.ceil(setup + cpu_cap)
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
        address_space = _proc_bytes("/proc/self/status", "VmSize") + int(memory_cap)
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        model = SDPQuantizedClassifier(solver=solver, solver_options=_time_limit(solver, cpu_cap),
                                       random_state=0, **SOLVER_FIT)
        started = time.process_time()
        try:
            elapsed, _ = _fit(model, X, y, clock=time.process_time)
        except MemoryError:
            print(json.dumps({"memory": True, "fit CPU (s)": time.process_time() - started}))
            return
    print(json.dumps({f"{solver} fit time (s)": elapsed, f"{solver} status": model.solver_status_,
                      f"{solver} relative gap": _relative_gap(model),
                      f"{solver} training accuracy": model.score(X, y)}))


def _capped_reference(solver, name, native):
    """``solver``'s fit of UCI set ``name`` capped at ``CAP_RATIO`` times the ``native`` CPU seconds,
    in a child process: the row's fields (a fit stopped short proves a lower bound on the ratio)."""
    cap = CAP_RATIO * native
    available = _proc_bytes("/proc/meminfo", "MemAvailable")
    memory_cap = MEMORY_CAP if available is None else min(MEMORY_CAP, 0.5 * available)
    code = (
        "from skquad.benchmarks.research._sdp_targets import _capped_reference_child; "
        f"_capped_reference_child({solver!r}, {name!r}, {cap!r}, {memory_cap!r}, {active_thread_limit()!r})"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    completed, _ = run_child(code)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    lines = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]
    setup = next((line["setup CPU (s)"] for line in lines if "setup CPU (s)" in line), None)
    result = lines[-1] if completed.returncode == 0 and lines else {}
    ratio, bound = f"{solver} / native", f"{solver} / native is a lower bound"
    if f"{solver} fit time (s)" in result:
        finished = result[f"{solver} status"] == "optimal"
        row = {**result, ratio: result[f"{solver} fit time (s)"] / native, bound: not finished}
        if not finished:
            row["note"] = (f"{solver} stopped at its time limit ({cap:.3g} s) with status "
                           f"{result[f'{solver} status']!r}, certified gap "
                           f"{result[f'{solver} relative gap']:.1e}")
        return row
    if completed.returncode == -signal.SIGXCPU:
        return {f"{solver} fit time (s)": cap, ratio: CAP_RATIO, bound: True,
                "note": f"{solver} killed at the CPU cap ({cap:.3g} s; {child_cpu:.3g} s with the imports)"}
    if result.get("memory") or "bad_alloc" in completed.stderr:  # Python's or CVXPY's C++
        note = f"{solver} needed more than {memory_cap / 1e9:.1f} GB (out of memory)"
        # The fit had used this much CPU when the memory ran out; with more
        # memory it would have used at least as much: a lower bound.
        spent = result.get("fit CPU (s)", None if setup is None else child_cpu - setup)
        if spent is not None and spent > 0:
            return {f"{solver} fit time (s)": spent, ratio: spent / native, bound: True,
                    "note": note + f" after {spent:.3g} CPU s of its fit"}
    else:
        note = f"{solver} failed (exit {completed.returncode}): {completed.stderr.strip()[-200:]}"
    return {ratio: float("nan"), "note": note}


def _versus_capped_references(name):
    """One fit (``SOLVER_FIT``) against a capped fit of each of ``REFERENCES`` (case large_uci)."""
    X, y = _uci_set(name)
    model = SDPQuantizedClassifier(random_state=0, **SOLVER_FIT)
    native, _ = _fit(model, X, y, clock=time.process_time)
    row = {"case": f"large_uci: {name}", "n": X.shape[0], "d": X.shape[1],
           "classes": len(np.unique(y)), "fit time (s)": native, "solver": model.solver_,
           "relative gap": _relative_gap(model), "training accuracy": model.score(X, y)}
    notes = []
    for solver in REFERENCES:
        fields = _capped_reference(solver, name, native)
        notes += [fields.pop("note")] if "note" in fields else []
        row.update(fields)
    return {**row, **({"note": "; ".join(notes)} if notes else {})}


def _timed_case(case, model, X, y, scores):
    """One fit's row: the solver's summary, the shape, the CPU time, ``scores()`` after the fit."""
    cpu = time.process_time()
    elapsed, caught = _fit(model, X, y)
    extra = {"n": X.shape[0], "d": X.shape[1], "cpu time (s)": time.process_time() - cpu, **scores()}
    return [{"case": case, **_summary(model, elapsed), **extra, "warnings": len(caught)}]


def _case(case, rounds):
    """One case's measurements as a list of row dicts (runs in the child process)."""
    if case.startswith("credit"):
        X, y = load_uci("credit-approval", return_X_y=True, as_frame=True)
        X = make_uci_preprocessor().fit_transform(X)
        y = np.asarray(y).astype(str)
        model = SDPQuantizedClassifier(loss="logistic", solver="SCS" if case == "credit_scs" else None,
                                       random_state=0)
        return _timed_case(case, model, X, y, lambda: {"training accuracy": model.score(X, y)})
    if case.startswith("planted"):
        d = int(case[len("planted"):])
        X, y = make_planted_quantized(n_samples=2000, n_features=d, n_planted=10, random_state=0)
        model = SDPQuantizedClassifier(loss="logistic", n_neurons=1000, random_state=0)
        return _timed_case(case, model, X, y, lambda: {
            "training accuracy": model.score(X, y),
            "relaxed training accuracy": float(np.mean(model.relaxed_predict(X) == y))})
    if case in ("optdigits", "optdigits_tol1e-3", "letter"):
        tol = 1e-3 if case.endswith("tol1e-3") else 1e-4
        case_data = case.split("_")[0]
        X, y = load_uci(case_data, return_X_y=True, as_frame=True)
        if case == "letter":
            X = make_uci_preprocessor().fit_transform(X)
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y).astype(str)
        size = 4496 if case_data == "optdigits" else 16000
        X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=size, stratify=y, random_state=0)
        model = SDPQuantizedClassifier(tol=tol, random_state=0)
        return _timed_case(case, model, X_train, y_train, lambda: {
            "test accuracy": model.score(X_test, y_test),
            "relaxed test accuracy": float(np.mean(model.relaxed_predict(X_test) == y_test))})
    if case in WIDE_CASES:
        return [_wide_case(case)]
    if case == "small":
        rows = []
        for name, loader in (("iris", load_iris), ("wine", load_wine), ("breast_cancer", load_breast_cancer)):
            X, y = loader(return_X_y=True)
            rows.append(_versus_references(f"small: {name}", StandardScaler().fit_transform(X), y, rounds))
        return rows
    if case == "small_uci":
        return [_versus_references(f"small_uci: {name}", *_uci_set(name), rounds) for name in SMALL_UCI]
    if case == "large_uci":
        return [_versus_capped_references(name) for name in LARGE_UCI]
    raise ValueError(f"unknown case {case!r}; the cases are {__name__}.CASES")


def _wide_data(n, d, seed, classifier):
    """``x0 x1 + x2 - x3^2 / 2`` plus noise on ``d`` Gaussian features (its sign about the median)."""
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = X[:, 0] * X[:, 1] + X[:, 2] - 0.5 * X[:, 3] ** 2 + 0.3 * rng.standard_normal(n)
    return X, ((y > np.median(y)).astype(int) if classifier else y)


def _wide_case(case):
    """The SDP regressor or classifier at its defaults on a wide planted problem; scored on 2,000 new rows."""
    shape, kind = case[len("wide"):].split("_")
    n, d = (int(value) for value in shape.split("x"))
    classifier = kind.startswith("classifier")
    X, y = _wide_data(n, d, 0, classifier)
    X_test, y_test = _wide_data(2000, d, 1, classifier)
    model = _WIDE_MODELS[kind](random_state=0)
    cpu = time.process_time()
    try:
        elapsed, caught = _fit(model, X, y)
    except ValueError as exc:  # a shape refused up front
        return {"case": case, "n": n, "d": d, "refused": str(exc)[:200]}
    return {"case": case, **_summary(model, elapsed), "n": n, "d": d,
            "cpu time (s)": time.process_time() - cpu, "solver path": " > ".join(model.solver_path_),
            "beta": model.beta_,
            "test score": model.score(X_test, y_test), "warnings": len(caught)}


def _child(case, rounds, threads=None):
    """Entry point of the child process: one JSON line with the rows and the peak memory, under
    the parent's ``--threads`` limit (``threads``), which a child does not inherit."""
    with thread_limit(threads):
        rows = _case(case, rounds)
    peak = _peak_rss_mb()
    print(json.dumps([{**row, "peak RSS (MB)": peak} for row in rows]))


def _run_child(case, rounds, progress):
    # The run's --threads limit (benchmarks.__main__ holds it while suites run).
    threads = active_thread_limit()
    code = (
        "from skquad.benchmarks.research._sdp_targets import _child; "
        f"_child({case!r}, {rounds}, {threads!r})"
    )
    progress(f"sdp targets: {case} (child process)")
    completed, rows = run_child(code, start="[")
    if rows is None:
        return [{"case": case, "error": f"exit {completed.returncode}: {completed.stderr.strip()[-300:]}"}]
    return rows


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """The cases named in ``datasets`` (default: all; quick: ``small``), one child process each.

    ``repeats``: rounds of the ``small`` case (default 5; quick 2). ``device``
    is not used (the SDP's default device is the CPU).
    """
    cases = list(datasets or (QUICK_CASES if quick else CASES))
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        raise ValueError(f"unknown SDP target cases {unknown}; choose from {list(CASES)}")
    rounds = repeats or (2 if quick else 5)
    rows = [row for case in cases for row in _run_child(case, rounds, progress)]
    table = pd.DataFrame(rows)
    markdown = (
        "SDPQuantizedClassifier on the cases of the solver targets (issue 9), each in its own "
        "process (peak RSS is the process's). The relative gap is the certified one "
        "(relaxed objective minus lower bound, over the objective), each side's its own; `small`, "
        f"`small_uci`: medians of {rounds} rounds after a warm-up, process CPU time, and "
        "`SCS / native`, `CLARABEL / native` the CVXPY references' time over the native fit's; "
        f"`{MATCHED_REFERENCE} / native`: CLARABEL with its stopping tolerances at "
        f"{MATCHED_OPTIONS['tol_gap_rel']:g}, a tenth of the native fit's tol, to stop near the "
        "certified gap the native fit is asked for (each side's certified gap beside it).\n\n"
        + markdown_table(table, floatfmt=".4g")
    )
    return {"title": "SDP solver targets", "markdown": markdown, "tables": {"sdp_targets": table}, "figures": []}
