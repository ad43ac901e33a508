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


# One fresh interpreter walks a user's first steps, recording after each which
# heavy modules are loaded and which the step added (one interpreter: each start
# imports torch and scikit-learn, the most expensive part of these checks).
_FIRST_STEPS = """
import json, sys
report = {}
def step(name, code):
    before = set(sys.modules)
    exec(code, globals())
    report[name] = {
        "added": sorted(m for m in HEAVY if m in sys.modules and m not in before),
        "loaded": sorted(m for m in HEAVY if m in sys.modules),
        "skquad": sorted(m for m in sys.modules if m.split(".")[0] == "skquad"),
    }
step("import skquad", "import skquad")
step("sklearn.base", "import sklearn.base")
step("QuadraticLogisticRegression", "from skquad import QuadraticLogisticRegression")
step("SDPQuantizedClassifier", "from skquad import SDPQuantizedClassifier")
step("export and inspection", "import skquad.export, skquad.inspection")
step("fits on numpy", '''
import numpy as np
X = np.random.RandomState(0).normal(size=(40, 3)); y = (X[:, 0] > 0).astype(int)
clf = QuadraticLogisticRegression().fit(X, y); clf.predict(X); clf.predict_proba(X); clf.score(X, y)
model = skquad.QuadraticRegression().fit(X, X[:, 0] * X[:, 1]); model.predict(X); model.score(X, X[:, 0])
SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X, y).predict(X)
''')
step("CVXPY's solver list", "from skquad.convex import installed_solvers; installed_solvers()")
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def first_steps():
    code = f"HEAVY = {HEAVY!r}\n{_FIRST_STEPS}"
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(output.splitlines()[-1])


def test_import_skquad_imports_no_heavy_dependency(first_steps):
    assert first_steps["import skquad"]["added"] == []


def test_fitting_imports_no_array_api_package(first_steps):
    # The array API dispatch (skquad/_array_api.py) uses scikit-learn's vendored array-api-compat.
    assert not set(first_steps["fits on numpy"]["loaded"]) & {"array_api_strict", "array_api_compat"}


def test_quadratic_logistic_regression_imports_torch_but_not_cvxpy_or_matplotlib(first_steps):
    # scikit-learn itself imports pandas (sklearn.utils.fixes) and scipy when
    # installed, so only what skquad adds on top of sklearn.base is skquad's doing.
    assert first_steps["QuadraticLogisticRegression"]["added"] == ["torch"]


def test_sdp_imports_cvxpy_only_when_used(first_steps):
    # The default solver is the native one: CVXPY is the reference path only.
    assert "cvxpy" not in first_steps["SDPQuantizedClassifier"]["loaded"]
    assert "cvxpy" not in first_steps["fits on numpy"]["loaded"]
    # the check sees an import when one happens
    assert "cvxpy" in first_steps["CVXPY's solver list"]["added"]


def test_import_skquad_loads_only_the_package_and_its_version(first_steps):
    assert first_steps["import skquad"]["skquad"] == ["skquad", "skquad._version"]


def test_export_and_inspection_import_no_onnx_or_matplotlib(first_steps):
    loaded = set(first_steps["export and inspection"]["loaded"])
    assert not loaded & {"onnx", "skl2onnx", "onnxruntime", "matplotlib"}


def test_fitting_and_predicting_on_numpy_does_not_import_dask(first_steps):
    step = first_steps["fits on numpy"]
    assert not set(step["loaded"]) & {"dask", "distributed"}
    # the block machinery (skquad._dask) and each package's Dask fit (<package>._dask)
    assert not [name for name in step["skquad"] if name.rpartition(".")[2] == "_dask"]


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
