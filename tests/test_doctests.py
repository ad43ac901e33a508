"""The Examples sections of skquad's docstrings run as doctests.

Every public module (no underscore in its dotted name) is collected, plus every
module that defines a name a public module exports in its ``__all__``; a failing example in
any of them fails the suite. A second test makes sure every estimator
(``skquad.__all__``) and the dataset loaders and generators have an Examples
section at all, so that "it has no examples" cannot pass for "its
examples work".
"""

import doctest
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import skquad

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public_module_names():
    names = {"skquad"}
    for info in pkgutil.walk_packages(skquad.__path__, prefix="skquad."):
        parts = info.name.split(".")
        if any(part.startswith("_") for part in parts):
            continue
        names.add(info.name)
    # Public names are often defined in private modules (skquad.datasets._uci)
    # and re-exported: the doctest finder only looks at objects defined in the
    # module it is given, so add the defining modules too.
    for public in sorted(names):
        module = importlib.import_module(public)
        for name in getattr(module, "__all__", []):
            defined_in = getattr(getattr(module, name), "__module__", None)
            if defined_in and defined_in.startswith("skquad"):
                names.add(defined_in)
    return sorted(names)


MODULES = _public_module_names()


# The estimators and the dataset loaders and generators: what a user calls first,
# so each must show how in an Examples section.
REQUIRED_EXAMPLES = ["skquad." + name for name in skquad.__all__] + [
    "skquad.datasets.load_uci",
    "skquad.datasets.make_uci_preprocessor",
    "skquad.datasets.make_xor",
    "skquad.datasets.make_nonlinear_clusters",
    "skquad.datasets.make_planted_quantized",
    "skquad.benchmarks.run_benchmark",
]


def _exported_objects():
    """Every required object; a module that fails to import or lacks the name fails here."""
    objects = {}
    for qualified_name in REQUIRED_EXAMPLES:
        module_name, _, name = qualified_name.rpartition(".")
        objects[qualified_name] = getattr(importlib.import_module(module_name), name)
    return objects


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    # Examples print numbers; fix numpy's print options so that output written
    # for one numpy version reads the same on the next.
    with np.printoptions(legacy=False, precision=8, suppress=False):
        for test in finder.find(module, module_name):
            runner.run(test)
    summary = runner.summarize(verbose=False)
    assert summary.failed == 0, (
        f"{summary.failed} of {summary.attempted} doctest examples failed in "
        f"{module_name}; run `python -m doctest -v` on it to see them."
    )


@pytest.mark.parametrize("qualified_name", sorted(_exported_objects()))
def test_public_objects_have_examples(qualified_name):
    obj = _exported_objects()[qualified_name]
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        pytest.skip("not a class or function")
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------" in doc, f"{qualified_name} has no Examples section"
    assert ">>> " in doc, f"{qualified_name}'s Examples section has no example"


# The modules whose ``__all__`` the API reference (doc/api/*.rst) documents.
API_REFERENCE = Path(__file__).resolve().parents[1] / "doc" / "api"
DOCUMENTED_MODULES = [
    "skquad",
    "skquad.datasets",
    "skquad.benchmarks",
    "skquad.nn",
    "skquad.nn.backward",
    "skquad.nn.quadratic_form",
    "skquad.convex",
    "skquad.quantized",
    "skquad.inspection",
    "skquad.export",
]


def _documented_objects(text):
    """Objects named in api.rst's autosummary lists and autodata directives."""
    documented = []
    module = "skquad"
    in_autosummary = False
    for line in text.splitlines():
        stripped = line.strip()
        if match := re.match(r"\.\. (?:current)?module:: (\S+)", stripped):
            module, in_autosummary = match.group(1), False
        elif stripped.startswith(".. autosummary::"):
            in_autosummary = True
        elif match := re.match(r"\.\. auto(?:data|class|function):: (\S+)", stripped):
            documented.append(f"{module}.{match.group(1)}")
            in_autosummary = False
        elif in_autosummary and line.startswith("   ") and stripped and not stripped.startswith(":"):
            documented.append(f"{module}.{stripped}")
        elif stripped and not line.startswith(" "):
            in_autosummary = False
    objects = {}
    for qualified_name in documented:
        module_name, _, name = qualified_name.rpartition(".")
        objects[qualified_name] = getattr(importlib.import_module(module_name), name)
    return objects


@pytest.mark.skipif(not API_REFERENCE.exists(), reason="no doc/ folder beside the tests")
def test_api_reference_lists_every_public_name():
    pages = sorted(API_REFERENCE.glob("*.rst"))
    documented = _documented_objects("\n".join(page.read_text() for page in pages))
    documented_ids = {id(obj) for obj in documented.values()}
    missing = []
    for module_name in DOCUMENTED_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            if id(getattr(module, name)) not in documented_ids:
                missing.append(f"{module_name}.{name}")
    assert not missing, (
        f"public names missing from doc/api/: {missing}; add each to the "
        "autosummary list of its section (see the existing entries)"
    )
