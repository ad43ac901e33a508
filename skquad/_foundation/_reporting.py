"""How skquad talks to the user while it works: warnings and progress lines.

* :func:`warn_user` issues a warning attributed to the user's own line (the
  first frame outside skquad and scikit-learn), so that ``warnings`` filters
  and the printed location point at the call the user wrote, whatever the
  depth of the call chain inside the library (a fit inside a ``Pipeline``
  inside ``GridSearchCV`` included).
* :func:`progress_line` is the one format of every estimator's ``verbose``
  output: ``Iteration 12, loss = 0.12345678, <extra fields>, elapsed = 1.234s``
  where ``elapsed`` is the time since the fit (or ``partial_fit`` call) began.
"""

import os
import sys
import warnings

__all__ = ["warn_user", "progress_line"]

# Frames from these package directories are library frames, not the user's.
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep
    for module in (sys.modules[__name__.split(".")[0]],)
)


def _library_dirs():
    dirs = list(_LIBRARY_DIRS)
    for name in ("sklearn", "joblib"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(module.__file__)) + os.sep)
    return tuple(dirs)


def _user_stacklevel():
    """The ``stacklevel`` of the first frame outside skquad/scikit-learn/joblib."""
    library = _library_dirs()
    frame = sys._getframe(2)  # the caller of warn_user
    level = 2
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(library) and not filename.startswith("<frozen"):
            return level
        frame = frame.f_back
        level += 1
    return 2


def warn_user(message, category=UserWarning):
    """Warn, attributing the warning to the user's line of code.

    Parameters
    ----------
    message : str
    category : type of Warning, default=UserWarning
    """
    warnings.warn(message, category, stacklevel=_user_stacklevel())


def progress_line(iteration, loss, elapsed, **fields):
    """One line of ``verbose`` output, the same for every estimator.

    Parameters
    ----------
    iteration : int
        Epoch (stochastic solvers) or iteration (L-BFGS, the SDP solver).
    loss : float
        The training objective.
    elapsed : float
        Seconds since the fit began (cumulative, not per iteration).
    **fields
        Further ``name = value`` pairs in the order given (floats printed
        with 6 significant digits), e.g. ``validation_score=0.93`` or
        ``gap=1.2e-5``.

    Returns
    -------
    line : str
    """
    parts = [f"Iteration {int(iteration)}", f"loss = {float(loss):.8f}"]
    for name, value in fields.items():
        label = name.replace("_", " ")
        parts.append(f"{label} = {value:.6g}" if isinstance(value, float) else f"{label} = {value}")
    parts.append(f"elapsed = {float(elapsed):.3f}s")
    return ", ".join(parts)
