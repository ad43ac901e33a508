"""How much memory a fit may take, asked in one place.

The estimators estimate their big allocations before making them and refuse
clearly when the estimate exceeds :func:`available_memory`; the quantized
networks, the quadratic networks and quadratic logistic regression all ask
here.
"""

import os

__all__ = ["available_memory", "check_memory"]


def available_memory():
    """Bytes of memory available now: psutil's estimate, else the free physical pages, else None."""
    try:
        import psutil
    except ImportError:  # psutil is optional
        try:
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return None
    return int(psutil.virtual_memory().available)


def check_memory(required_bytes, parameter, value, what, *, advice=None):
    """Refuse, before allocating, work whose memory exceeds what is available.

    Parameters
    ----------
    required_bytes : float
        The estimate.
    parameter, value : str, object
        The parameter to name in the message and its current value.
    what : str
        What needs the memory (e.g. "sampling the network").
    advice : str, default=None
        What to do; ``"reduce {parameter}."`` when None.

    Raises
    ------
    MemoryError
        When the estimate exceeds the available memory.
    """
    available = available_memory()
    if available is None or required_bytes <= available:
        return
    raise MemoryError(
        f"{parameter}={value!r} needs about {required_bytes / 2**30:.1f} GiB for "
        f"{what}, more than the {available / 2**30:.1f} GiB of memory available; "
        + (advice if advice is not None else f"reduce {parameter}.")
    )
