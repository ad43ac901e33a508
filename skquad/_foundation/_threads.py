"""The one CPU thread and denormal policy of skquad's training (and benchmarks).

Every torch-trained estimator trains inside :func:`limit_threads`, with a count
from :func:`skquad._foundation._runtime.thread_count` (the one caller of
:func:`choose_thread_count`); the benchmarks pin a run to ``--threads`` with it.
Small steps run on one thread: each small operation pays torch's OpenMP hand-off.

``torch.set_num_threads`` is process-wide for new threads and per-thread for
OpenMP, so concurrent fits that each restore "the previous" value would leave
workers at one thread. So the first open block holds the baseline, every thread
restores its own setting to it on leaving, and the BLAS limit is the smallest an
open block asked for, until the last exit restores the limits found first. Every
bookkeeping step can be redone after an interrupt, the lock is taken only in
one-line ``with`` statements (:func:`_locked`), and the atomic fit closes blocks an
exception left open (:func:`saved_state`, :func:`restore_saved_state`).
"""

import struct
import sys
import threading
from contextlib import contextmanager

import torch
from threadpoolctl import ThreadpoolController

__all__ = [
    "PARALLEL_CALL_FLOPS", "PARALLEL_FLOPS", "blas_limits", "choose_thread_count", "close_blocks", "flush_denormals",
    "limit_step_threads", "limit_threads", "restore_saved_state", "saved_state", "thread_ceiling",
]

# Flops per training step below which one torch thread is faster (see the
# module docstring and choose_thread_count).
PARALLEL_FLOPS = 2e8
# Flops per BLAS call below which one thread is faster for separate calls with Python work
# between them (a leave-one-out search's eigendecompositions and products): the BLAS
# library's threads idle between such calls (spinning, then asleep), and bringing them back
# costs more than a second core saves below this size (choose_thread_count's separate_calls).
PARALLEL_CALL_FLOPS = 1e10

_lock = threading.Lock()  # serializes changes of the BLAS limits (taken by _locked only)
_local = threading.local()  # per thread: its open blocks, innermost last
# Every open block of every thread, in the order opened. The first one holds
# the baseline and the ceiling; the smallest BLAS request among them is in force.
_open = {}
# (limit, limiter) in the order set; each limiter restores what was in force
# before it (for the libraries loaded when it was made).
_blas_limiters = []

_controller = None
_controller_modules = -1


def blas_limits(n_threads):
    """``threadpoolctl.threadpool_limits(n_threads, user_api="blas")``, from a cached scan.

    Each ``threadpool_limits`` call scans the process's loaded libraries
    (``/proc/self/maps``), a noticeable share of a small fit. The scan is redone
    only when an import may have loaded a new library (the number of modules
    changed).
    """
    global _controller, _controller_modules
    if _controller is None or len(sys.modules) != _controller_modules:
        _controller, _controller_modules = ThreadpoolController(), len(sys.modules)
    return _controller.limit(limits=int(n_threads), user_api="blas")


def choose_thread_count(flops_per_step, available=None, *, separate_calls=False):
    """CPU threads worth using for a step of ``flops_per_step`` flops.

    Steps under :data:`PARALLEL_FLOPS` (2e8) use one thread; larger ones use
    ``available`` (default: the process's baseline thread count). One
    threshold on one measure, the flops of a training step: the networks
    count ``6 * batch * n_parameters`` (forward and backward), quadratic
    logistic regression ``3 * n_scores * rows * d * width`` (the ``X Q_k``
    products and the Gram gradient). The 2e8 crossover holds with the cores
    free; on a busy machine one thread wins at any size, so set
    ``n_threads=1`` there (figures in the CHANGELOG).

    ``separate_calls=True``: ``flops_per_step`` is the largest of separate BLAS calls with
    Python work between them, whose threads must be woken for each; the threshold is then
    :data:`PARALLEL_CALL_FLOPS` (1e10).

    Parameters
    ----------
    flops_per_step : float
    available : int, default=None
    separate_calls : bool, default=False

    Returns
    -------
    n_threads : int
    """
    if available is None:
        first = _first_block()
        available = first.baseline if first is not None else torch.get_num_threads()
        ceiling = thread_ceiling()
        if ceiling is not None:
            # Inside a benchmark's --threads N the baseline is the process's
            # own count, not N: cap it, or a fit under --threads 1 would run
            # its products (torch and BLAS) on every core.
            available = min(int(available), ceiling)
    if flops_per_step < (PARALLEL_CALL_FLOPS if separate_calls else PARALLEL_FLOPS):
        return 1
    return max(1, int(available))


def thread_ceiling():
    """The count an enclosing ``limit_threads(n, ceiling=True)`` set (a benchmark's --threads), or None."""
    first = _first_block()
    return None if first is None else first.ceiling


def _first_block():
    blocks = tuple(_open)  # one C call: safe while other threads open and close blocks
    return blocks[0] if blocks else None


def _locked(function, *args):
    """``function(*args)`` under ``_lock``, which no exception can leave held.

    One line on purpose: the C lock's ``__enter__`` and ``__exit__`` run with
    no line (nor interrupt check) of this frame between them and the call, so
    an exception raised anywhere, a trace function's included, lands inside
    the ``with`` and releases the lock (an interrupt at the exit of a
    multi-line ``with _lock:`` block can leave it held, and every later fit hangs).
    """
    with _lock: return function(*args)  # noqa: E701


def _enforce_smallest_blas_request():
    """Set the process-wide BLAS limit to the smallest open request (call through ``_locked``),
    as a block asking for one thread beside one allowing two must not get two; with no request
    open, the limits found before the first are restored."""
    requests = [block.blas for block in tuple(_open) if block.blas is not None]
    if not requests:
        while _blas_limiters:
            _blas_limiters[-1][1].restore_original_limits()
            _blas_limiters.pop()
        return
    smallest = min(requests)
    if _blas_limiters and _blas_limiters[-1][0] == smallest:
        return
    if len(_blas_limiters) > 1 and _blas_limiters[-2][0] == smallest:
        # Back to the limit before the last change: undo it (keeps the list
        # short while an inner block opens and closes many times).
        _blas_limiters[-1][1].restore_original_limits()
        _blas_limiters.pop()
        return
    # A new limiter (not a change of the first): a library loaded since the
    # first request (scipy's BLAS after numpy's) is restored by the limiter
    # that first set it.
    _blas_limiters.append((smallest, blas_limits(smallest)))


@contextmanager
def limit_threads(n_threads, *, blas=None, ceiling=False):
    """Run a block with ``n_threads`` torch threads (and BLAS threads), then restore.

    Safe under concurrency: fits in several Python threads at once each get
    their setting and leave every thread at the baseline thread count that the
    process had when the first of them began (see the module docstring).

    Parameters
    ----------
    n_threads : int or None
        torch intra-op threads for the block; None leaves them alone.
    blas : int or None, default=None
        Limit numpy/scipy's BLAS to this many threads for the block; None
        leaves it alone. The limit is process-wide: while several blocks
        (nested, or in concurrent threads) ask for one, the smallest request
        is in force. threadpoolctl lets only one live Python thread change
        a process-wide (pthreads) OpenBLAS limit, so code that runs blocks
        in a thread pool takes the limit in the calling thread first (as
        the SDP's parallel class blocks do).
    ceiling : bool, default=False
        Also cap the automatic rule (:func:`choose_thread_count`) at
        ``n_threads`` for the fits inside the block (an estimator's explicit
        ``n_threads`` still wins): what a benchmark's ``--threads`` means.
        Only the outermost block sets it.
    """
    block = _Block(n_threads, blas, ceiling)
    try:
        _open_block(block)
        yield
    finally:
        # with any block an exception left open inside this one
        stack = _thread_blocks()
        if block in stack:
            close_blocks(stack.index(block))


def limit_step_threads(n_threads, products):
    """:func:`limit_threads` for steps whose matrix products run in ``products``.

    The library that multiplies gets the ``n_threads`` and the other one thread:
    torch's OpenMP team and OpenBLAS's threads each spin-wait between calls, so
    both at ``n_threads`` on as many cores take the cores from each other and a
    network's step runs several times slower than on one thread.

    Parameters
    ----------
    n_threads : int or None
        From :func:`skquad._foundation._runtime.thread_count`; None (a GPU
        computes) leaves both alone.
    products : {"torch", "numpy"}
        The library of the step's matrix products.
    """
    if n_threads is None:
        return limit_threads(None)
    if products == "numpy":
        return limit_threads(1, blas=n_threads)
    return limit_threads(n_threads, blas=1)


class _Block:
    """One open ``limit_threads`` block; every step of its bookkeeping can be redone.

    An exception can land between any two steps, so opening registers the block first and
    closing forgets it last: a half-open block stays on its thread's stack for :func:`close_blocks`.
    """

    __slots__ = ("n_threads", "blas", "ceiling", "baseline", "enclosing")

    def __init__(self, n_threads, blas, ceiling):
        self.n_threads = n_threads
        # Also inside an enclosing block that set no BLAS limit (a benchmark's
        # thread_limit(None) around an SDP fit): else each of the solver's
        # parallel blocks would run BLAS on every core.
        self.blas = None if blas is None else max(1, int(blas))
        self.ceiling = max(1, int(n_threads)) if ceiling and n_threads is not None else None
        self.enclosing = self.baseline = torch.get_num_threads()


def _thread_blocks():
    return _local.__dict__.setdefault("stack", [])


def _register(block):
    """Add ``block`` to the open blocks (through ``_locked``)."""
    first = _first_block()
    if first is not None:
        # the baseline and the ceiling of the first open block hold until the last closes
        block.baseline, block.ceiling = first.baseline, first.ceiling
    else:
        block.baseline = _process_thread_count()
    _open[block] = None
    if block.blas is not None:
        _enforce_smallest_blas_request()


def _forget(block):
    """Remove ``block`` from the open blocks (through ``_locked``); idempotent. The last block out
    writes the baseline as the process-wide count (which later threads inherit), as another
    thread's block may have left it at its limit."""
    _open.pop(block, None)
    if block.blas is not None:
        _enforce_smallest_blas_request()
    if not _open:
        torch.set_num_threads(block.baseline)


def _process_thread_count():
    """The process-wide torch thread count: what a thread started now reads (another thread holds
    its own count, taken at its first torch call)."""
    if threading.current_thread() is threading.main_thread():
        return torch.get_num_threads()
    counts = []
    reader = threading.Thread(target=lambda: counts.append(torch.get_num_threads()))
    reader.start()
    reader.join()
    return counts[0]


def _open_block(block):
    _thread_blocks().append(block)
    _locked(_register, block)
    if block.n_threads is not None and int(block.n_threads) != torch.get_num_threads():
        torch.set_num_threads(int(block.n_threads))


def _close_innermost(stack):
    """Close the innermost block of this thread: forget it, give back its thread count, pop it.
    A nested block gives back the enclosing block's count, so as not to undo the outer limit."""
    block = stack[-1]
    _locked(_forget, block)
    restore = block.enclosing if len(stack) > 1 else block.baseline
    if torch.get_num_threads() != restore:
        torch.set_num_threads(restore)
    stack.pop()


def saved_state():
    """What this module may leave changed in the calling thread, for :func:`restore_saved_state`.

    The number of blocks the thread has open, its denormal flag and, when no
    block of any thread is open, the BLAS libraries' thread counts.
    """
    blas = None
    if not _open and _controller is not None:
        blas = tuple(
            (library, library.num_threads)
            for library in _controller.lib_controllers
            if library.user_api == "blas"
        )
    return len(_thread_blocks()), _denormals_are_flushed(), blas


def restore_saved_state(state):
    """Close the blocks opened since :func:`saved_state` and put the rest back; idempotent.

    The atomic fit calls this on its way out: it undoes what an exception
    that skipped a ``finally`` (or landed inside an ``__enter__``) left
    behind. The BLAS counts are put back only when no block of any thread is
    open (a concurrent fit's limit is not undone).
    """
    if state is None:
        close_blocks(0)
        return
    depth, denormals, blas = state
    close_blocks(depth)
    if _denormals_are_flushed() != denormals:
        torch.set_flush_denormal(denormals)
    if blas is not None and not _open:
        for library, n_threads in blas:
            if library.num_threads != n_threads:
                library.set_num_threads(n_threads)


def close_blocks(depth):
    """Close the calling thread's blocks beyond the first ``depth``, innermost first.

    What an exception that skipped a block's ``finally`` left open; the
    atomic fit calls this on its way out. Idempotent.
    """
    stack = _thread_blocks()
    while len(stack) > depth:
        _close_innermost(stack)


# The smallest positive subnormal double, made from its bits (parsing a
# literal while flushing is on could itself produce 0).
_SUBNORMAL = struct.unpack("<d", struct.pack("<q", 1))[0]


def _denormals_are_flushed():
    # torch has no getter. Its flag is the calling thread's floating-point control
    # word (MXCSR, FPCR), which Python's float arithmetic obeys too: with it set, a
    # subnormal operand or result reads as 0 (a Python product, no torch operation).
    return _SUBNORMAL * 1.0 == 0.0


@contextmanager
def flush_denormals():
    """Treat subnormal floats as zero on the CPU for a block, then restore.

    ReLinear starts the quadratic parameters at zero and may let them learn
    with a tiny rate; products of such values with deep-network gradients fall
    into the subnormal range, where CPU arithmetic runs up to 100 times
    slower. Flushing them changes results by less than 1e-38.
    """
    if _denormals_are_flushed() or not torch.set_flush_denormal(True):
        yield
        return
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
