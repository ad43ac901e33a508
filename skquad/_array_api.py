"""scikit-learn's array API for every skquad estimator: everything follows ``X``.

With ``sklearn.set_config(array_api_dispatch=True)`` and ``X`` of another
namespace than NumPy, :func:`array_api_dispatch` (through
``skquad._base.dispatch_inputs``) wraps

* ``fit`` and ``partial_fit``: the model trains on ``X``'s device (a torch device,
  else the CPU); ``device="auto"`` follows it, any other ``device`` must name it.
  An estimator whose ``_computes_on_tensors`` holds ``"fit"`` gets a torch ``X`` as
  it is; everything else arrives as NumPy (zero-copy on the CPU). The fitted array
  attributes then move to ``X``'s namespace and device, as scikit-learn's array-API
  estimators keep them;
* the prediction methods: ``X`` must share the fit's namespace and device. With
  ``"predict"`` in ``_computes_on_tensors`` a torch ``X`` is predicted in torch;
  otherwise on NumPy views, the result going back to ``X``'s namespace and device.

The NumPy route runs with the dispatch off, so predictions equal the NumPy path's
bit for bit; NumPy input to a NumPy-fitted estimator runs unwrapped.
"""

import contextlib
import contextvars
import functools
import sys

import numpy as np
from sklearn import config_context, get_config

from ._dask_dispatch import is_dask_collection, route_of

__all__ = ["all_finite", "array_api_dispatch", "as_a_user_call", "dispatch_set", "host_view", "input_namespace",
           "is_tensor", "keeps_tensors", "namespace_of", "numpy_dtype", "tensor_of_view", "to_host"]

# Whether the method running takes a torch X as it is (the tensor route below); else its
# validation converts tensors to NumPy, as with the dispatch off.
_TENSOR_ROUTE = contextvars.ContextVar("skquad_tensor_route", default=False)

# A fitted attribute every estimator sets (skquad/_foundation/_input_range.py): the fit's namespace.
_REFERENCE_ATTRIBUTE = "data_min_"

def input_namespace(X):
    """``(xp, device)`` of ``X`` when the dispatch is on and ``X`` is a non-NumPy array, else None."""
    if isinstance(X, np.ndarray) or not get_config()["array_api_dispatch"]:
        return None
    from sklearn.externals.array_api_compat import is_array_api_obj
    from sklearn.utils._array_api import _is_numpy_namespace, get_namespace_and_device

    if not is_array_api_obj(X) or is_dask_collection(X):
        return None
    xp, _, device = get_namespace_and_device(X)
    return None if _is_numpy_namespace(xp) else (xp, device)


def is_tensor(value):
    """Whether ``value`` is a torch tensor (the estimators that compute in torch take it as it is)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def namespace_of(array):
    """NumPy for anything but a torch tensor, else the tensor's array API namespace."""
    return _torch_namespace() if is_tensor(array) else np


@functools.cache
def _torch_namespace():
    """array-api-compat's torch namespace, the one ``array_namespace`` gives every tensor."""
    from sklearn.externals.array_api_compat import torch as xp

    return xp


def numpy_dtype(dtype):
    """A NumPy or torch dtype as the NumPy dtype of that name."""
    return np.dtype(str(dtype).removeprefix("torch.") if type(dtype).__module__ == "torch" else dtype)


def to_host(X):
    """A torch tensor as a NumPy array on the host (a view of a CPU tensor), for a solve that
    computes with NumPy; anything else as it is."""
    return X.cpu().numpy() if is_tensor(X) else X


def host_view(X):
    """The NumPy view of a torch tensor in the CPU's memory, or None where NumPy has none (another
    device, bfloat16, a sparse layout, a tensor that requires grad or has a conjugate bit)."""
    if not X.is_cpu:
        return None
    try:
        return X.numpy()
    except (TypeError, RuntimeError):
        return None


def all_finite(array):
    """Whether every entry of a NumPy array or torch tensor is finite; a CPU tensor is checked on its
    NumPy view (one pass, without torch's per-operation dispatch)."""
    view = host_view(array) if is_tensor(array) else array
    if view is None:
        return bool(array.isfinite().all())
    return bool(np.isfinite(view).all())


def tensor_of_view(X, view, array):
    """``array``, NumPy's result of a step on ``view`` (:func:`host_view` of ``X``), as a tensor:
    ``X`` itself where the step kept the view, else a tensor sharing ``array``'s memory."""
    return X if array is view else sys.modules["torch"].from_numpy(array)


def dispatch_set(on):
    """A context with the dispatch ``on`` (or off); scikit-learn's config_context, a costly switch, is
    skipped where the dispatch already is so."""
    if get_config()["array_api_dispatch"] == on:
        return contextlib.nullcontext()
    return config_context(array_api_dispatch=on)


def keeps_tensors(X):
    """Whether ``X`` is a tensor that the running method takes as it is."""
    return _TENSOR_ROUTE.get() and is_tensor(X)


def _same_device(X, reference):
    """Whether two tensors lie on one device (``is_cpu`` first: cheaper than building devices)."""
    return (X.is_cpu and reference.is_cpu) or X.device == reference.device


def _tensor_on(result, X):
    """A NumPy result of the tensor route (computed on the view of a CPU tensor) as a tensor on
    ``X``'s device, sharing its memory on the CPU."""
    torch = sys.modules["torch"]
    return torch.from_numpy(result) if X.is_cpu else torch.as_tensor(result, device=X.device)


def _on_tensors(estimator, X, step):
    """Whether ``estimator``'s ``step`` ("fit" or "predict") takes a torch ``X`` as it is."""
    return step in getattr(estimator, "_computes_on_tensors", ()) and is_tensor(X)


@contextlib.contextmanager
def _tensor_route(on):
    token = _TENSOR_ROUTE.set(on)
    try:
        yield
    finally:
        _TENSOR_ROUTE.reset(token)


@contextlib.contextmanager
def as_a_user_call(X):
    """Nested estimators (a fit's own candidates) called as a user calls them: the
    dispatch on for a foreign ``X`` (off for NumPy), outside the caller's tensor route."""
    with _tensor_route(False), config_context(array_api_dispatch=_foreign(X)):
        yield


def _foreign(value):
    """Whether ``value`` is an array of another namespace than NumPy (not a Dask collection)."""
    return (hasattr(value, "__dlpack__") and not isinstance(value, (np.ndarray, np.generic))
            and not is_dask_collection(value))


def to_numpy(value):
    """A non-NumPy array as a NumPy array on the CPU (no copy where it is there); anything else as it is."""
    if not _foreign(value):
        return value
    try:
        return np.from_dlpack(value)
    except (BufferError, RuntimeError, TypeError, ValueError):  # not on the CPU
        from sklearn.utils._array_api import move_to

        return move_to(value, xp=np, device="cpu")


def _fitted_to_numpy(key, value):
    """A foreign fitted attribute as NumPy: an array, or the scalar of a 0-d one (``intercept_``)."""
    array = to_numpy(value)
    return array[()] if array.ndim == 0 else array


def _foreign_attribute(key, value):
    return _foreign(value)


def _numeric(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def _fitted_array(key, value):
    """A numeric array attribute, or a scalar ``intercept_`` (a 0-d array of X's namespace, as Ridge's)."""
    return _numeric(value) or (key == "intercept_" and isinstance(value, np.floating))


def _converted_state(state, convert, select):
    """``state`` (an estimator's ``__dict__``) with the attributes ``select(key, value)`` picks converted."""
    return {key: convert(key, value) if select(key, value) else value for key, value in state.items()}


def _training_device(estimator, xp, device):
    """The torch device a fit on ``X`` computes on; a ``device`` parameter naming another is refused."""
    import torch

    from sklearn.utils._array_api import _is_xp_namespace

    from ._foundation._torch_utils import resolve_device

    target = torch.device(device) if _is_xp_namespace(xp, "torch") else torch.device("cpu")
    requested = getattr(estimator, "device", "auto")
    if requested is None or (isinstance(requested, str) and requested.strip().lower() == "auto"):
        return target
    resolved = resolve_device(requested)
    if resolved.type != target.type or resolved.index not in (None, target.index):
        raise ValueError(
            f"device={requested!r}, but X is on {device} and array_api_dispatch is on: the "
            "computation follows X. Set device='auto', or move X to the device first."
        )
    return target


def _fit(method, name):
    @functools.wraps(method)
    def fit(estimator, X, *args, **kwargs):
        space = input_namespace(X)
        if space is None and not get_config()["array_api_dispatch"]:
            return method(estimator, X, *args, **kwargs)
        if space is None:  # NumPy X: y, sample_weight (and classes) follow it
            return method(estimator, X, *map(to_numpy, args),
                          **{key: to_numpy(value) for key, value in kwargs.items()})
        from ._foundation._torch_utils import follow_device

        xp, device = space
        target = _training_device(estimator, xp, device)
        before = estimator.__dict__
        # partial_fit and warm_start continue from NumPy attributes
        estimator.__dict__ = _converted_state(before, _fitted_to_numpy, _foreign_attribute)
        try:
            native = _on_tensors(estimator, X, "fit")
            with follow_device(target), _tensor_route(native), config_context(array_api_dispatch=False):
                method(estimator, X if native else to_numpy(X), *map(to_numpy, args),
                       **{key: to_numpy(value) for key, value in kwargs.items()})
        except BaseException:
            estimator.__dict__ = before
            raise
        estimator.__dict__ = _converted_state(
            estimator.__dict__, lambda key, value: xp.asarray(value, device=device),
            _fitted_array,
        )
        return estimator

    return fit


def _prediction(method, name):
    @functools.wraps(method)
    def predict(estimator, X, *args, **kwargs):
        # predictions carry no gradient: a tensor that requires one is read detached (a view)
        X = X.detach() if getattr(X, "requires_grad", False) else X
        reference = getattr(estimator, _REFERENCE_ATTRIBUTE, None)
        if (_on_tensors(estimator, reference, "predict") and type(X) is type(reference)
                and _same_device(X, reference) and get_config()["array_api_dispatch"]):
            # the fit's tensors: scores, labels and probabilities in torch (score's metric too)
            token = _TENSOR_ROUTE.set(True)
            try:
                result = method(estimator, X, *args, **kwargs)
            finally:
                _TENSOR_ROUTE.reset(token)
            return _tensor_on(result, X) if isinstance(result, np.ndarray) else result
        space = input_namespace(X)
        if space is None and isinstance(reference, (np.ndarray, type(None))):
            return method(estimator, X, *args, **kwargs)
        same = type(X) is type(reference) and getattr(X, "device", None) == getattr(reference, "device", None)
        if get_config()["array_api_dispatch"] and not same:
            from sklearn.utils._array_api import check_same_namespace

            check_same_namespace(X, estimator, attribute=_REFERENCE_ATTRIBUTE, method=name)
        cls = type(estimator)
        view = cls.__new__(cls)
        view.__dict__ = _converted_state(estimator.__dict__, _fitted_to_numpy, _foreign_attribute)
        with config_context(array_api_dispatch=False):
            result = method(view, to_numpy(X), *map(to_numpy, args),
                            **{key: to_numpy(value) for key, value in kwargs.items()})
        if space is None or not _numeric(result):
            return result
        return space[0].asarray(result, device=space[1])

    return predict


def array_api_dispatch(method):
    """Decorate a fit or prediction method: foreign arrays converted as the module docstring says."""
    return route_of(method, (_fit, _prediction))
