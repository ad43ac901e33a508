"""The networks' fit time against scikit-learn's MLP, side by side, in float64 and float32.

Suite ``speed-networks`` of ``python -m skquad.benchmarks`` (formerly the
scripts ``tools/measure_network_speed.py`` and
``tools/measure_regressor_speed.py``):

* ``classifiers``: QNNClassifier and RPQNNClassifier against MLPClassifier,
  64-30-10 on optdigits (standardized), Adam with learning rate 1e-3, batches
  of 200, every epoch run (no early stop);
* ``regressors``: QNNRegressor and RPQNNRegressor against MLPRegressor on
  Friedman #1 (one hidden layer of 100, Adam, batches of 200), per-epoch time.

Each round fits every model once, in turn, so that a machine whose speed
drifts slows all of them alike; the figure reported is the median over the
rounds of the per-round ratio to the MLP, the number that survives a loaded
machine. Both dtypes run: the input's float dtype is the one the networks
compute in. Each fit is timed by the wall clock and by the process's CPU time;
on a machine shared with other work, run with ``--threads 1`` and read the
CPU-time ratio (the time other processes take from the cores is not counted;
with several threads CPU time adds up every thread's and is not a fit time).

Where a QNN step's time went (issue 22; one thread, process CPU time per step
of the 64-30-10 float64 fit, timers around each part in a real fit, on the
project's 2-core AMD EPYC under load, so the figures are inflated alike):
with torch (before) the network's forward took 412 us, its backward 656 us and
the loss 187 us for work of a few dozen small operations, 2.5-5 us of torch
dispatch each before any arithmetic; Adam 80 us and the loop around them about
140 us; scikit-learn's whole MLP step about 1 ms. The quadratic output layer's
two products (200 x 30 by 30 x 300, and its 300 x 200 by 200 x 30 gradient) are
its floor: 3.6 MFLOP each, at the machine's rate on both libraries. On the
CPU :class:`skquad.nn.fused.FusedNetwork` now steps on numpy views of the same
tensors (numpy's ufuncs dispatch in about 1 us): forward 250 us, backward 329
us, loss 70 us in the same setting. Its matrix products go to whichever library
is faster on the CPU's vendor (:func:`skquad._foundation._runtime.cpu_matmul_library`):
numpy's OpenBLAS took 0.64x torch's MKL time for the gradient product on the
AMD EPYC, MKL 0.52x OpenBLAS's on an Intel Xeon.

Ratios to the MLP (wall time), median of interleaved rounds, before -> after
that change:

* AMD EPYC (2 cores, shared, under load), ``--threads 1 --repeats 5``, two
  runs of each version in turn: QNN float64 1.62, 1.84 -> 1.18, 1.11; float32
  1.27, 1.41 -> 1.14, 0.88; RPQNN float64 0.91, 1.08 -> 0.63, 0.60; float32
  0.80, 0.76 -> 0.65, 0.50; QNNRegressor float64 1.79, 1.39 -> 1.17, 1.21.
  With the load lower (load average 3-5), the default 7 rounds: QNN float64
  1.45 -> 1.23, float32 1.23 -> 0.84; RPQNN 0.79 -> 0.66 and 0.70 -> 0.51;
  QNNRegressor float64 1.54 -> 1.26.
* Intel Xeon (16 cores, quiet; the same settings on one thread, 16 rounds,
  each version in its own processes, interleaved): QNN float64 1.82 -> 1.56,
  float32 1.28 -> 1.04; RPQNN float64 0.72 -> 0.67, float32 0.65 -> 0.59;
  QNNRegressor float64 1.40 -> 1.41 and RPQNNRegressor 0.62 -> 0.70 (on a fast
  quiet CPU the 200 x 100 x 100 products are most of the regressor's step, and
  MKL already computed them before). QNN in float64 stays above 1.5x there:
  its two 3.6 MFLOP products and their 60 000-number operands are the floor of
  the quadratic output layer.

Issue 22, second pass (the float64 target on both kinds of CPU). What a
float64 QNN step did beyond the MLP's, one thread, process CPU time on the
AMD EPYC under load: the two products (115 and 122 us, about 31 GFLOP/s, the
BLAS's rate at these shapes), the (delta (x) a) operand of the gradient
product (34 us), two stacked per-sample products with V (28 and 22 us), and
around the step the shuffled copy of X (1.35 ms an epoch, mostly page faults
on a fresh 2.9 MB array), Adam's two fused calls and the penalty (about 50 us
a step). What changed: the column sums of the bias gradients are BLAS
products with ones (1.6 us against 7-9 us for numpy's reduction over the
batch); the gradient product's operand is built in V's buffer once V has given
the input gradient (one 480 KB float64 array a step instead of two, against
an AMD EPYC core's 512 KB L2); the softmax's exp runs in place; with MKL's
products (Intel) the step's lasting arrays get their torch twins once instead
of three ``torch.from_numpy`` calls per product; ``fit`` shuffles every epoch
into one buffer made for the call (0.42 ms an epoch) and takes the batches as
views from one ``split`` per tensor. Tried and dropped, each slower on the AMD
EPYC: the symmetric half of the gradient product as two triangular blocks (the
transposing copies cost more than the 25 % of arithmetic saved: 1.17x in
float64, 1.26x in float32), the symmetric-half features a_i a_j (i <= j) with
their 465-column products (a 10-row product runs BLAS at half its rate),
``np.matvec`` / ``np.vecmat`` for the stacked products (7-8 % faster, 2 us,
but numpy >= 2.2 only; ``np.vecdot`` 2x slower), other spellings of the ReLU
mask (none faster), and the L2 penalty as runs of ``add_`` (no faster than
one ``addcmul_``). The two products
remain the floor. Measured with a script (since removed) that ran this tree
and the two changed files as they were side by side, each version in its own
process, 16 interleaved rounds, on an idle 16-core Intel Xeon with
``--threads 1``: QNN float64 1.67x -> 1.46x the MLP's time, float32 1.08x ->
0.97x, RPQNN 0.75x -> 0.63x and 0.62x -> 0.52x, QNNRegressor 1.33x -> 1.30x
(new / old fit time 0.91 for QNN float64; the MLP itself 1.08, its noise).
"""

import time
import warnings

import numpy as np
import pandas as pd
from sklearn.datasets import make_friedman1
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler

from skquad import QNNClassifier, QNNRegressor, RPQNNClassifier, RPQNNRegressor
from skquad.datasets import load_uci

from .._report import markdown_table

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
            with warnings.catch_warnings():
                # every epoch runs on purpose (tol=0): the warning is expected
                warnings.filterwarnings("ignore", category=ConvergenceWarning)
                started, cpu_started = time.perf_counter(), time.process_time()
                model.fit(X, y)
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
        n_iter_no_change=10**6, random_state=0,
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
        random_state=0,
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
