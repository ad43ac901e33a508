"""``import skquad`` is fast: the estimators and their heavy dependencies load on first use.

Each measurement runs in a fresh interpreter, since this one has imported
everything already.
"""

import json
import subprocess
import sys

import pytest

import skquad

HEAVY = ("torch", "cvxpy", "pandas", "matplotlib", "sklearn", "scipy", "dask")


def _imported_after(statement, *, before=""):
    """Heavy top-level modules that ``statement`` imports, beyond those of ``before``."""
    code = (
        "import json, sys\n"
        f"{before}\n"
        "already = set(sys.modules)\n"
        f"{statement}\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules and m not in already)))\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(output.splitlines()[-1]))


def test_import_skquad_imports_no_heavy_dependency():
    assert _imported_after("import skquad") == set()


def test_quadratic_logistic_regression_imports_torch_but_not_cvxpy_or_matplotlib():
    # scikit-learn itself imports pandas (sklearn.utils.fixes) and scipy when
    # installed, so only what skquad adds on top of sklearn.base is skquad's doing.
    added = _imported_after(
        "from skquad import QuadraticLogisticRegression", before="import sklearn.base"
    )
    assert added == {"torch"}


def test_sdp_imports_cvxpy_only_when_used():
    # The default solver is the native one: CVXPY is the reference path only.
    assert "cvxpy" not in _imported_after("from skquad import SDPQuantizedClassifier")
    assert "cvxpy" in _imported_after(
        "from skquad.convex import solve_sdp, installed_solvers; installed_solvers()"
    )


def test_import_skquad_takes_well_under_a_second():
    code = (
        "import time\nt = time.perf_counter()\nimport skquad\n"
        "print(time.perf_counter() - t)\n"
    )
    times = sorted(
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    )
    assert times[2] < 1.0, times


@pytest.mark.parametrize("name", skquad.__all__)
def test_lazy_names_resolve_and_are_listed(name):
    from sklearn.base import BaseEstimator

    estimator = getattr(skquad, name)
    assert issubclass(estimator, BaseEstimator)
    assert estimator.__name__ == name
    assert name in dir(skquad)
    namespace = {}
    exec(f"from skquad import {name}", namespace)  # noqa: S102 - the statement under test
    assert namespace[name] is estimator


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'NotAnEstimator'"):
        skquad.NotAnEstimator  # noqa: B018


def test_version_comes_from_one_place():
    from skquad._version import __version__

    assert skquad.__version__ == __version__
