"""The runtime policy of one fit: dtype, device, generators, threads, memory.

Every estimator asks :func:`runtime_policy` once per ``fit`` (and per
``partial_fit`` call); nothing else in skquad decides these:

* **dtype** (:func:`compute_dtype`): the ``dtype`` parameter; else the fitted
  model's when a fit continues; else float32 for float32 input, float64 otherwise
  (as ``LogisticRegression`` and ``MLPClassifier``).
* **device** (:func:`skquad._foundation._torch_utils.resolve_device`): ``"auto"``
  and None are the CPU; CUDA without CUDA is an error at fit. Predictions run on
  ``device_`` (the CPU where it is missing).
* **generators** (:func:`spawn_generators`): ``random_state`` is drawn from once
  per fit; the draw seeds the initialization generator (as
  :func:`skquad._foundation._torch_utils.make_generator`) and a
  :class:`numpy.random.SeedSequence` whose child ``k`` seeds the shuffles and the
  validation split of ``partial_fit`` call ``k``: independent of the initial draws,
  anew on every call, reproducibly.
* **threads** (:func:`thread_count`): an explicit ``n_threads`` wins; a GPU leaves
  torch's CPU threads alone; else
  :func:`~skquad._foundation._threads.choose_thread_count` on one step's flops (for a
  sequence of separate BLAS calls, on its largest call's). The only place a thread count
  is chosen (:func:`parallel_workers` and :func:`separate_calls_blas` build on it).
* **CPU matrix products** (:func:`cpu_matmul_library`): torch's MKL on Intel CPUs,
  numpy's BLAS elsewhere, for :class:`skquad.nn.fused.FusedNetwork`.
* **memory** (:meth:`RuntimePolicy.require_memory`): big allocations estimated and
  refused with a :class:`MemoryError` naming the parameter to change.
"""

import dataclasses
import functools
import os
import platform

import numpy as np
import torch

from ._memory import check_memory
from ._torch_utils import resolve_device, resolve_dtype, seed_from
from ._threads import choose_thread_count, limit_threads

__all__ = [
    "RuntimePolicy",
    "compute_dtype",
    "cpu_matmul_library",
    "parallel_workers",
    "runtime_policy",
    "separate_calls_blas",
    "spawn_generators",
    "thread_count",
]


def compute_dtype(input_dtype, requested=None, fitted=None):
    """The torch dtype a fit computes (and stores its arrays) in.

    Parameters
    ----------
    input_dtype : numpy or torch dtype
        The validated ``X``'s dtype.
    requested : {"float32", "float64"} or None, default=None
        The estimator's ``dtype`` parameter; wins when set.
    fitted : numpy or torch dtype, default=None
        The dtype of the model a fit continues (warm start, ``partial_fit``):
        continuing keeps it, whatever the new batch's dtype.

    Returns
    -------
    dtype : torch.float32 or torch.float64
    """
    if requested is not None:
        return resolve_dtype(requested)
    if fitted is not None:
        return resolve_dtype(fitted)
    # (a torch dtype: a tensor's, under the array API dispatch)
    float32 = input_dtype == torch.float32 if isinstance(input_dtype, torch.dtype) else np.dtype(input_dtype) == np.float32
    return torch.float32 if float32 else torch.float64


def spawn_generators(random_state, n=2, *, call=0):
    """``n`` CPU torch generators with independent streams from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        Drawn from once (:func:`skquad._foundation._torch_utils.seed_from`).
    n : int, default=2
        How many generators: the first (initialization) is seeded with the
        draw itself, the others with the children of a
        :class:`numpy.random.SeedSequence` rooted at it.
    call : int, default=0
        Which call of a sequence (``partial_fit`` number ``call``): each call
        gets its own children of the same root.

    Returns
    -------
    generators : tuple of torch.Generator
    """
    seed = seed_from(random_state)
    children = np.random.SeedSequence(seed, spawn_key=(int(call),)).spawn(n - 1)
    seeds = [seed] + [int(child.generate_state(1, np.uint64)[0]) for child in children]
    return tuple(torch.Generator().manual_seed(value) for value in seeds)


def thread_count(n_threads, device, flops_per_step, *, separate_calls=False):
    """torch CPU threads for a fit: the one rule.

    Parameters
    ----------
    n_threads : "auto" or int
        The estimator's parameter; an int wins.
    device : torch.device
    flops_per_step : float or None
        Work of one training step; None (unknown) counts as large.
    separate_calls : bool, default=False
        ``flops_per_step`` is the largest of separate BLAS calls with Python work between
        them (:func:`~skquad._foundation._threads.choose_thread_count`).

    Returns
    -------
    n_threads : int or None
        None leaves torch's setting alone (a GPU computes, the CPU only feeds it).
    """
    if n_threads != "auto":
        return int(n_threads)
    if torch.device(device).type != "cpu":
        return None
    return choose_thread_count(np.inf if flops_per_step is None else flops_per_step,
                               separate_calls=separate_calls)


def separate_calls_blas(largest_call_flops):
    """numpy's BLAS threads for separate calls with Python work between them, the largest of
    ``largest_call_flops``: :func:`thread_count`'s separate-calls rule as a
    :func:`~skquad._foundation._threads.limit_threads` block (torch's threads left alone)."""
    return limit_threads(None, blas=thread_count("auto", "cpu", largest_call_flops, separate_calls=True))


def parallel_workers(n_tasks, flops_per_task):
    """Python threads for ``n_tasks`` independent CPU tasks: one per available core where
    :func:`thread_count` gives a task one thread (small tasks run side by side), else 1."""
    if thread_count("auto", "cpu", flops_per_task) != 1:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, n_tasks))


def _cpu_vendor():
    """The CPU's vendor string ("GenuineIntel", "AuthenticAMD", ...), or "" when unknown."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    processor = platform.processor()  # Windows: "Intel64 Family 6 ..., GenuineIntel"
    for vendor in ("GenuineIntel", "AuthenticAMD"):
        if vendor in processor:
            return vendor
    return ""


@functools.cache
def cpu_matmul_library():
    """Which library multiplies the networks' CPU batches: "torch" or "numpy".

    torch's CPU products are MKL's; numpy's are its own BLAS (OpenBLAS in the
    wheels, as scikit-learn's ``MLPClassifier`` uses). Which is faster at a
    tabular network's shapes depends on the CPU, and deterministically on its
    vendor: MKL runs its tuned kernels on Intel processors only (torch is
    faster on Intel, numpy's OpenBLAS on AMD; figures in the CHANGELOG). The
    rule is the vendor's, so it is
    decided once per process and the same machine always computes the same
    numbers (a timing-based choice could change a fit's rounding between
    runs).

    Returns
    -------
    library : {"torch", "numpy"}
        "torch" on an Intel CPU with torch built with MKL, else "numpy".
    """
    if _cpu_vendor() == "GenuineIntel" and torch.backends.mkl.is_available():
        return "torch"
    return "numpy"


@dataclasses.dataclass(frozen=True)
class RuntimePolicy:
    """What one fit computes with (see the module docstring).

    Attributes
    ----------
    dtype : torch.dtype
        Computation dtype, and the dtype of the fitted arrays.
    device : torch.device
    n_threads : int or None
        torch CPU threads (None: leave them alone).
    init_generator, shuffle_generator : torch.Generator
        Independent CPU streams for the initial parameters and for shuffling.
    """

    dtype: torch.dtype
    device: torch.device
    n_threads: object
    init_generator: torch.Generator
    shuffle_generator: torch.Generator

    @property
    def numpy_dtype(self):
        """The numpy dtype of :attr:`dtype` (for the fitted arrays)."""
        return np.float32 if self.dtype == torch.float32 else np.float64

    @property
    def device_name(self):
        """:attr:`device` as a string, what the estimators store in ``device_``."""
        return str(self.device)

    @staticmethod
    def require_memory(required_bytes, parameter, value, what, *, advice=None):
        """Refuse the fit (MemoryError naming ``parameter``) when the estimate exceeds the memory available."""
        check_memory(required_bytes, parameter, value, what, advice=advice)


def runtime_policy(
    X_dtype,
    *,
    dtype=None,
    fitted_dtype=None,
    device="auto",
    n_threads="auto",
    flops_per_step=None,
    random_state=None,
    call=0,
):
    """Decide dtype, device, threads and generators of one fit.

    Parameters
    ----------
    X_dtype : numpy dtype
        The validated training input's dtype.
    dtype : {"float32", "float64"} or None, default=None
        The estimator's ``dtype`` parameter.
    fitted_dtype : dtype, default=None
        The continued model's dtype (see :func:`compute_dtype`).
    device : str, torch.device or None, default="auto"
        The estimator's ``device`` parameter.
    n_threads : "auto" or int, default="auto"
    flops_per_step : float, default=None
        Work of one training step, for the "auto" thread count.
    random_state : int, RandomState instance or None, default=None
    call : int, default=0
        ``partial_fit`` call number (see :func:`spawn_generators`).

    Returns
    -------
    policy : RuntimePolicy

    Raises
    ------
    ValueError
        Unknown device, or CUDA where it is not available (naming ``device``).
    """
    resolved = resolve_device(device)
    init_generator, shuffle_generator = spawn_generators(random_state, 2, call=call)
    return RuntimePolicy(
        dtype=compute_dtype(X_dtype, dtype, fitted_dtype),
        device=resolved,
        n_threads=thread_count(n_threads, resolved, flops_per_step),
        init_generator=init_generator,
        shuffle_generator=shuffle_generator,
    )
