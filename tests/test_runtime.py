"""Tests of the runtime policy (skquad._foundation._runtime) and of the estimators that follow it."""

import os
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning

from skquad import (
    BackpropQuantizedClassifier,
    BackpropQuantizedRegressor,
    QNNClassifier,
    QuadraticLogisticRegression,
    QuadraticRegression,
    RPQNNRegressor,
)
from skquad._foundation import _memory
from skquad._foundation._threads import PARALLEL_CALL_FLOPS, PARALLEL_FLOPS, choose_thread_count
from skquad._foundation._runtime import (
    RuntimePolicy,
    compute_dtype,
    parallel_workers,
    runtime_policy,
    separate_calls_blas,
    spawn_generators,
    thread_count,
)


# ------------------------------------------------------------------ dtype
@pytest.mark.parametrize(
    "input_dtype,requested,fitted,expected",
    [
        (np.float32, None, None, torch.float32),  # float32 in, float32 computed
        (np.float64, None, None, torch.float64),
        (np.int64, None, None, torch.float64),  # anything else: float64
        (np.float32, "float64", None, torch.float64),  # the dtype parameter wins
        (np.float64, "float32", None, torch.float32),
        (np.float64, None, np.float32, torch.float32),  # continuing keeps the fitted dtype
        (np.float32, "float64", np.float32, torch.float64),
    ],
)
def test_dtype_rule(input_dtype, requested, fitted, expected):
    assert compute_dtype(np.dtype(input_dtype), requested, fitted) == expected
    policy = runtime_policy(np.dtype(input_dtype), dtype=requested, fitted_dtype=fitted, random_state=0)
    assert policy.dtype == expected
    assert policy.numpy_dtype == (np.float32 if expected == torch.float32 else np.float64)


# ------------------------------------------------------------------ device
@pytest.mark.parametrize("device", ["auto", "CPU", None, torch.device("cpu")])
def test_device_resolution(device):
    policy = runtime_policy(np.float64, device=device, random_state=0)
    assert policy.device == torch.device("cpu") and policy.device_name == "cpu"


@pytest.mark.parametrize("device", ["tpu", "gpu", "cuda:x"])
def test_unknown_device_is_a_clear_error(device):
    with pytest.raises(ValueError, match="device must be"):
        runtime_policy(np.float64, device=device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_refused_at_fit_naming_the_parameter(iris):
    X, y = iris
    for estimator in (QuadraticLogisticRegression(device="cuda"), QNNClassifier(device="cuda", max_iter=2),
                      BackpropQuantizedClassifier(n_neurons=8, device="cuda", max_iter=2)):
        with pytest.raises(ValueError, match="device='cuda' was requested but CUDA is not available"):
            estimator.fit(X, y)


# ------------------------------------------------------------------ generators
def test_init_and_shuffle_streams_are_independent_and_reproducible():
    init, shuffle = spawn_generators(0)
    a, b = torch.randn(1000, generator=init, dtype=torch.float64), torch.randn(1000, generator=shuffle, dtype=torch.float64)
    # Two generators seeded alike draw identical streams (QLR's former bug);
    # independent ones are uncorrelated: |r| ~ 1/sqrt(1000) = 0.03, 0.15 is 5 sigma.
    assert not torch.equal(a, b)
    assert abs(float(np.corrcoef(a.numpy(), b.numpy())[0, 1])) < 0.15
    init_again, shuffle_again = spawn_generators(0)
    assert torch.equal(torch.randn(1000, generator=init_again, dtype=torch.float64), a)
    assert torch.equal(torch.randn(1000, generator=shuffle_again, dtype=torch.float64), b)
    # the init stream is make_generator's (models drawn from a random_state are kept)
    from skquad._foundation._torch_utils import make_generator

    assert torch.equal(torch.randn(5, generator=make_generator(0)), torch.randn(5, generator=spawn_generators(0)[0]))


def test_partial_fit_calls_shuffle_with_their_own_streams():
    streams = [torch.randperm(50, generator=spawn_generators(3, call=k)[1]) for k in range(3)]
    assert not torch.equal(streams[0], streams[1]) and not torch.equal(streams[1], streams[2])
    assert torch.equal(streams[2], torch.randperm(50, generator=spawn_generators(3, call=2)[1]))


def test_a_random_state_instance_advances_between_policies():
    rng = np.random.RandomState(0)
    first = runtime_policy(np.float64, random_state=rng)
    second = runtime_policy(np.float64, random_state=rng)
    draw = lambda policy: torch.rand(4, generator=policy.init_generator)
    assert not torch.equal(draw(first), draw(second))
    # an int seeds a fresh RandomState each time, so int 0 repeats `first`
    assert torch.equal(draw(runtime_policy(np.float64, random_state=np.random.RandomState(0))),
                       draw(runtime_policy(np.float64, random_state=0)))


def test_training_leaves_the_global_generators_alone(iris):
    X, y = iris
    torch.manual_seed(1)
    np.random.seed(1)
    expected = (torch.rand(3), np.random.rand(3))
    torch.manual_seed(1)
    np.random.seed(1)
    QuadraticLogisticRegression(solver="sgd", max_iter=3, random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    QNNClassifier(hidden_layer_sizes=(4,), max_iter=2, random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    assert torch.equal(torch.rand(3), expected[0]) and np.array_equal(np.random.rand(3), expected[1])


# ------------------------------------------------------------------ threads
def test_thread_choice():
    cpu = torch.device("cpu")
    assert thread_count(3, cpu, 1.0) == 3  # an explicit count wins
    assert thread_count("auto", cpu, PARALLEL_FLOPS / 10) == 1  # small steps: one thread
    assert thread_count("auto", cpu, PARALLEL_FLOPS * 10) == torch.get_num_threads()
    assert thread_count("auto", torch.device("cuda"), PARALLEL_FLOPS * 10) is None  # GPU: leave torch alone
    assert runtime_policy(np.float64, n_threads=2, random_state=0).n_threads == 2


def test_separate_calls_take_threads_only_when_each_call_is_large():
    # a step of 10x PARALLEL_FLOPS is threaded; a sequence of separate calls of that size is not
    cpu = torch.device("cpu")
    assert thread_count("auto", cpu, PARALLEL_FLOPS * 10, separate_calls=True) == 1
    assert thread_count("auto", cpu, PARALLEL_CALL_FLOPS / 2, separate_calls=True) == 1
    assert thread_count("auto", cpu, PARALLEL_CALL_FLOPS * 2, separate_calls=True) == torch.get_num_threads()
    assert choose_thread_count(PARALLEL_CALL_FLOPS * 2, available=4, separate_calls=True) == 4


def test_separate_calls_blas_limits_numpys_blas_only_and_restores_it():
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]

    before, torch_before = blas_threads(), torch.get_num_threads()
    with separate_calls_blas(PARALLEL_CALL_FLOPS / 2):
        assert set(blas_threads()) == {1}
        assert torch.get_num_threads() == torch_before
    assert blas_threads() == before


def test_parallel_workers_run_small_tasks_side_by_side_only():
    cores = len(os.sched_getaffinity(0))
    assert parallel_workers(3, PARALLEL_FLOPS / 10) == min(cores, 3)  # small: one core each
    # large: one task at a time on every thread (where there is more than one)
    assert parallel_workers(3, PARALLEL_FLOPS * 10) == (1 if torch.get_num_threads() > 1 else min(cores, 3))


# ------------------------------------------------------------------ memory
def test_memory_refusal_names_the_parameter(monkeypatch):
    policy = runtime_policy(np.float64, random_state=0)
    monkeypatch.setattr(_memory, "available_memory", lambda: 2**30)
    policy.require_memory(2**29, "n_neurons", 10, "training")  # fits: no error
    with pytest.raises(MemoryError, match=r"n_neurons=10 needs about 2\.0 GiB for training.*reduce n_neurons"):
        policy.require_memory(2**31, "n_neurons", 10, "training")


@pytest.mark.parametrize(
    "estimator,parameter",
    [
        (QuadraticLogisticRegression(), "rank=None"),
        (QNNClassifier(hidden_layer_sizes=(50,), max_iter=1), r"hidden_layer_sizes=\(50,\)"),
        (BackpropQuantizedClassifier(n_neurons=50, max_iter=1), "n_neurons=50"),
    ],
)
def test_every_estimator_refuses_through_the_one_memory_check(iris, monkeypatch, estimator, parameter):
    X, y = iris
    monkeypatch.setattr(_memory, "available_memory", lambda: 1024)  # 1 KiB
    with pytest.raises(MemoryError, match=parameter + " needs about"):
        clone(estimator).fit(X, y)


def test_the_policy_is_a_frozen_value():
    policy = runtime_policy(np.float64, random_state=0)
    assert isinstance(policy, RuntimePolicy)
    with pytest.raises(AttributeError):
        policy.dtype = torch.float32


# ------------------------------------------------- fitted dtypes and predict
def _float32_cases():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    target = X[:, 0] * X[:, 1] + X[:, 2]
    return [
        (QuadraticLogisticRegression(), y, ["Q_", "coef_", "intercept_"], "predict_proba"),
        (QuadraticLogisticRegression(rank=2, random_state=0), y,
         ["Q_", "coef_", "intercept_", "Q_vectors_", "Q_scales_"], "predict_proba"),
        (BackpropQuantizedClassifier(n_neurons=12, max_iter=20, random_state=0), y,
         ["U_float_", "V_float_", "alpha_", "float_alpha_", "scale_"], "decision_function"),
        (BackpropQuantizedRegressor(n_neurons=12, max_iter=20, random_state=0), target / target.std(),
         ["U_float_", "V_float_", "alpha_", "float_alpha_", "scale_"], "predict"),
        (QuadraticRegression(), target, ["Q_", "coef_", "intercept_"], "predict"),
        (QNNClassifier(hidden_layer_sizes=(5,), max_iter=20, random_state=0), y, [], "predict_proba"),
        (RPQNNRegressor(hidden_layer_sizes=(5,), max_iter=20, random_state=0), target, [], "predict"),
    ], X


@pytest.mark.parametrize("case", range(7))
def test_float32_input_keeps_float32_fitted_arrays_and_outputs(case):
    cases, X = _float32_cases()
    estimator, y, attributes, method = cases[case]
    X32 = X.astype(np.float32)
    models = {}
    for data in (X32, X):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            models[data.dtype] = clone(estimator).fit(data, y)
        # 20 epochs (Adam) or iterations (L-BFGS, the small regressors' "auto") are too
        # few to converge; nothing else may warn
        assert all(issubclass(w.category, ConvergenceWarning)
                   and ("Maximum iterations" in str(w.message) or "failed to converge" in str(w.message))
                   for w in caught), [str(w.message) for w in caught]
    model, model64 = models[np.dtype(np.float32)], models[np.dtype(np.float64)]
    for name in attributes:
        assert np.asarray(getattr(model, name)).dtype == np.float32, name
        assert np.asarray(getattr(model64, name)).dtype == np.float64, name
    if hasattr(model, "layers_"):
        assert all(state["weight"].dtype == np.float32 for state in model.layers_)
    # float32 model on float32 input: float32 out; float64 input: float64 (numpy's result_type)
    assert getattr(model, method)(X32).dtype == np.float32
    assert getattr(model, method)(X).dtype == np.float64
    assert getattr(model64, method)(X32).dtype == np.float64


def test_predict_reads_only_fitted_attributes(iris):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="lbfgs failed to converge"):
        network = QNNClassifier(hidden_layer_sizes=(4,), solver="lbfgs", max_iter=30, random_state=0).fit(X, y)
    models = [QuadraticLogisticRegression().fit(X, y), network]
    for model in models:
        expected = model.predict_proba(X)
        assert model.device_ == "cpu"
        # parameters changed after fitting (to values this machine may not
        # even have) do not reach predict: it uses device_ and the fit's threads
        model.set_params(device="cuda:7", n_threads=1)
        np.testing.assert_array_equal(model.predict_proba(X), expected)


@pytest.mark.parametrize(
    "vendor, mkl, expected",
    [("GenuineIntel", True, "torch"), ("GenuineIntel", False, "numpy"), ("AuthenticAMD", True, "numpy"),
     ("", True, "numpy")],
)
def test_cpu_matmul_library_follows_the_vendor(monkeypatch, vendor, mkl, expected):
    # MKL's tuned kernels run on Intel CPUs only: torch multiplies there,
    # numpy's BLAS elsewhere; one answer per process (cached).
    from skquad._foundation import _runtime

    monkeypatch.setattr(_runtime, "_cpu_vendor", lambda: vendor)
    monkeypatch.setattr(torch.backends.mkl, "is_available", lambda: mkl)
    _runtime.cpu_matmul_library.cache_clear()
    try:
        assert _runtime.cpu_matmul_library() == expected
    finally:
        _runtime.cpu_matmul_library.cache_clear()
    assert _runtime.cpu_matmul_library() in ("torch", "numpy")
    assert isinstance(_runtime._cpu_vendor(), str)


_STALE_THREAD_COUNT = """
import threading
import torch
from skquad._foundation._threads import limit_threads

torch.set_num_threads(2)
y_open, x_read, y_closed, z_open, z_done = (threading.Event() for _ in range(5))

def y():
    with limit_threads(1):
        y_open.set()
        x_read.wait()
    y_closed.set()

def z():
    with limit_threads(1):
        z_open.set()
    z_done.set()

def x():
    y_open.wait()
    torch.get_num_threads()  # this thread's first count: 1, taken inside y's block
    x_read.set()
    y_closed.wait()
    with limit_threads(1):
        other = threading.Thread(target=z)
        other.start()
        z_done.wait()
        other.join()

threads = [threading.Thread(target=y), threading.Thread(target=x)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(torch.get_num_threads())
"""


def test_a_block_opened_where_the_thread_count_is_stale_restores_the_process_count():
    """A worker thread's count taken inside another thread's block is no baseline.

    Thread x reads its count while y's one-thread block is open, then opens the
    first block after y closes; z's block inside it sets the process-wide count
    to 1, and closing must bring back the 2 the main thread set. In a fresh
    interpreter, because torch's counts are process state.
    """
    import subprocess
    import sys

    output = subprocess.run([sys.executable, "-c", _STALE_THREAD_COUNT], capture_output=True,
                            text=True, check=True).stdout
    assert output.split() == ["2"]
