"""A results directory's fingerprint: what, besides data and machine, decides its numbers.

The parameters the suite builds its skquad estimators with, the SDP route table's size
rules and the ``solver_`` of default SDP fits on small fixed problems, hashed;
``tests/test_benchmarks_fingerprint.py`` fails for a committed directory whose
fingerprint no longer matches the code.
"""

import functools
import hashlib
import json
import re
import subprocess
from pathlib import Path

__all__ = ["FINGERPRINT_FILE", "fingerprint", "recorded_and_current", "skquad_revision"]

FINGERPRINT_FILE = "fingerprint.json"

# The skquad estimator classes that the suites taking no --estimators build (a suite
# not listed counts every default estimator), so that their results go stale only
# when one of these changes.
SUITE_ESTIMATORS = {
    "paper002": ("SDPQuantizedClassifier", "BackpropQuantizedClassifier"),
    "qlr": ("QuadraticLogisticRegression", "QuadraticRegression"),
    "sparse-q": ("QuadraticLogisticRegression", "QuadraticRegression", "QuadraticRegressionCV"),
    "speed-networks": ("QNNClassifier", "RPQNNClassifier", "QNNRegressor", "RPQNNRegressor"),
    "sdp-targets": ("SDPQuantizedClassifier", "SDPQuantizedClassifierCV",
                    "SDPQuantizedRegressor", "SDPQuantizedRegressorCV"),
}


@functools.cache  # the code does not change within a process
def _reference_solvers():
    from sklearn.datasets import make_classification, make_regression

    from .. import SDPQuantizedClassifier, SDPQuantizedRegressor

    data = {f"classifier, {k} classes": make_classification(
        n_samples=60, n_features=4, n_informative=3, n_redundant=0, n_classes=k, random_state=0)
        for k in (2, 3)}
    data["regressor"] = make_regression(n_samples=60, n_features=4, noise=0.1, random_state=0)
    return {name: (SDPQuantizedRegressor if name == "regressor" else SDPQuantizedClassifier)(
        random_state=0).fit(*xy).solver_ for name, xy in data.items()}


def fingerprint(suite, estimators=None):
    """The fingerprint of a run of ``suite`` with ``estimators`` (names; None: the suite's).

    A dict: ``suite``, ``estimators`` (class name: parameters), ``solver_routes``,
    ``reference_solver_`` and ``hash`` (of the rest).
    """
    from ..convex import routes
    from ._estimators import DEFAULT_ESTIMATOR_NAMES, default_regression_specs, default_specs, optional_specs

    specs = default_regression_specs() if suite == "regression" else default_specs() + optional_specs()
    if suite not in ("uci", "regression"):
        specs += default_regression_specs()
    names = estimators or (DEFAULT_ESTIMATOR_NAMES if suite == "uci" else None)
    classes = SUITE_ESTIMATORS.get(suite)
    models = [model for model in (spec.build(0, "auto") for spec in specs
                                  if spec.kind == "skquad" and (names is None or spec.name in names))
              if classes is None or type(model).__name__ in classes]
    content = {
        "suite": suite,
        "estimators": {type(m).__name__: repr(sorted(m.get_params(deep=False).items())) for m in models},
        "solver_routes": {"rows": [row.name for row in routes.ROUTES], "rules": {
            key: value for key, value in sorted(vars(routes).items())
            if key.isupper() and isinstance(value, (int, float))}},
        "reference_solver_": _reference_solvers(),
    }
    text = json.dumps(content, sort_keys=True)
    return {**content, "hash": hashlib.sha256(text.encode()).hexdigest()[:16]}


def recorded_and_current(directory):
    """A results directory's recorded fingerprint (None without one), the code's, and its command."""
    directory = Path(directory)
    command = re.search(r"^command: (.*)$", (directory / "machine.txt").read_text(), re.M)[1]
    if not (directory / FINGERPRINT_FILE).is_file():
        return None, None, command
    recorded = json.loads((directory / FINGERPRINT_FILE).read_text())
    named = re.search(r"--estimators ((?:[^-\s]\S* ?)+)", command)
    return recorded, fingerprint(recorded["suite"], named and named[1].split()), command


def skquad_revision():
    """``"<version> (commit <sha>[, skquad/ modified])"``: the code a run used."""
    from .. import __version__

    def git(*args):
        return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parents[2],
                              capture_output=True, text=True, timeout=10, check=True).stdout.strip()

    try:
        sha, dirty = git("rev-parse", "--short=12", "HEAD"), git("status", "--porcelain", "--", "skquad")
    except (OSError, subprocess.SubprocessError):
        return f"{__version__} (not a git checkout)"
    return f"{__version__} (commit {sha}{', skquad/ modified' if dirty else ''})"
