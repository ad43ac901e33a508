"""A results directory's fingerprint: what, besides data and machine, decides its numbers.

The parameters the suite builds its skquad estimators with, the SDP solver table's
size rules and the ``solver_`` that default SDP fits take on small fixed problems,
hashed. ``tests/test_benchmark_fingerprint.py`` recomputes it for every committed
directory, so results that no longer describe the code fail a test.
"""

import hashlib
import json
import subprocess
from pathlib import Path

__all__ = ["FINGERPRINT_FILE", "fingerprint", "skquad_revision"]

FINGERPRINT_FILE = "fingerprint.json"

# The skquad estimators of the suites that do not take --estimators; the others
# fingerprint every skquad estimator of their kind.
SUITE_ESTIMATORS = {"paper002": ("SDP", "BackpropQ")}


def _specs(suite):
    """The skquad estimators' specs a run of ``suite`` can build."""
    from ._estimators import default_regression_specs, default_specs, optional_specs

    specs = default_specs() + optional_specs()
    if suite == "regression":
        specs = default_regression_specs()
    elif suite not in ("uci",) + tuple(SUITE_ESTIMATORS):
        specs += default_regression_specs()
    return [spec for spec in specs if spec.kind == "skquad"]


def _reference_solvers():
    """``solver_`` of default SDP fits on a binary, a 3-class and a regression problem."""
    from sklearn.datasets import make_classification, make_regression

    from .. import SDPQuantizedClassifier, SDPQuantizedRegressor

    problems = {
        f"classifier, {k} classes": (SDPQuantizedClassifier, make_classification(
            n_samples=60, n_features=4, n_informative=3, n_redundant=0, n_classes=k,
            random_state=0))
        for k in (2, 3)
    }
    problems["regressor"] = (SDPQuantizedRegressor, make_regression(
        n_samples=60, n_features=4, noise=0.1, random_state=0))
    return {name: cls(random_state=0).fit(*data).solver_ for name, (cls, data) in problems.items()}


def fingerprint(suite, estimators=None):
    """The fingerprint of a run of ``suite`` with ``estimators`` (names; None: the suite's).

    Returns a dict: ``suite``, ``estimators`` (class name: the parameters a fit gets),
    ``solver_routes`` (the table's rows and size rules), ``reference_solver_``
    and ``hash`` (of the rest).
    """
    from ..convex import routes

    from ._estimators import DEFAULT_ESTIMATOR_NAMES

    names = estimators or SUITE_ESTIMATORS.get(suite, DEFAULT_ESTIMATOR_NAMES if suite == "uci" else None)
    params = {}
    for spec in _specs(suite):
        if names is None or spec.name in names:
            model = spec.build(0, "auto")
            params[type(model).__name__] = repr(sorted(model.get_params(deep=False).items()))
    rules = {key: value for key, value in sorted(vars(routes).items())
             if key.isupper() and isinstance(value, (int, float))}
    content = {
        "suite": suite,
        "estimators": params,
        "solver_routes": {"rows": [row.name for row in routes.ROUTES], "rules": rules},
        "reference_solver_": _reference_solvers(),
    }
    text = json.dumps(content, sort_keys=True)
    return {**content, "hash": hashlib.sha256(text.encode()).hexdigest()[:16]}


def skquad_revision():
    """``"<version> (commit <sha>[, modified])"``: the code a run used."""
    from .. import __version__

    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root,
                             capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "skquad"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"{__version__} (not a git checkout)"
    return f"{__version__} (commit {sha}{', skquad/ modified' if dirty else ''})"
