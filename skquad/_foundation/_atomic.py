"""Atomic, serialized fits and consistent reads of the fitted state.

``@atomic_fit`` goes on ``fit``, ``partial_fit`` and ``resample``, under
scikit-learn's ``@_fit_context``. The method runs on a *working copy* (same
class, same parameters and callbacks by reference, a deep copy of the fitted
state); when it returns, the live estimator's ``__dict__`` is replaced by a new
one in one assignment. So a fit that raises or is interrupted leaves the previous
model exactly as it was, a reader never sees half a fit, and calls on one
instance serialize on a re-entrant lock kept in a module-level weak mapping (never
pickled, copied or cloned). For ``fit`` and ``partial_fit`` it also opens
scikit-learn's callback root context on the working copy
(``self._callback_fit_ctx``) and runs the root hooks.

``@reads_fitted_state`` goes on the public methods that read the fitted state:
they run on a view sharing the live ``__dict__`` as it was when the call began,
so one prediction reads one model throughout. The price is one deep copy of the
fitted state per fit.
"""

import copy
import functools
import inspect
import sys
import threading
import weakref

import numpy as np

from sklearn.callback._callback_support import callback_management_context

__all__ = ["atomic_fit", "fitted_view", "reads_fitted_state"]

# scikit-learn's callback objects live in the estimator's __dict__ but are not
# fitted state: they are shared by reference (as sklearn.base.clone does) and
# never copied or rolled back.
CALLBACK_ATTRIBUTES = frozenset(
    {
        "_skl_callbacks",
        "_callback_fit_ctx",
        "_skl_callbacks_to_teardown",
        "_parent_callback_ctx",
    }
)

# Methods that open the callback root context.
_CALLBACK_TASKS = ("fit", "partial_fit")

# One re-entrant lock per live estimator. Weak keys: an estimator that is
# garbage-collected takes its lock along; nothing is stored on the instance.
_fit_locks = weakref.WeakKeyDictionary()


def _fit_lock(estimator):
    # Re-entrant, so that a callback refitting the same estimator does not deadlock;
    # setdefault is one dict operation: no guard lock that an interrupt could leave held.
    return _fit_locks.setdefault(estimator, threading.RLock())


def _not_fitted_names(cls):
    """Names in ``__dict__`` that are not fitted state: parameters, callbacks."""
    names = cls.__dict__.get("_not_fitted_state_cache")
    if names is None:
        # Cached per class: every fit asks three times (working copy, its state, the publish).
        names = CALLBACK_ATTRIBUTES.union(cls._get_param_names())
        cls._not_fitted_state_cache = names
    return names


def fitted_state(estimator):
    """The fitted part of ``estimator.__dict__`` (a new dict, values shared)."""
    skipped = _not_fitted_names(type(estimator))
    return {
        key: value for key, value in estimator.__dict__.items() if key not in skipped
    }


def copy_fitted_state(estimator):
    """A deep copy of the fitted state, with a clear error when it cannot be made."""
    state = fitted_state(estimator)
    if not state:
        return state
    try:
        return _deepcopy_on_one_thread(state)
    except Exception as exc:
        culprit = next(key for key in state if not _deep_copyable(state[key]))
        raise TypeError(
            f"{type(estimator).__name__}.{culprit} cannot be deep-copied, so a fit "
            "could not keep the previous model intact. Fitted state must be "
            "deep-copyable (numpy arrays, torch modules, leaf tensors)."
        ) from exc


def _working_copy(estimator):
    """A new instance: the parameters and callbacks by reference, a copy of the fitted state."""
    cls = type(estimator)
    skipped = _not_fitted_names(cls)
    work = cls.__new__(cls)
    work.__dict__.update(
        (key, value) for key, value in estimator.__dict__.items() if key in skipped
    )
    work.__dict__.update(copy_fitted_state(estimator))
    return work


def _publish(estimator, work):
    """Give ``estimator`` the fitted state of ``work`` in one reference assignment."""
    skipped = _not_fitted_names(type(estimator))
    state = {
        key: value for key, value in estimator.__dict__.items() if key in skipped
    }
    state.update(
        (key, value) for key, value in work.__dict__.items() if key not in skipped
    )
    # One assignment: a reader holds either the old dict or this one.
    estimator.__dict__ = state


def atomic_fit(method):
    """Run ``method`` on a working copy and publish its fitted state (module docstring)."""
    task_name = method.__name__
    signature = inspect.signature(method)

    def run_in_root_context(work, args, kwargs):
        bound = signature.bind_partial(work, *args, **kwargs).arguments
        X, y = bound.get("X"), bound.get("y")
        sample_weight = bound.get("sample_weight")
        # As LogisticRegression: scorers in callbacks see the sample weights.
        metadata = None if sample_weight is None else {"sample_weight": sample_weight}
        with callback_management_context(work):
            context = work._init_callback_context(
                task_name=task_name,
                max_subtasks=work._callback_max_subtasks(task_name),
            )
            context.call_on_fit_task_begin(estimator=work, X=X, y=y, metadata=metadata)
            result = method(work, *args, **kwargs)
            # The root task ends on the fitted model itself (no reconstruction).
            context.call_on_fit_task_end(
                estimator=work,
                X=X,
                y=y,
                metadata=metadata,
                reconstruction_attributes={},
            )
        return result

    @functools.wraps(method)
    def atomic(estimator, *args, **kwargs):
        kept = _process_state()
        try:
            with _fit_lock(estimator):
                work = _working_copy(estimator)
                if task_name in _CALLBACK_TASKS:
                    result = run_in_root_context(work, args, kwargs)
                else:
                    result = method(work, *args, **kwargs)
                _publish(estimator, work)
        finally:
            try:
                _restore_process_state(kept)
            except BaseException:
                # an interrupt landed in the restore: every step can be redone
                _restore_process_state(kept)
                raise
        return estimator if result is work else result

    atomic.skquad_atomic_fit = True
    return atomic


def fitted_view(estimator):
    """A new instance sharing ``estimator.__dict__`` as it is now: one model throughout."""
    cls = type(estimator)
    view = cls.__new__(cls)
    # Shared, not copied: a publish replaces the live dict, never mutates it.
    view.__dict__ = estimator.__dict__
    return view


def reads_fitted_state(method):
    """Run ``method`` on a view of the fitted state as it was when the call began.

    Every public method and property of an estimator carries this or
    ``@atomic_fit`` (tests/test_atomic.py enumerates them); for a property,
    decorate its getter.
    """

    @functools.wraps(method)
    def consistent(estimator, *args, **kwargs):
        return method(fitted_view(estimator), *args, **kwargs)

    consistent.skquad_reads_fitted_state = True
    return consistent


def _process_state():
    """The process-wide state a fit may change (numpy's errors, grad mode, threads), to restore:
    an asynchronous exception inside a ``with`` block's ``__enter__`` leaves it changed."""
    torch = sys.modules.get("torch")
    threads = sys.modules.get("skquad._foundation._threads")
    return {
        "numpy errors": np.geterr(),
        "grad mode": None if torch is None else torch.is_grad_enabled(),
        "threads": None if threads is None else threads.saved_state(),
    }


def _restore_process_state(kept):
    """Put back what :func:`_process_state` recorded; every step can be redone."""
    if np.geterr() != kept["numpy errors"]:
        np.seterr(**kept["numpy errors"])
    torch = sys.modules.get("torch")
    if torch is not None:
        enabled = kept["grad mode"]
        torch.set_grad_enabled(True if enabled is None else enabled)
    threads = sys.modules.get("skquad._foundation._threads")
    if threads is not None:
        threads.restore_saved_state(kept["threads"])


def _deepcopy_on_one_thread(state):
    """``copy.deepcopy(state)``, with torch on one thread: waking its threads for many
    small tensors costs more than the copies."""
    if "torch" not in sys.modules:
        return copy.deepcopy(state)
    from ._threads import limit_threads

    with limit_threads(1):
        return copy.deepcopy(state)


def _deep_copyable(value):
    try:
        copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - any failure means "not copyable"
        return False
    return True
