"""Small helpers between numpy/scikit-learn conventions and torch.

They keep three promises that every torch-trained estimator makes:

* ``random_state`` never touches torch's global generator: it becomes a local
  :class:`torch.Generator` (:func:`make_generator`).
* ``device="auto"`` means CUDA when it is available, else the CPU
  (:func:`resolve_device`); asking for CUDA without it is a clear error.
* learned weights leave torch as numpy arrays (:func:`to_numpy`), so a model
  fitted on a GPU unpickles on a machine without one.
"""

import numpy as np
import torch
from sklearn.utils import check_random_state

__all__ = ["make_generator", "resolve_device", "resolve_dtype", "to_numpy", "seed_from"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


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
    """Turn the ``device`` parameter into a :class:`torch.device`.

    ``"auto"`` selects CUDA when available, otherwise the CPU.
    """
    if isinstance(device, torch.device):
        requested = device
    elif device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            requested = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(
                f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}."
            ) from exc
    if requested.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} was requested but CUDA is not available on this "
            "machine (torch.cuda.is_available() is False). Use device='cpu' or "
            "device='auto'."
        )
    if requested.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}.")
    return requested


def resolve_dtype(dtype):
    """Turn ``"float32"``/``"float64"`` (or numpy/torch dtypes) into a torch dtype."""
    if isinstance(dtype, torch.dtype) and dtype in _DTYPES.values():
        return dtype
    key = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if key not in _DTYPES:
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}.")
    return _DTYPES[key]


def to_numpy(tensor):
    """Detach a tensor to a CPU numpy array (a copy, safe to pickle)."""
    return tensor.detach().cpu().numpy().copy()
