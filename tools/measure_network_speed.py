"""Issue 22's network speed targets, this tree against a baseline, in one self-contained run.

    python tools/measure_network_speed.py --threads 1 --rounds 12

measures, in the settings of ``python -m skquad.benchmarks --suite
speed-networks`` (64-30-10 networks on optdigits' 5620 samples, standardized,
Adam with learning rate 1e-3, batches of 200, 20 epochs, every epoch run;
QNNRegressor on Friedman #1, n=4000, d=20, 100 hidden units), the fit time of
QNNClassifier, RPQNNClassifier (float64 and float32) and QNNRegressor (float64)
as a ratio to scikit-learn's MLP fitted in the same round, for two versions of
skquad:

* ``new``: the package of this tree;
* ``old``: the same package with the files under ``--baseline`` put in place of
  their namesakes (default: ``tools/network_speed_baseline``, the files this
  branch changed, as they were before it), or another tree holding a
  ``skquad`` package.

Each version runs in its own worker process (its own imports); the rounds
alternate between the two workers, so that a machine whose speed drifts slows
both alike. Reported: per version and model, the median over the rounds of the
per-round ratio to the MLP (wall clock; process CPU time beside it), and the
median per-round ratio of the new fit time to the old.

Needs numpy, scipy, scikit-learn and torch only: no network, no ARFF reader.
``--data optdigits.arff`` reads the UCI file (numeric ARFF, read here); without
it the data are scikit-learn's bundled 8x8 digits (the UCI set's test part,
1797 x 64, values 0-16) repeated to optdigits' 5620 rows, which give a step the
same shapes and the same arithmetic.

Temporary: for issue 22's measurement on a second kind of CPU (the AMD and Intel
figures go into ``skquad/benchmarks/research/_network_speed.py``); remove it
with its baseline folder once measured, as the earlier tools/ scripts were.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = Path(__file__).resolve().parent / "network_speed_baseline"
N_SAMPLES = 5620  # optdigits


# ------------------------------------------------------------------ worker
def _read_numeric_arff(path):
    import numpy as np

    rows, in_data = [], False
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                in_data = line.lower().startswith("@data")
                continue
            rows.append(line.split(","))
    values = np.asarray(rows)
    return values[:, :-1].astype(np.float64), values[:, -1]


def _classification_data(path):
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    if path:
        X, y = _read_numeric_arff(path)
    else:
        X, y = load_digits(return_X_y=True)
        repeats = -(-N_SAMPLES // X.shape[0])
        X, y = np.tile(X, (repeats, 1))[:N_SAMPLES], np.tile(y, repeats)[:N_SAMPLES]
    return StandardScaler().fit_transform(np.asarray(X, dtype=np.float64)), np.asarray(y).astype(str)


def _worker(args):
    import warnings

    import numpy as np
    import torch
    from sklearn.datasets import make_friedman1
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from threadpoolctl import threadpool_limits

    import skquad
    from skquad import QNNClassifier, QNNRegressor, RPQNNClassifier
    from skquad._training import limit_threads

    X, y = _classification_data(args.data)
    Xr, yr = make_friedman1(n_samples=4000, n_features=20, random_state=0)
    yr = (yr - yr.mean()) / yr.std()
    epochs = args.epochs
    common = dict(
        hidden_layer_sizes=(30,), max_iter=epochs, batch_size=200, learning_rate_init=1e-3, tol=0.0,
        n_iter_no_change=10**6, random_state=0,
    )
    regression = dict(
        hidden_layer_sizes=(100,), max_iter=epochs, batch_size=200, tol=0.0, n_iter_no_change=10**6, random_state=0
    )
    cases = []
    for dtype in args.dtypes:
        Xd = X.astype(dtype)
        cases += [
            (f"MLPClassifier {dtype}", lambda: MLPClassifier(**common), Xd, y),
            (f"QNNClassifier {dtype}", lambda: QNNClassifier(**common), Xd, y),
            (f"RPQNNClassifier {dtype}", lambda: RPQNNClassifier(**common), Xd, y),
        ]
    if args.regressor:
        cases += [
            ("MLPRegressor float64", lambda: MLPRegressor(**regression), Xr, yr),
            ("QNNRegressor float64", lambda: QNNRegressor(**regression), Xr, yr),
        ]
    print(json.dumps({"skquad": skquad.__file__, "torch": torch.__version__, "numpy": np.__version__}), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        times = {}
        # skquad.benchmarks' --threads limit (without importing the benchmarks, which need pandas)
        with limit_threads(args.threads, blas=args.threads, ceiling=True), \
                threadpool_limits(args.threads, user_api="openmp"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
            for name, make, Xc, yc in cases:
                model = make()
                wall, cpu = time.perf_counter(), time.process_time()
                model.fit(Xc, yc)
                times[name] = (time.perf_counter() - wall, time.process_time() - cpu)
        print(json.dumps(times), flush=True)


# ------------------------------------------------------------------ parent
def _baseline_tree(baseline, workdir):
    """A folder to put on PYTHONPATH whose ``skquad`` is the baseline version."""
    baseline = Path(baseline).resolve()
    if (baseline / "skquad" / "__init__.py").is_file():
        return baseline
    tree = Path(workdir) / "baseline"
    shutil.copytree(ROOT / "skquad", tree / "skquad", ignore=shutil.ignore_patterns("__pycache__"))
    replaced = []
    for path in baseline.rglob("*.py"):
        relative = path.relative_to(baseline)
        shutil.copyfile(path, tree / relative)
        replaced.append(str(relative))
    print(f"old: this tree's skquad with {', '.join(sorted(replaced))} from {baseline}")
    return tree


def _start(pythonpath, args):
    env = dict(os.environ, PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(args.threads)
    command = [sys.executable, __file__, "--worker", "--threads", str(args.threads), "--epochs", str(args.epochs),
               "--dtypes", *args.dtypes]
    if args.data:
        command += ["--data", args.data]
    if not args.regressor:
        command.append("--no-regressor")
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               cwd=tempfile.gettempdir())
    print("  imports", json.loads(process.stdout.readline()), flush=True)
    return process


def _median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else 0.5 * (values[middle - 1] + values[middle])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--data", help="optdigits.arff (default: scikit-learn's digits repeated to 5620 rows)")
    parser.add_argument("--baseline", default=str(DEFAULT_BASELINE),
                        help="files to put in place in a copy of this tree's skquad, or a tree with a skquad package")
    parser.add_argument("--no-baseline", action="store_true", help="measure this tree only")
    parser.add_argument("--no-regressor", dest="regressor", action="store_false")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        versions = {"new": ROOT}
        if not args.no_baseline:
            versions = {"old": _baseline_tree(args.baseline, workdir), **versions}
        workers = {}
        for version, path in versions.items():
            print(f"{version}: PYTHONPATH={path}", flush=True)
            workers[version] = _start(path, args)
        rounds = {version: [] for version in versions}
        for version in versions:  # one round each first, not counted: first calls, caches, allocator
            workers[version].stdin.write("round\n")
            workers[version].stdin.flush()
            workers[version].stdout.readline()
        for index in range(args.rounds):
            for version in (list(versions) if index % 2 == 0 else list(versions)[::-1]):
                workers[version].stdin.write("round\n")
                workers[version].stdin.flush()
                rounds[version].append(json.loads(workers[version].stdout.readline()))
            print(f"round {index + 1}/{args.rounds} ({time.perf_counter() - started:.0f} s)", flush=True)
        for worker in workers.values():
            worker.stdin.close()
            worker.wait()
    print(f"\n{args.rounds} rounds, {args.epochs} epochs, --threads {args.threads}; "
          "ratio = median over rounds of (fit time / the MLP's fit time in the same round)")
    print(f"{'version':8s} {'model':24s} {'ms/epoch':>9s} {'ratio (wall)':>13s} {'ratio (CPU)':>12s}")
    names = list(rounds["new"][0])
    for name in names:
        baseline_name = ("MLPClassifier " if "Classifier" in name else "MLPRegressor ") + name.split()[1]
        for version in versions:
            rows = rounds[version]
            epoch_ms = 1e3 * _median([row[name][0] for row in rows]) / args.epochs
            wall = _median([row[name][0] / row[baseline_name][0] for row in rows])
            cpu = _median([row[name][1] / row[baseline_name][1] for row in rows])
            print(f"{version:8s} {name:24s} {epoch_ms:9.2f} {wall:13.3f} {cpu:12.3f}")
    if "old" in versions:
        print("\nnew / old fit time (median over rounds of the per-round ratio, wall):")
        for name in names:
            ratios = [new[name][0] / old[name][0] for new, old in zip(rounds["new"], rounds["old"])]
            print(f"  {name:24s} {_median(ratios):.3f}")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
