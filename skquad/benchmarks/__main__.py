"""Command line: ``python -m skquad.benchmarks [--suite NAME] [--quick] ...``.

Run ``python -m skquad.benchmarks --help`` for the options. A thin layer: the
uci suite is :func:`skquad.benchmarks.run_benchmark`'s protocol.

Contract for suite modules: a module ``skquad/benchmarks/_NAME.py`` (the
tabular suites) or ``skquad/benchmarks/research/_NAME.py`` (the paper
reproductions and speed runs) exposes

.. code-block:: python

    def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto",
            progress=print) -> dict
    def speed(*, output_dir, quick=False, repeats=None, datasets=None, device="auto",
              progress=print) -> dict

returning ``{"title": str, "markdown": str, "tables": {name: DataFrame},
"figures": [file names saved under output_dir]}``.
"""

import argparse
import importlib
import shlex
import sys
import time
import traceback
from pathlib import Path

from ._fingerprint import fingerprint
from ._protocol import thread_limit
from ._report import prefix_figure_links, prepare_output_dir, write_report

# Each suite is a list of (module, function) parts following the benchmark
# contract (see skquad.benchmarks); a multi-part suite gets one report with a
# section per part.
SUITES = {
    "uci": [("_uci_suite", "run")],
    "regression": [("_regression_suite", "run")],
    "robustness": [("_robustness_suite", "regression"), ("_robustness_suite", "classification")],
    "paper001": [("research._paper001", "run")],
    "paper002": [("research._paper002", "run")],
    "speed": [
        ("research._qlr", "speed"),
        ("research._layers", "speed"),
        ("research._paper001", "speed"),
        ("research._paper002", "speed"),
    ],
    "speed-networks": [
        ("research._network_speed", "classifiers"),
        ("research._network_speed", "regressors"),
    ],
    "qlr": [("research._qlr", "speed"), ("research._qlr", "regression_speed")],
    "sdp-targets": [("research._sdp_targets", "run")],
    "device": [("research._device_speed", "run")],
    "array-api": [("research._array_api_speed", "run")],
    "dask-scaling": [("research._dask_scaling", "run")],
    "dask-models": [("research._dask_models", "run")],
    "shap-speed": [("research._shap_speed", "run")],
    "sparse-q": [("research._sparse_q", part) for part in ("planted", "uci", "constraints", "path")],
}

SUITE_HELP = {
    "uci": "every skquad estimator and the usual baselines on the 13 UCI datasets (default)",
    "regression": "skquad's regressors against Ridge, PolynomialFeatures(2) + Ridge, "
    "MLPRegressor, SVR, KernelRidge(poly 2) and HistGradientBoosting on the seven "
    "regression sets (repeated 5-fold cross-validation)",
    "robustness": "every skquad estimator at its defaults with a user's plain protocol (one-hot, "
    "impute and standardize, log of a skewed target, shuffled 75/25 splits) against the "
    "baselines: the regression sets (mean, worst split, catastrophic splits against Ridge, the "
    "issue-36 targets) and the UCI sets with categorical features (breast.cancer, credit.a)",
    "paper001": "the experiments of Noel et al. (QNN/RPQNN): XOR, six clusters, Table 4/5 "
    "analogues, and the ReLinear divergence study of Fan et al.",
    "paper002": "the experiments of Bartan & Pilanci (SDP): planted network, UCI, vehicle",
    "speed": "the speed targets, measured side by side",
    "speed-networks": "QNN/RPQNN classifiers and regressors against scikit-learn's MLPs, fit "
    "time per epoch in float64 and float32 (--repeats: rounds)",
    "qlr": "the quadratic-form engine's targets: QuadraticLogisticRegression "
    "against PolynomialFeatures(2) + LogisticRegression, QuadraticRegression against "
    "PolynomialFeatures(2) + Ridge, and both at large n",
    "sdp-targets": "the SDP solver's targets: time, certified gap and peak memory per case "
    "(--datasets: credit, credit_scs, planted200, planted784, optdigits, letter, small, small_uci, "
    "large_uci; --quick: small)",
    "device": "every estimator with a device parameter fitted on the CPU and on --device (default "
    "cuda) side by side: wall time per iteration, epoch or fit, and the GPU's peak memory "
    "(synthetic data; --quick: smaller problems)",
    "array-api": "fit + predict of the array-API estimators on torch tensors (--device, default the "
    "CPU) with array_api_dispatch=True against numpy arrays (needs SCIPY_ARRAY_API=1)",
    "dask-scaling": "QuadraticLogisticRegression on Dask arrays of a local cluster: memory, "
    "agreement with the in-memory fit, 1 against 2 workers, dask-ml (--datasets: memory, match, "
    "scaling, overhead, daskml, daskml-converged; --quick: match and scaling on a small array)",
    "dask-models": "the SDP estimators and QNNClassifier(solver='lbfgs') on Dask arrays of a local "
    "cluster: client memory, agreement with the in-memory fit of a prefix, seconds per pass, 1 "
    "against 2 workers, bytes per evaluation (--datasets: sdp, qnn; --quick: small arrays)",
    "sparse-q": "sparse Q (penalty='l1'): planted pairs recovered by the CV estimators (F1), the "
    "UCI sets' accuracy and share of pairs against dense QLR, interaction_cst fit time against "
    "allowed pairs, QuadraticLogisticRegressionCV's path against one fit (--quick: small)",
    "shap-speed": "the closed-form SHAP values of skquad.inspection against the shap package's exact "
    "and default explainers on 1,000 samples x 20 features (--quick: 100 x 8)",
}

SUITE_TITLES = {
    "uci": "UCI benchmark",
    "regression": "Regression benchmark",
    "robustness": "Robustness at defaults",
    "paper001": "Experiments of Noel et al. (QNN/RPQNN) and Fan et al. (ReLinear)",
    "paper002": "Experiments of Bartan & Pilanci (SDP)",
    "speed": "Speed targets",
    "speed-networks": "Network speed against scikit-learn's MLPs",
    "qlr": "Quadratic-form engine targets",
    "sdp-targets": "SDP solver targets",
    "device": "Fit times: CPU against GPU",
    "array-api": "Array API: tensors against numpy",
    "dask-scaling": "Dask scaling of QuadraticLogisticRegression",
    "dask-models": "The SDP estimators and the networks on Dask",
    "shap-speed": "Closed-form SHAP values against shap",
    "sparse-q": "Sparse Q, paths and interaction constraints",
}

# The suites that run_benchmark's protocol drives (estimators, tuning, seeds).
TABULAR_SUITES = ("uci", "regression")
# The suites whose fit times compare algorithms side by side, on one thread by
# default: on a busy machine a second BLAS thread spins and decides the ratios.
# qlr's n = 1e6 and 1e5 problems run in child processes on the libraries' threads.
ONE_THREAD_SUITES = TABULAR_SUITES + ("qlr", "robustness", "array-api")

# `time python -m skquad.benchmarks --quick` on two cores; the README, the install
# page and the benchmark page quote the same figure.
QUICK_DURATION = "under a minute"


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _non_negative_int(text):
    if text == "0":
        return 0
    return _positive_int(text)


def _names(values):
    """``--datasets a b`` and ``--datasets a,b`` both work."""
    if values is None:
        return None
    return [name for value in values for name in value.split(",") if name.strip()]


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m skquad.benchmarks",
        description=(
            "Benchmark skquad's quadratic-neuron classifiers against scikit-learn "
            "baselines. Writes a Markdown report, CSV tables and PNG plots to --output; "
            "progress goes to stderr."
        ),
        epilog="Suites: " + "; ".join(f"{k}: {v}" for k, v in SUITE_HELP.items()) + ".",
    )
    parser.add_argument("--suite", choices=list(SUITES), default="uci", help="which benchmark (default: uci)")
    parser.add_argument(
        "--quick", action="store_true",
        help="a small run; for the uci suite on scikit-learn's bundled datasets "
        f"(no data directory needed), {QUICK_DURATION} on two cores",
    )
    parser.add_argument(
        "--datasets", nargs="+", metavar="NAME",
        help="datasets to run (space or comma separated); uci: UCI file or OpenML names "
        "(credit.a, credit-approval, ...); with --quick: iris, wine, breast_cancer (the "
        "default), digits; regression: concrete, diamonds, wage, cpus, car_prices, "
        "chem_proc_yield, meats; with --quick: diabetes (the default), linnerud",
    )
    parser.add_argument("--repeats", type=_positive_int, help="splits / seeds per dataset (default: the suite's)")
    parser.add_argument(
        "--output", type=Path, metavar="DIR",
        help="folder for report.md, the CSVs and the plots (default: benchmark_results/SUITE[-quick])",
    )
    parser.add_argument(
        "--device", default="auto",
        help="torch device for skquad estimators: auto (the estimators' default), cpu, cuda, cuda:N",
    )
    uci = parser.add_argument_group("uci, regression and robustness suites only")
    uci.add_argument("--tune", action="store_true", help="nested 3-fold GridSearchCV per estimator (slower)")
    uci.add_argument("--estimators", nargs="+", metavar="NAME", help="run only these estimators (e.g. QLR LogReg); uci also takes SDPCV, "
                     "which no run includes unless named")
    uci.add_argument(
        "--max-train", type=_non_negative_int, metavar="N",
        help="cap on every training part, a stratified subsample (default: none; 0: none)",
    )
    parser.add_argument(
        "--threads", type=_non_negative_int, metavar="N",
        help="threads for BLAS/OpenMP and torch during the run (default: 1 for the uci, "
        "regression and qlr suites, so that fit times compare algorithms and are not distorted "
        "by oversubscription on shared machines (qlr's large problems run in child processes "
        "on the libraries' defaults); the libraries' defaults for the other suites; 0: the "
        "libraries' defaults)",
    )
    uci.add_argument(
        "--jobs", type=_positive_int, metavar="N",
        help="worker processes fitting side by side, each fit under --threads (default 1); "
        "the scores do not depend on it; with --threads 1, at most one job per idle core "
        "keeps fit times comparable",
    )
    uci.add_argument("--seed", type=int, default=0, help="seed of the splits and estimators (default 0)")
    regression = parser.add_argument_group("regression and robustness suites only")
    regression.add_argument(
        "--folds", type=_positive_int, metavar="K",
        help="folds of the repeated K-fold cross-validation (default 5)",
    )
    regression.add_argument(
        "--max-samples", type=_non_negative_int, metavar="N",
        help="subsample a larger dataset to N rows before the splits (default 5000, which "
        "only diamonds exceeds; 0: none)",
    )
    return parser


def _check_robustness_names(datasets, estimators):
    """ValueError naming a dataset or estimator that no part of the robustness suite knows."""
    from ..datasets import REGRESSION_DATASETS, resolve_uci_name
    from ._estimators import DEFAULT_ESTIMATOR_NAMES, REGRESSION_ESTIMATOR_NAMES

    unknown = [name for name in datasets or ()
               if name not in REGRESSION_DATASETS and resolve_uci_name(name) is None]
    if unknown:
        raise ValueError(f"argument --datasets: unknown {unknown}; choose from "
                         f"{list(REGRESSION_DATASETS)} or the UCI sets")
    known = set(DEFAULT_ESTIMATOR_NAMES) | set(REGRESSION_ESTIMATOR_NAMES)
    unknown = [name for name in estimators or () if name not in known]
    if unknown:
        raise ValueError(f"argument --estimators: unknown {unknown}; choose from {sorted(known)}")


def _load_part(module_name, function_name):
    return getattr(importlib.import_module(f"skquad.benchmarks.{module_name}"), function_name)


def _progress(message):
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _run_parts(parser, args, parts, output, datasets, threads):
    start = time.perf_counter()
    sections, failures = [], []
    multi_part = len(SUITES[args.suite]) > 1
    for name, function_name, function in parts:
        short = name.rpartition(".")[2].lstrip("_")
        part_dir = prepare_output_dir(output / short) if multi_part else output
        kwargs = dict(
            output_dir=part_dir, quick=args.quick, repeats=args.repeats, datasets=datasets,
            device=args.device, progress=_progress,
        )
        if args.suite in TABULAR_SUITES:
            kwargs.update(tune=args.tune, estimators=args.estimators, max_train=args.max_train,
                          random_state=args.seed, n_jobs=args.jobs or 1, n_threads=threads or None)
        if args.suite == "regression":
            kwargs.update(max_samples=args.max_samples, n_splits=args.folds or 5)
        if args.suite == "robustness":
            kwargs.update(estimators=args.estimators, random_state=args.seed,
                          n_jobs=args.jobs or 1, n_threads=threads or None,
                          max_samples=args.max_samples)
        if multi_part:
            _progress(f"part {short.replace('_', ' ')} ({function_name})")
        try:
            result = function(**kwargs)
        except Exception as exc:  # report the other parts anyway
            if isinstance(exc, ValueError) and not multi_part:
                parser.error(str(exc))
            failures.append(f"the {short} part: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            continue
        if multi_part:
            result = dict(result)
            result["markdown"] = prefix_figure_links(result["markdown"], result.get("figures", []), short)
            sections.append((result, f"{short}_"))
        else:
            sections.append((result, ""))
    return sections, failures, time.perf_counter() - start


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    from ._protocol import require_bench

    try:
        require_bench("python -m skquad.benchmarks")
        import matplotlib  # noqa: F401
    except ImportError as exc:
        message = str(exc) if "bench" in str(exc) else (
            "python -m skquad.benchmarks needs pandas and matplotlib, which come with "
            "skquad's 'bench' extra: pip install 'skquad[bench]'"
        )
        parser.exit(2, f"{parser.prog}: error: {message}\n")
    argv = sys.argv[1:] if argv is None else list(argv)
    command = "python -m skquad.benchmarks" + ("" if not argv else " " + shlex.join(argv))

    from .._foundation._torch_utils import resolve_device

    try:
        resolve_device(args.device)
    except ValueError as exc:
        parser.error(f"argument --device: {exc}")

    datasets = _names(args.datasets)
    robustness = args.suite == "robustness"
    if args.suite not in TABULAR_SUITES:
        for option in ("tune", "max_train") + (() if robustness else ("estimators", "jobs")):
            if getattr(args, option) not in (None, False):
                parser.error(f"--{option.replace('_', '-')} applies to --suite uci or regression only")
    if args.suite != "regression":
        for option in ("folds",) + (() if robustness else ("max_samples",)):
            if getattr(args, option) is not None:
                parser.error(f"--{option.replace('_', '-')} applies to --suite regression only")
    if robustness:
        try:
            _check_robustness_names(datasets, args.estimators)
        except ValueError as exc:
            parser.error(str(exc))
    if args.suite in TABULAR_SUITES:
        if args.suite == "uci":
            from ._estimators import DEFAULT_ESTIMATOR_NAMES, OPTIONAL_ESTIMATOR_NAMES

            known = DEFAULT_ESTIMATOR_NAMES + OPTIONAL_ESTIMATOR_NAMES
            from ._uci_suite import resolve_suite_datasets
        else:
            from ._estimators import REGRESSION_ESTIMATOR_NAMES as known
            from ._regression_suite import resolve_suite_datasets

        try:
            datasets = resolve_suite_datasets(datasets, args.quick) if datasets else None
        except ValueError as exc:
            parser.error(f"argument --datasets: {exc}")
        if args.estimators:
            unknown = [name for name in args.estimators if name not in known]
            if unknown:
                parser.error(f"argument --estimators: unknown {unknown}; choose from {list(known)}")
        if args.folds is not None and args.folds < 2:
            parser.error("argument --folds: expected at least 2")

    parts = [(name, function, _load_part(name, function)) for name, function in SUITES[args.suite]]

    output = args.output or Path("benchmark_results") / (args.suite + ("-quick" if args.quick else ""))
    output = prepare_output_dir(output)
    _progress(f"suite {args.suite}{' (quick)' if args.quick else ''} -> {output}")

    threads = args.threads if args.threads is not None else (1 if args.suite in ONE_THREAD_SUITES else 0)
    with thread_limit(threads):
        sections, failures, wall_time = _run_parts(parser, args, parts, output, datasets, threads)

    if failures:
        notes = [f"- failed: {item}" for item in failures]
        sections.append(({"title": "Parts that failed", "markdown": "\n".join(notes), "tables": {}}, ""))
    title = SUITE_TITLES[args.suite]
    if args.quick and args.suite in TABULAR_SUITES:
        title = "Quick benchmark" if args.suite == "uci" else "Quick regression benchmark"
    written = write_report(
        output, title, sections, command=command, wall_time=wall_time, device=args.device,
        threads=threads, fingerprint=fingerprint(args.suite, args.estimators),
    )
    _progress(f"done in {wall_time:.0f} s; report: {written[0]}")
    print(written[0])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
