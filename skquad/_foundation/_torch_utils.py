"""Small helpers between numpy/scikit-learn conventions and torch.

They keep the promises that every torch-trained estimator makes:

* ``random_state`` never touches torch's global generator: it becomes a local
  :class:`torch.Generator` (:func:`make_generator`).
* ``device`` accepts ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` in any case
  and :class:`torch.device` objects (:func:`resolve_device`); asking for CUDA
  without it is a clear error at fit. ``"auto"`` means the CPU, or ``X``'s
  device in a fit under scikit-learn's array API dispatch (:func:`follow_device`).
* a fitted model predicts anywhere: :func:`prediction_device` turns the stored
  ``device`` into one that exists on this machine (a model fitted on a GPU and
  unpickled on a CPU-only machine predicts on the CPU), and learned weights leave
  torch as numpy arrays (:func:`to_numpy`).
* numpy input becomes tensors without torch's "not writable" warning
  (:func:`as_tensor`): a read-only array (a pandas DataFrame's values, a
  ``np.memmap``) is copied once, a writable one is shared.
* the convex solvers' torch L-BFGS (:func:`lbfgs_optimizer`) does not import
  ``torch._dynamo``.
"""

import contextlib
import contextvars

import numpy as np
import torch
from sklearn.utils import check_random_state

__all__ = [
    "all_finite",
    "as_tensor",
    "follow_device",
    "lbfgs_optimizer",
    "make_generator",
    "prediction_device",
    "resolve_device",
    "resolve_dtype",
    "seed_from",
    "to_numpy",
]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}

# What "auto" means: the CPU, or the device of X in a fit under the array API dispatch.
_AUTO_DEVICE = contextvars.ContextVar("skquad_auto_device", default=torch.device("cpu"))


@contextlib.contextmanager
def follow_device(device):
    """``device="auto"`` means ``device`` inside the block (skquad._array_api's fits)."""
    token = _AUTO_DEVICE.set(torch.device(device))
    try:
        yield
    finally:
        _AUTO_DEVICE.reset(token)


def seed_from(random_state):
    """Draw a 31-bit integer seed from a scikit-learn ``random_state``."""
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def make_generator(random_state, device="cpu"):
    """A local torch generator seeded from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        As in scikit-learn. ``None`` gives a fresh, unpredictable seed.
    device : str or torch.device, default="cpu"

    Returns
    -------
    generator : torch.Generator
    """
    generator = torch.Generator(device=torch.device(device))
    generator.manual_seed(seed_from(random_state))
    return generator


def resolve_device(device):
    """Turn the ``device`` parameter into a :class:`torch.device` for fitting.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}, torch.device or None
        Strings in any case (``"CPU"``). ``"auto"`` and None mean the CPU: the
        GPU is slower than the CPU on the problem sizes these estimators are
        used for (UCI-sized tables), and the size at which a GPU starts to pay
        off is not known, so "auto" does not guess; pass ``device="cuda"`` to use a GPU. Inside :func:`follow_device`
        (a fit on a torch tensor under ``array_api_dispatch``) it means that
        tensor's device.

    Returns
    -------
    device : torch.device
        ``cpu`` or ``cuda[:N]``.

    Raises
    ------
    ValueError
        For any other device name, or CUDA on a machine without it.
    TypeError
        For a ``device`` that is neither a string nor a torch.device.
    """
    requested = _parse_device(device)
    if requested.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} was requested but CUDA is not available on this "
            "machine (torch.cuda.is_available() is False). Use device='cpu' or "
            "device='auto'."
        )
    index = requested.index
    if (
        requested.type == "cuda"
        and index is not None
        and index >= torch.cuda.device_count()
    ):
        raise ValueError(
            f"device={device!r} was requested but this machine has "
            f"{torch.cuda.device_count()} CUDA device(s)."
        )
    return requested


def prediction_device(device):
    """The device on which a fitted model predicts on this machine.

    The stored ``device`` parameter when it exists here, else the CPU: a model
    fitted on a GPU and unpickled on a machine without one (or with fewer GPUs)
    still predicts. Never raises for a device the estimator accepted at fit.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}, torch.device or None

    Returns
    -------
    device : torch.device
    """
    try:
        return resolve_device(device)
    except ValueError:
        return torch.device("cpu")


def _parse_device(device):
    if device is None:
        return _AUTO_DEVICE.get()
    if isinstance(device, torch.device):
        requested = device
    elif isinstance(device, str):
        name = device.strip().lower()
        if name == "auto":
            return _AUTO_DEVICE.get()
        try:
            requested = torch.device(name)
        except RuntimeError as exc:
            raise ValueError(
                f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, "
                f"got {device!r}."
            ) from exc
    else:
        raise TypeError(
            "device must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, "
            f"got {device!r} of type {type(device).__name__}."
        )
    if requested.type not in ("cpu", "cuda"):
        raise ValueError(
            f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}."
        )
    if requested.type == "cpu":
        return torch.device("cpu")
    return requested


def resolve_dtype(dtype):
    """Turn ``"float32"``/``"float64"`` (or numpy/torch dtypes) into a torch dtype."""
    if isinstance(dtype, torch.dtype):
        key = str(dtype).removeprefix("torch.")
    elif isinstance(dtype, str):
        key = dtype
    else:
        try:
            key = np.dtype(dtype).name
        except TypeError:
            key = None
    if key not in _DTYPES:
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}.")
    return _DTYPES[key]


def all_finite(tensor):
    """Whether every entry of ``tensor`` is finite: numpy's test on a CPU tensor of a numpy dtype
    (a fraction of torch's ``isfinite(...).all()``, two dispatched operations), torch's elsewhere."""
    if tensor.device.type == "cpu" and tensor.dtype in (torch.float32, torch.float64):
        return bool(np.isfinite(tensor.detach().numpy()).all())
    return bool(torch.isfinite(tensor).all())


def to_numpy(tensor):
    """Detach a tensor to a CPU numpy array (a copy, safe to pickle)."""
    return tensor.detach().cpu().numpy().copy()


def as_tensor(array, dtype=None, device=None):
    """A tensor from a numpy array, without torch's "not writable" warning.

    A writable array of the requested dtype on the CPU is shared, not copied
    (as :func:`torch.as_tensor`); a read-only one (a pandas 3 DataFrame's
    values, a ``np.memmap`` opened read-only, a broadcast view) is copied once,
    since torch cannot hold read-only memory. A dtype conversion or a transfer
    to another device copies anyway and needs no extra copy.

    Parameters
    ----------
    array : array-like
    dtype : torch.dtype, numpy dtype or str, default=None
        None keeps the array's dtype.
    device : str or torch.device, default=None
        None is the CPU.

    Returns
    -------
    tensor : torch.Tensor
    """
    array = np.asarray(array)
    torch_dtype = None if dtype is None else _torch_dtype(dtype)
    numpy_dtype = array.dtype if torch_dtype is None else _numpy_dtype(torch_dtype)
    if not array.flags.writeable or any(step < 0 for step in array.strides):
        # np.array copies (and converts) in one pass into writable memory.
        array = np.array(array, dtype=numpy_dtype, copy=True)
    return torch.as_tensor(array, dtype=torch_dtype, device=device)


def _torch_dtype(dtype):
    """A torch dtype from a torch dtype, numpy dtype or string (any numeric dtype)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    return torch.from_numpy(np.empty(0, dtype=np.dtype(dtype))).dtype


def _numpy_dtype(torch_dtype):
    return torch.empty(0, dtype=torch_dtype).numpy().dtype


def _undecorated(method):
    return getattr(method, "__wrapped__", method)


class _LBFGS(torch.optim.LBFGS):
    # torch wraps these two in torch._disable_dynamo, whose first call imports torch._dynamo
    # (a large import) only to keep torch.compile out of them: the solvers are never compiled.
    add_param_group = _undecorated(torch.optim.Optimizer.add_param_group)
    zero_grad = _undecorated(torch.optim.Optimizer.zero_grad)


def lbfgs_optimizer(parameters, **options):
    """``torch.optim.LBFGS(parameters, **options)``, without importing ``torch._dynamo``."""
    return _LBFGS(parameters, **options)
