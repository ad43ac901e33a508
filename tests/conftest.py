"""Test configuration and data fixtures shared by the test modules."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# scikit-learn's estimator checks include an array-API input check that only
# runs when SciPy's array-API mode is on; it must be set before SciPy is imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

# Under pytest-xdist the workers share the cores, and a test run on two threads
# (``thread_counts``) finds the other core busy with another worker: OpenMP threads
# that spin while they wait then hold up every parallel region by a scheduler tick.
# Passive waiting puts them to sleep instead; results do not depend on it. Read when
# OpenMP starts, so set before torch is imported.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Plots in tests and examples are written to files, never shown.
os.environ.setdefault("MPLBACKEND", "Agg")

# The project's tests read the UCI datasets from the shared folder beside the
# checkout (see ../shared/datasets/README.md); users point SKQUAD_DATA elsewhere.
_SHARED_UCI = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "uci"
if "SKQUAD_DATA" not in os.environ and _SHARED_UCI.is_dir():
    os.environ["SKQUAD_DATA"] = str(_SHARED_UCI)


# Hypothesis profiles (tests/test_properties.py), chosen by the environment
# variable SKQUAD_HYPOTHESIS_PROFILE:
#
# * ``ci`` (the default): few examples, derandomized (the same inputs on every
#   run and every machine, so CI never fails on a draw it did not make
#   before), no example database written into the checkout; the whole module
#   runs in well under a minute on 2 cores.
# * ``nightly``: many random examples, for a scheduled run:
#   ``SKQUAD_HYPOTHESIS_PROFILE=nightly python -m pytest tests/test_properties.py``.
#   A failure prints the falsifying example and a ``@reproduce_failure`` line.
#
# No deadline in either: a fit's time depends on the machine's load.
_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci",
    max_examples=6,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SLOW_IS_FINE,
)
settings.register_profile(
    "nightly", max_examples=300, deadline=None, suppress_health_check=_SLOW_IS_FINE
)
settings.load_profile(os.environ.get("SKQUAD_HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    """Under pytest-xdist each worker gets its share of the cores for BLAS, OpenMP and torch
    (as scikit-learn's conftest does). Why: every worker's libraries default to all cores, and
    more threads than cores make OpenBLAS and OpenMP spin against each other. Tests of the
    thread policy set their own counts (``thread_counts`` and test_threads.py)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:
        return
    import torch
    from threadpoolctl import threadpool_limits

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    share = max(1, (cores or 1) // int(workers))
    threadpool_limits(limits=share)  # for the worker's life (restored only on request)
    torch.set_num_threads(share)


# Data shared by the network test modules (test_neural_network_*.py); a module
# that needs other data defines its own fixture of the same name.
@pytest.fixture(scope="module")
def iris():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def binary_data():
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, random_state=0)
    return X, y



# Numerics that must hold on any x86-64 CPU (issue 19). MKL and OpenBLAS, on
# AMD and on Intel, reduce in different orders; a tolerance tuned on one
# machine's rounding fails on another. Two tools make that fail here first:
#
# * ``thread_counts``: the test runs once with 1 and once with 2 torch and
#   BLAS threads (threaded reductions split sums differently, as another CPU's
#   kernels do). skquad's own thread policy would pin small fits to one
#   thread, so it is told that every step is worth the threads it is given.
# * ``perturb_ulps``: moves every entry of an input by a few units in the last
#   place, so a comparison of two computations on "the same" data must hold
#   for any rounding of that data, not for one bit pattern.
@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def thread_counts(request, monkeypatch):
    """Run the test under ``request.param`` torch and BLAS threads, then restore."""
    import torch
    from threadpoolctl import threadpool_limits

    import skquad._foundation._threads as threads

    n_threads = request.param
    monkeypatch.setattr(threads, "PARALLEL_FLOPS", 0.0)
    previous = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        with threadpool_limits(limits=n_threads, user_api="blas"):
            yield n_threads
    finally:
        torch.set_num_threads(previous)


@pytest.fixture
def perturb_ulps():
    """``perturb_ulps(X, n_ulps=4, seed=0)``: X with each entry moved by up to n_ulps ulps."""
    import numpy as np

    def perturb(X, n_ulps=4, seed=0):
        X = np.asarray(X, dtype=np.float64)
        steps = np.random.RandomState(seed).randint(-n_ulps, n_ulps + 1, size=X.shape)
        return np.where(X == 0, 0.0, X + steps * np.spacing(X))  # zeros stay zeros (sparsity)

    return perturb


# The planted-interaction Pipeline read by two inspection test modules
# (test_inspection_interactions.py, test_inspection_displays.py): fitted once
# per session, never modified by the tests.
@pytest.fixture(scope="session")
def planted_pipeline():
    """A StandardScaler + QuadraticLogisticRegression fitted on ``_planted()``, and its frame."""
    import pandas as pd
    from _inspection_cases import _planted
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skquad import QuadraticLogisticRegression

    X, y = _planted()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(10)])
    return make_pipeline(StandardScaler(), QuadraticLogisticRegression(C=1.0)).fit(frame, y), frame


def _export_estimator_names():
    from _export_cases import ESTIMATORS

    return list(ESTIMATORS)


# Every exportable classifier in a Pipeline, on binary and three-class data,
# fitted once per session for both export test modules (test_export_torch.py,
# test_export_onnx.py), which only read them.
@pytest.fixture(
    scope="session",
    params=[(name, problem) for name in _export_estimator_names() for problem in ("binary", "multiclass")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def exported_pipeline(request):
    """``(name, StandardScaler + estimator fitted on _data(problem), X)``."""
    from _export_cases import ESTIMATORS, _data
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    name, problem = request.param
    X, y = _data(problem)
    model = make_pipeline(StandardScaler(), ESTIMATORS[name]()).fit(X, y)
    return name, model, X
