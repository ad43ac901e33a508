"""An interrupted fit leaves no trace in the process (issue 38, items 3 and 4).

Real ``KeyboardInterrupt``\\ s, raised in the main thread by a timer thread
(``_thread.interrupt_main``) after a random delay, land wherever the fit is:
inside a ``with`` statement's ``__enter__`` (``np.errstate``), between a
``limit_threads`` block's bookkeeping and its ``try``, in a ``finally``. After
each one, every piece of process-wide state a fit touches must be as it was:
numpy's error state, torch's grad mode, thread count and denormal flag, the
BLAS thread limits, the thread bookkeeping and its lock, the estimator's fit lock.

The default run sends a few tens of interrupts per estimator. Set
``SKQUAD_INTERRUPT_STRESS=<n>`` to send ``n`` per estimator (the issue asks
for at least 2,000); the test prints how many landed inside a fit.

The thread bookkeeping's lock is also attacked by injection: a trace function
raises at every line the bookkeeping executes, one line per fit.
"""

import _thread
import os
import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification, make_regression
from threadpoolctl import threadpool_info

from skquad import (
    QNNClassifier,
    QuadraticLogisticRegression,
    QuadraticRegression,
    SDPQuantizedClassifier,
)
from skquad._foundation._atomic import _fit_lock
from skquad._foundation import _threads

N_INTERRUPTS = int(os.environ.get("SKQUAD_INTERRUPT_STRESS", "25"))


def _classification(n_classes):
    return make_classification(
        n_samples=60, n_features=5, n_informative=4, n_redundant=0,
        n_classes=n_classes, random_state=0,
    )


def _cases():
    X, y = make_regression(n_samples=80, n_features=6, noise=0.1, random_state=0)
    X2, y2 = _classification(2)
    X5, y5 = _classification(5)
    return {
        "QR": (QuadraticRegression(), X, y),
        "QLR": (QuadraticLogisticRegression(max_iter=30, random_state=0), X2, y2),
        "SDP5": (SDPQuantizedClassifier(n_neurons=10, max_iter=100, random_state=0), X5, y5),
        "QNN": (QNNClassifier(hidden_layer_sizes=(4,), max_iter=5, random_state=0), X2, y2),
    }


def _blas_threads():
    return tuple(
        (info["filepath"], info["num_threads"])
        for info in threadpool_info()
        if info["user_api"] == "blas"
    )


def _lock_is_free(lock):
    if not lock.acquire(blocking=False):
        return False
    lock.release()
    return True


def _fit_lock_is_free(estimator):
    """Whether another thread can take the estimator's fit lock (an RLock)."""
    free = []
    probe = threading.Thread(target=lambda: free.append(_lock_is_free(_fit_lock(estimator))))
    probe.start()
    probe.join()
    return free[0]


def _process_state():
    return {
        "numpy errors": np.geterr(),
        "grad mode": torch.is_grad_enabled(),
        "torch threads": torch.get_num_threads(),
        "denormals flushed": _threads._denormals_are_flushed(),
        "BLAS threads": _blas_threads(),
        "thread ceiling": _threads.thread_ceiling(),
        "open thread blocks": len(getattr(_threads, "_open", ()))
        + getattr(_threads, "_active", 0)
        + len(getattr(_threads, "_blas_requests", ())),
        "thread lock free": _lock_is_free(_threads._lock),
    }


def _fit_once(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # tiny fits' convergence notes
        estimator.fit(X, y)


def _interrupted_fit(estimator, X, y, delay):
    """Fit while a timer interrupts the main thread after ``delay`` s; whether it landed in the fit."""
    fired = threading.Event()

    def fire():
        time.sleep(delay)
        _thread.interrupt_main()
        fired.set()

    timer = threading.Thread(target=fire)
    landed = False
    try:
        timer.start()
        try:
            _fit_once(estimator, X, y)
        except KeyboardInterrupt:
            landed = True
        else:
            fired.wait()
            # the pending interrupt is raised at the next check of the eval loop
            for _ in range(100_000):
                pass
    except KeyboardInterrupt:
        pass
    timer.join()
    return landed


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt even where the test runner was started with it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("name", ["QR", "QLR", "SDP5", "QNN"])
def test_timed_interrupts_leave_the_process_as_it_was(name, sigint_raises):
    estimator, X, y = _cases()[name]
    _fit_once(estimator, X, y)  # imports and warms up whatever the fit needs
    started = time.perf_counter()
    _fit_once(estimator, X, y)
    fit_time = time.perf_counter() - started
    before = _process_state()
    rng = np.random.default_rng(0)
    landed = 0
    for trial in range(N_INTERRUPTS):
        landed += _interrupted_fit(estimator, X, y, rng.uniform(0, 1.2 * fit_time))
        after = _process_state()
        assert after == before, f"{name}: interrupt {trial} changed the process state"
        assert _fit_lock_is_free(estimator), f"{name}: interrupt {trial} left the fit lock held"
    # the model still fits, and so does a fit in another thread (no lock held)
    _fit_once(estimator, X, y)
    worker = threading.Thread(target=_fit_once, args=(estimator, X, y), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), f"{name}: a fit in another thread hangs"
    assert _process_state() == before
    print(f"{name}: {landed} of {N_INTERRUPTS} interrupts landed inside a fit")
    assert landed > 0


class _InjectAt:
    """Raise KeyboardInterrupt at the ``at``-th line executed in the thread bookkeeping."""

    def __init__(self, at=None):
        self.at = at
        self.count = 0

    def _global(self, frame, event, arg):
        return self._local if frame.f_code.co_filename == _threads.__file__ else None

    def _local(self, frame, event, arg):
        if event == "line":
            self.count += 1
            if self.count == self.at:
                raise KeyboardInterrupt
        return self._local

    def __enter__(self):
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc_info):
        sys.settrace(None)
        return False


def test_an_interrupt_at_any_line_of_the_thread_bookkeeping_leaves_no_lock_held():
    """An interrupt at the exit of ``with _lock:`` in ``limit_threads`` left the
    lock held, and every later fit hung (issue 38, item 4). Injected at every
    line the bookkeeping runs during a QuadraticRegression fit, one line per fit."""
    estimator, X, y = _cases()["QR"]
    _fit_once(estimator, X, y)
    before = _process_state()
    with _InjectAt() as counter:
        _fit_once(estimator, X, y)
    assert counter.count > 10
    for at in range(1, counter.count + 1):
        try:
            with _InjectAt(at):
                _fit_once(estimator, X, y)
        except KeyboardInterrupt:
            pass
        assert _process_state() == before, f"an interrupt at bookkeeping line {at} left a trace"
        worker = threading.Thread(target=_open_a_block, daemon=True)
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), f"after an interrupt at bookkeeping line {at}, a block hangs"


def _open_a_block():
    with _threads.limit_threads(1, blas=1):
        pass


def test_an_interrupt_inside_errstates_enter_leaves_numpys_error_state():
    """``np.errstate.__enter__`` sets numpy's error state before it returns: an
    interrupt that lands there skips the ``with`` statement's exit, and numpy's
    overflow warnings stayed off for the rest of the process (issue 38, item 3).
    Injected on the return of the fit's first ``np.errstate.__enter__``."""
    estimator, X, y = _cases()["QR"]
    before = np.geterr()

    def tracer(frame, event, arg):
        if frame.f_code is np.errstate.__enter__.__code__:
            return raise_on_return
        return None

    def raise_on_return(frame, event, arg):
        if event == "return":
            raise KeyboardInterrupt
        return raise_on_return

    sys.settrace(tracer)
    try:
        with pytest.raises(KeyboardInterrupt):
            estimator.fit(X, y)
    finally:
        sys.settrace(None)
    assert np.geterr() == before
