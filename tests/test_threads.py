"""Tests of the thread and denormal policy (skquad._foundation._threads)."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from skquad._foundation._threads import PARALLEL_FLOPS, choose_thread_count, flush_denormals, limit_threads
from skquad._foundation._threads import _denormals_are_flushed


def test_limit_threads_restores_and_heuristic():
    baseline = torch.get_num_threads()
    torch.set_num_threads(2)  # a baseline the limit must change and give back
    try:
        with limit_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(baseline)
    assert choose_thread_count(1e5) == 1
    assert choose_thread_count(PARALLEL_FLOPS / 2, available=4) == 1
    assert choose_thread_count(PARALLEL_FLOPS * 5, available=4) == 4


def test_nested_limit_gives_back_the_enclosing_limit():
    """A solver's limit inside a benchmark's --threads 1 used to restore the
    process baseline on leaving, undoing the outer limit."""
    baseline = torch.get_num_threads()
    if baseline < 2:
        torch.set_num_threads(2)
    try:
        expected = torch.get_num_threads()
        with limit_threads(1):
            with limit_threads(1):
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
            with limit_threads(None):
                pass
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == expected
    finally:
        torch.set_num_threads(baseline)


def test_concurrent_limits_leave_every_thread_at_the_baseline():
    """Overlapping blocks in a thread pool used to leave workers at 1 thread."""
    baseline = torch.get_num_threads()
    if baseline < 2:
        torch.set_num_threads(2)
    try:
        expected = torch.get_num_threads()
        def work(index):
            with limit_threads(1):
                inside = torch.get_num_threads()
                # Workers are created while others hold the limit and leave in
                # the reverse order: what used to leave them at 1 for good.
                time.sleep(0.05 * (4 - index))
            return inside

        def probe(_):
            time.sleep(0.01)
            return torch.get_num_threads()

        with ThreadPoolExecutor(4) as pool:
            insides = list(pool.map(work, range(4)))
            after = list(pool.map(probe, range(8)))
        assert insides == [1, 1, 1, 1]
        assert set(after) == {expected}
        assert torch.get_num_threads() == expected
    finally:
        torch.set_num_threads(baseline)


def test_flush_denormals_is_scoped():
    assert not _denormals_are_flushed()
    subnormal = torch.tensor([1e-40], dtype=torch.float32)
    with flush_denormals():
        assert _denormals_are_flushed()
        assert (subnormal * 1.0)[0] == 0
    assert not _denormals_are_flushed()
    assert (subnormal * 1.0)[0] > 0


def test_blas_limits_limits_and_restores_from_its_cached_scan():
    from threadpoolctl import threadpool_info

    from skquad._foundation._threads import blas_limits

    def blas_threads():
        return [entry["num_threads"] for entry in threadpool_info() if entry["user_api"] == "blas"]

    before = blas_threads()
    for _ in range(2):  # the second call reuses the scan
        with blas_limits(1):
            assert blas_threads() and all(count == 1 for count in blas_threads())
        assert blas_threads() == before


def test_ceiling_caps_the_automatic_rule_inside_a_benchmark_limit():
    """A benchmark's --threads 1 used to leave QLR's large products on two threads:
    the rule counted from the process's baseline, which the limit does not change."""
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_info

    import skquad.nn.quadratic_form as quadratic_form
    from skquad import QuadraticLogisticRegression

    baseline = torch.get_num_threads()
    if baseline < 2:
        torch.set_num_threads(2)
    try:
        with limit_threads(1, blas=1, ceiling=True):
            assert choose_thread_count(PARALLEL_FLOPS * 100) == 1
            # an explicit count still wins
            assert choose_thread_count(PARALLEL_FLOPS * 100, available=3) == 3
            seen = []
            original = quadratic_form._add_chunk_terms

            def recording(*args):
                seen.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
                seen.append(torch.get_num_threads())
                # one thread: the chunks are summed in the caller's thread, not a pool's
                seen.append(1 if threading.current_thread() is threading.main_thread() else 2)
                return original(*args)

            quadratic_form._add_chunk_terms = recording
            try:
                rng = np.random.RandomState(0)
                # 3 n d² K = 2.2e8 flops per step: two threads by the rule alone
                X, y = rng.randn(2000, 60), rng.randint(0, 10, 2000)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter=1
                    QuadraticLogisticRegression(max_iter=1).fit(X, y)
            finally:
                quadratic_form._add_chunk_terms = original
            assert seen and set(seen) == {1}
        # the ceiling ends with the block
        assert choose_thread_count(PARALLEL_FLOPS * 100) == torch.get_num_threads()
    finally:
        torch.set_num_threads(baseline)


def test_a_nested_blas_request_applies_inside_a_block_without_one():
    """A benchmark's thread_limit(None) (no BLAS limit) around an SDP fit: the
    solver's one-BLAS-thread blocks were ignored there, and its parallel class
    blocks ran two BLAS threads each on two cores (optdigits 489 s of CPU, 91 s
    alone). The inner request now holds until it ends, then the outer block's
    libraries' defaults come back."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [entry["num_threads"] for entry in threadpool_info() if entry["user_api"] == "blas"]

    before = blas_threads()
    with limit_threads(None):
        assert blas_threads() == before
        with limit_threads(1, blas=1):
            assert blas_threads() and all(count == 1 for count in blas_threads())
            with limit_threads(1, blas=1):  # a second request shares the limit
                assert all(count == 1 for count in blas_threads())
            assert all(count == 1 for count in blas_threads())
        assert blas_threads() == before
    assert blas_threads() == before


def test_the_smallest_open_blas_request_is_in_force():
    """The BLAS limit is process-wide: a one-thread request inside a
    two-thread block used to be ignored (the first request won), so the
    SDP's small eigh ran on two threads inside a benchmark's --threads 2.
    (States are compared per library: a single-threaded build stays at 1.)"""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return {e["filepath"]: e["num_threads"] for e in threadpool_info() if e["user_api"] == "blas"}

    before = blas_threads()
    with limit_threads(None, blas=2):
        outer = blas_threads()
        assert max(outer.values()) == 2
        with limit_threads(None, blas=1):
            assert set(blas_threads().values()) == {1}
            with limit_threads(None, blas=3):  # a larger request never raises it
                assert set(blas_threads().values()) == {1}
            assert set(blas_threads().values()) == {1}
        assert blas_threads() == outer
    assert blas_threads() == before


def _blas_threads():
    from threadpoolctl import threadpool_info

    # (a BLAS built without threading always reports one)
    return {
        entry["num_threads"] for entry in threadpool_info()
        if entry["user_api"] == "blas" and entry.get("threading_layer") != "disabled"
    }


def test_a_step_gives_its_threads_to_the_library_that_multiplies():
    """torch's OpenMP team and OpenBLAS's threads spin between calls: both pools
    at n threads on n cores slowed a network's step more than ten times."""
    from skquad._foundation._threads import limit_step_threads

    baseline, blas_before = torch.get_num_threads(), _blas_threads()
    torch.set_num_threads(2)
    try:
        with limit_step_threads(2, "numpy"):
            assert torch.get_num_threads() == 1 and _blas_threads() == {2}
        with limit_step_threads(2, "torch"):
            assert torch.get_num_threads() == 2 and _blas_threads() == {1}
        with limit_step_threads(None, "numpy"):  # a GPU computes: both left alone
            assert torch.get_num_threads() == 2 and _blas_threads() == blas_before
    finally:
        torch.set_num_threads(baseline)
    assert _blas_threads() == blas_before


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # two epochs on purpose
def test_network_steps_run_with_the_products_library_threaded(monkeypatch):
    """Stochastic and L-BFGS steps of a fused network, and its products' library."""
    import numpy as np
    import scipy.sparse

    from skquad import QNNClassifier
    from skquad._foundation._runtime import cpu_matmul_library
    from skquad.nn import fused

    seen = []
    step = fused.FusedNetwork.__call__

    def recording_step(self, X, y, weights):
        if not seen or seen[-1][0] != self:
            seen.append((self, torch.get_num_threads(), _blas_threads()))
        return step(self, X, y, weights)

    monkeypatch.setattr(fused.FusedNetwork, "__call__", recording_step)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 4)), np.arange(60) % 3
    expected = (1, {2}) if cpu_matmul_library() == "numpy" else (2, {1})
    for solver in ("adam", "lbfgs"):
        QNNClassifier((5,), solver=solver, max_iter=2, n_threads=2, alpha=1e-4, random_state=0).fit(X, y)
        assert seen[-1][0].products_library("cpu") == cpu_matmul_library()
        assert seen[-1][1:] == expected, solver
        assert seen[-1][0].products_library("meta") == "torch"  # any device but the CPU
    # sparse first-layer batches multiply in torch
    QNNClassifier((5,), max_iter=2, n_threads=2, alpha=1e-4, random_state=0).fit(scipy.sparse.csr_matrix(X), y)
    assert seen[-1][1:] == (2, {1})
