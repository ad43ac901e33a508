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
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

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
    "skquad.nn.quadratic_dual",
    "skquad.convex",
    "skquad.quantized",
    "skquad.inspection",
    "skquad.export",
    "skquad.persistence",
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


# -- The user guide's examples ---------------------------------------------------
# A page that states a behaviour (a default, a solver, a parameter's rule) shows it
# with a ``>>>`` example, and the example runs here: when the code changes, the
# page fails instead of falling silently behind.
DOC_DIR = API_REFERENCE.parent
PAGES_STATING_BEHAVIOUR = [
    "user_guide/devices.rst",
    "user_guide/explaining.rst",
    "user_guide/inspection.rst",
    "user_guide/larger_than_memory.rst",
    "user_guide/quadratic_logistic_regression.rst",
    "user_guide/quadratic_networks.rst",
    "user_guide/quantized_networks.rst",
    "user_guide/regression.rst",
    "user_guide/relinear.rst",
    "user_guide/reproducibility.rst",
    "user_guide/scaling_out.rst",
]


def _pages_with_examples():
    return sorted(str(page.relative_to(DOC_DIR)) for page in DOC_DIR.rglob("*.rst")
                  if "generated" not in page.parts and ">>> " in page.read_text(encoding="utf-8"))


@pytest.mark.skipif(not DOC_DIR.exists(), reason="no doc/ folder beside the tests")
def test_pages_stating_behaviour_have_examples():
    missing = sorted(set(PAGES_STATING_BEHAVIOUR) - set(_pages_with_examples()))
    assert not missing, f"pages without a >>> example pinning what they state: {missing}"


@pytest.mark.skipif(not DOC_DIR.exists(), reason="no doc/ folder beside the tests")
@pytest.mark.parametrize("page", _pages_with_examples() if DOC_DIR.exists() else [])
def test_user_guide_examples_run(page):
    path = DOC_DIR / page
    parser = doctest.DocTestParser()
    test = parser.get_doctest(path.read_text(encoding="utf-8"), {}, page, str(path), 0)
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    with warnings.catch_warnings():
        # The examples fit tiny models; what they show is the value, not a
        # ConvergenceWarning about a model nobody will use.
        warnings.simplefilter("ignore", ConvergenceWarning)
        with np.printoptions(legacy=False, precision=8, suppress=False):
            runner.run(test)
    summary = runner.summarize(verbose=False)
    assert summary.failed == 0, (
        f"{summary.failed} of {summary.attempted} examples failed in doc/{page}; "
        f"run `python -m doctest -v doc/{page}` to see them."
    )


def test_fitted_properties_are_in_the_attributes_section():
    """doc/conf.py hides properties named like fitted attributes (``coefs_``): the
    class's numpydoc Attributes section must describe each, or it is undocumented."""
    undocumented = []
    for module_name in DOCUMENTED_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            cls = getattr(module, name)
            if not inspect.isclass(cls):
                continue
            doc = inspect.getdoc(cls) or ""
            attributes = doc.split("Attributes\n----------\n", 1)[-1] if "Attributes\n---" in doc else ""
            for member, value in inspect.getmembers(cls):
                if (isinstance(value, property) and member.endswith("_")
                        and not member.startswith("_")
                        and not re.search(rf"^{re.escape(member)}\b", attributes, re.M)):
                    undocumented.append(f"{module_name}.{name}.{member}")
    assert not undocumented, f"fitted properties missing from the Attributes section: {undocumented}"


@pytest.mark.skipif(not DOC_DIR.exists(), reason="no doc/ folder beside the tests")
def test_scaling_out_states_the_thread_rule_of_the_code():
    """scaling_out.rst gives n_threads="auto"'s threshold; the runtime's rule must match."""
    from skquad._foundation._threads import PARALLEL_FLOPS, choose_thread_count

    text = (DOC_DIR / "user_guide" / "scaling_out.rst").read_text(encoding="utf-8")
    match = re.search(r"about :math:`(\d+) \\times 10\^(\d+)`\s+floating-point operations", text)
    assert match, "scaling_out.rst no longer states the flops threshold of n_threads='auto'"
    stated = float(match.group(1)) * 10.0 ** int(match.group(2))
    assert stated == PARALLEL_FLOPS
    assert choose_thread_count(0.5 * stated, available=4) == 1
    assert choose_thread_count(2 * stated, available=4) == 4

