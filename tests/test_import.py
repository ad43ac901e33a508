"""``import skquad`` is light: the estimators and their heavy dependencies load on first use.

Each import is checked in a fresh interpreter, since this one has imported
everything already. What ``import skquad`` loads is counted (modules), not
timed: a wall-clock limit depends on the machine and cannot tell a lazy import
from an eager one on a fast disk.
"""

import json
import subprocess
import sys

import pytest

import skquad

HEAVY = (
    "torch", "cvxpy", "pandas", "matplotlib", "sklearn", "scipy", "dask", "distributed",
    "onnx", "skl2onnx", "onnxruntime", "skops", "array_api_strict", "array_api_compat",
)
# Every public package and the names its __all__ promises.
PUBLIC_PACKAGES = (
    "skquad", "skquad.linear_model", "skquad.neural_network", "skquad.quantized", "skquad.nn",
    "skquad.convex", "skquad.datasets", "skquad.inspection", "skquad.export", "skquad.benchmarks",
)


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


def test_fitting_imports_no_array_api_package():
    # The array API dispatch (skquad/_array_api.py) uses scikit-learn's vendored array-api-compat.
    added = _imported_after(
        "import numpy as np\nfrom skquad import QuadraticRegression\n"
        "QuadraticRegression().fit(np.eye(4), np.arange(4.0)).predict(np.eye(4))"
    )
    assert not added & {"array_api_strict", "array_api_compat"}


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


def test_import_skquad_loads_only_the_package_and_its_version():
    code = (
        "import json, sys\nimport skquad\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'skquad')))\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(output.splitlines()[-1]) == ["skquad", "skquad._version"]


def test_the_heavy_import_check_sees_an_eager_import():
    # the checker itself: a statement that does import a heavy module is caught
    assert _imported_after("import skquad; import scipy.sparse") == {"scipy"}


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_public_name_resolves(package):
    import importlib

    module = importlib.import_module(package)
    names = module.__all__
    assert len(names) == len(set(names)), f"{package}.__all__ lists a name twice"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"


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
