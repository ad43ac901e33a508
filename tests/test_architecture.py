"""The rooms of skquad and what each may import (doc/user_guide/architecture.rst).

Every module's imports are read with :mod:`ast` (module-level and
function-level alike, relative imports resolved) and checked against the
table below, the one that the architecture page prints. A new module must
belong to a room; a new arrow between rooms is a decision to make here, in
the table, and on the page.
"""

import ast
import re
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "skquad"

# Module prefix -> room (the longest matching prefix wins).
ROOMS = {
    "skquad": "package",  # skquad/__init__.py only (not a prefix): re-exports the estimators
    "skquad._version": "foundation",
    # the foundation: every room may import it; it imports no other room (ALLOWED)
    "skquad._foundation": "foundation",
    "skquad._training": "training",
    "skquad._base": "base",
    "skquad._dask_dispatch": "base",  # Dask collections at predict: the base's methods, blockwise
    "skquad._array_api": "base",  # scikit-learn's array API dispatch around the base's methods
    # Dask collections: the row blocks, their reductions and block-wise predictions,
    # for any estimator (each package's data-parallel fit is its own <package>/_dask.py)
    "skquad._dask": "base",
    "skquad.nn": "nn",
    "skquad.convex": "convex",
    "skquad.linear_model": "estimators",
    "skquad.neural_network": "estimators",
    "skquad.quantized": "estimators",
    "skquad.datasets": "datasets",
    "skquad.inspection": "inspection",
    "skquad.export": "export",
    "skquad.persistence": "export",  # what leaves the process: the types a saved file may hold
    "skquad.benchmarks": "benchmarks",
    "skquad.benchmarks.research": "research",
}

# Room -> the rooms it may import. "package" as a target is ``from skquad
# import X``: the estimators' public names.
ALLOWED = {
    "foundation": {"foundation"},
    "training": {"foundation", "training"},
    "nn": {"foundation", "nn"},
    "convex": {"foundation", "convex"},
    "base": {"foundation", "training", "base"},
    "estimators": {"foundation", "training", "base", "nn", "convex", "estimators"},
    "package": {"foundation", "estimators"},
    "datasets": {"foundation", "datasets"},
    "inspection": {"foundation", "nn", "convex", "inspection"},
    "export": {"foundation", "nn", "convex", "estimators", "package", "export"},
    "benchmarks": {
        "foundation", "training", "nn", "convex", "estimators", "package", "datasets",
        "inspection", "benchmarks",
    },
    "research": {
        "nn", "convex", "estimators", "package", "datasets", "inspection", "export",
        "benchmarks", "research",
    },
}

# Rooms whose imports from other rooms must be public names (no private
# module, no underscore name): (importing room, imported room).
PUBLIC_ONLY = {
    ("export", "estimators"),
    ("export", "package"),
    *(("research", room) for room in ALLOWED["research"] - {"research", "benchmarks"}),
}

# The research suites may use the benchmark command's report helpers (the
# suite contract's table and figure writers), nothing else of the command.
RESEARCH_REPORT_HELPERS = "skquad.benchmarks._report"

def module_name(path):
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(name):
    matches = [
        prefix for prefix in ROOMS
        if name == prefix or (prefix != "skquad" and name.startswith(prefix + "."))
    ]
    return ROOMS[max(matches, key=len)] if matches else None


def _is_module(name):
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    return (PACKAGE_ROOT / relative).with_suffix(".py").is_file() or (
        PACKAGE_ROOT / relative / "__init__.py"
    ).is_file()


def _static_all(name):
    """The module's ``__all__`` when it is a literal list, else None."""
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    path = (PACKAGE_ROOT / relative).with_suffix(".py")
    if not path.is_file():
        path = PACKAGE_ROOT / relative / "__init__.py"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:
                return None
    return None


def skquad_imports(source, name, is_package):
    """``(imported module, imported name or None, enclosing function or None)`` of every skquad import."""
    package = name if is_package else name.rpartition(".")[0]
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Import):
                found.extend((alias.name, None, function) for alias in child.names if alias.name.split(".")[0] == "skquad")
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target.split(".")[0] != "skquad":
                    continue
                for alias in child.names:
                    submodule = f"{target}.{alias.name}"
                    if _is_module(submodule):
                        found.append((submodule, None, function))
                    else:
                        found.append((target, alias.name, function))
            visit(child, inner)

    visit(ast.parse(source), None)
    return found


def _is_public(target, imported_name):
    if any(part.startswith("_") for part in target.split(".")[1:]):
        return False
    if imported_name is None:
        return True
    if imported_name.startswith("_"):
        return False
    names = _static_all(target)
    return names is None or imported_name in names


def violations(name, source, is_package=False):
    """The imports of module ``name`` (its ``source``) that break the table, as messages."""
    room = room_of(name)
    if room is None:
        return [f"{name} belongs to no room: add it to ROOMS (and to architecture.rst)"]
    problems = []
    for target, imported_name, function in skquad_imports(source, name, is_package):
        target_room = room_of(target)
        what = target + (f".{imported_name}" if imported_name else "")
        if not _is_module(target):
            problems.append(f"{name} imports {what}: {target} is no module of skquad")
            continue
        if target_room not in ALLOWED[room]:
            problems.append(f"{name} ({room}) imports {what} ({target_room})")
        elif room == "research" and target_room == "benchmarks" and target != RESEARCH_REPORT_HELPERS:
            problems.append(f"{name} (research) imports {what}: only the report helpers of the command")
        elif (room, target_room) in PUBLIC_ONLY and not _is_public(target, imported_name):
            problems.append(f"{name} ({room}) imports the private {what}")
    return problems


def _modules():
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        yield module_name(path), path


@pytest.mark.parametrize("name, path", list(_modules()), ids=lambda v: v if isinstance(v, str) else "")
def test_module_imports_follow_the_room_table(name, path):
    assert violations(name, path.read_text(), path.name == "__init__.py") == []


@pytest.mark.parametrize(
    "name, source, expected",
    [
        # an upward arrow: nn reaching for an estimator
        ("skquad.nn.layers", "from ..quantized import SDPQuantizedClassifier\n", "(estimators)"),
        # inspection and export leaning on each other, even inside a function
        ("skquad.inspection._neurons", "def f():\n    from ..export._torch import to_torch\n", "(export)"),
        ("skquad.export._onnx", "from skquad.inspection import quadratic_neurons\n", "(inspection)"),
        # the base importing export, even inside a function (to_torch is late-bound)
        ("skquad._base", "def to_torch(self):\n    from .export import to_torch\n", "(export)"),
        # the foundation reaching up
        ("skquad._foundation._atomic", "from .._base import BaseQuadraticEstimator\n", "(base)"),
        ("skquad._foundation._runtime", "from .._training import Trainer\n", "(training)"),
        # research on private code
        ("skquad.benchmarks.research._paper002", "from ..._training import Trainer\n", "(training)"),
        ("skquad.benchmarks.research._paper002", "from skquad.quantized._backprop import x\n", "private"),
        ("skquad.benchmarks.research._paper002", "from skquad.convex import _private\n", "private"),
        ("skquad.benchmarks.research._qlr", "from .._protocol import run_protocol\n", "report helpers"),
        # export on an estimator's private module
        ("skquad.export._torch", "from ..quantized._common import _standardization\n", "private"),
        # a module outside every room, and an import of no module (a relative import
        # that a move left pointing nowhere)
        ("skquad.newroom.module", "", "belongs to no room"),
        ("skquad.linear_model._dask", "def f():\n    from .linear_model import _regression\n", "no module"),
    ],
)
def test_the_checker_finds_forbidden_imports(name, source, expected):
    problems = violations(name, source)
    assert problems and expected in problems[0]


def test_the_checker_accepts_the_allowed_forms():
    assert violations("skquad._base", "def to_torch(self):\n    from ._foundation._late_bound import to_torch\n") == []
    assert violations("skquad.benchmarks.research._paper002", "from .._report import markdown_table\n") == []
    assert violations("skquad.benchmarks.research._layers", "from skquad.nn import QuadraticLayer\n") == []


def unit_of(name):
    """The package (``skquad.linear_model``) or root module (``skquad._base``) a module is in."""
    return ".".join(name.split(".")[:2])


def import_graph(modules):
    """``{(unit, unit): [(module, imported module, function), ...]}`` for every import between
    two units of ``modules`` (``(name, source, is_package)`` triples), module- and function-level."""
    arrows = {}
    for name, source, is_package in modules:
        for target, _, function in skquad_imports(source, name, is_package):
            if unit_of(name) != unit_of(target):
                arrows.setdefault((unit_of(name), unit_of(target)), []).append((name, target, function))
    return arrows


def find_cycle(edges):
    """A list of nodes ``[a, b, ..., a]`` closing a circle in the directed ``edges``, or None."""
    following = {}
    for source, target in edges:
        following.setdefault(source, set()).add(target)
    state = {}  # node -> "open" while on the path, "done" once every path from it is known

    def visit(node, path):
        state[node] = "open"
        for target in sorted(following.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [node, target] if target in path else [node, target]
            if target not in state and (cycle := visit(target, path + [node])):
                return cycle
        state[node] = "done"
        return None

    for node in sorted(following):
        if node not in state and (cycle := visit(node, [])):
            return cycle
    return None


def _package_modules():
    return [(name, path.read_text(), path.name == "__init__.py") for name, path in _modules()]


def test_no_circle_between_packages():
    arrows = import_graph(_package_modules())
    cycle = find_cycle(arrows)
    assert cycle is None, [arrows[pair] for pair in zip(cycle, cycle[1:])]


def test_no_circle_between_rooms_and_no_import_runs_upward():
    # Every import follows ALLOWED (test_module_imports_follow_the_room_table), so
    # the rooms' order is ALLOWED's: it must be acyclic, the foundation at the bottom.
    allowed = {(room, target) for room, targets in ALLOWED.items() for target in targets if room != target}
    assert find_cycle(allowed) is None
    assert ALLOWED["foundation"] == {"foundation"}
    rooms = {(room_of(a), room_of(b)) for a, b in import_graph(_package_modules()) if room_of(a) != room_of(b)}
    assert find_cycle(rooms) is None


def test_the_circle_check_finds_a_planted_circle():
    modules = [
        ("skquad._base", "from ._dask_dispatch import dask_dispatch\n", False),
        ("skquad._dask_dispatch", "def dispatch():\n    from . import _dask\n", False),
        ("skquad._dask", "from .linear_model._qlr_problem import Route\n", False),
        ("skquad.linear_model._logistic", "from .._base import BaseQuadraticClassifier\n", False),
    ]
    cycle = find_cycle(import_graph(modules))
    assert cycle is not None and cycle[0] == cycle[-1] and len(cycle) == 5
    assert find_cycle(import_graph(modules[:-1])) is None
    assert find_cycle({("a", "b"), ("b", "c"), ("c", "a")}) in (["a", "b", "c", "a"],)


def test_the_architecture_page_prints_this_table():
    # doc/user_guide/architecture.rst, section "What each room may import":
    # the same arrows as ALLOWED (the foundation and a room's own modules aside).
    page = (PACKAGE_ROOT.parent / "doc" / "user_guide" / "architecture.rst").read_text()
    section = page.split(".. _architecture-imports:")[1].split("\nThe path of one fit")[0]
    rows = re.findall(r"^   \* - (\w+)\n     - (.+?)(?=^   \* - |\n\n|\Z)", section, flags=re.M | re.S)
    words = "|".join(sorted(set(ALLOWED) - {"package"}))
    printed = {room: set(re.findall(rf"\b({words})\b", text)) for room, text in rows if room != "room"}
    expected = {
        room: {"estimators" if target == "package" else target for target in targets} - {room, "foundation"}
        for room, targets in ALLOWED.items()
        if room != "package"
    }
    assert printed == expected


# ---------------------------------------------------------------------------
# One test module per source module, named after it.
#
# ``skquad/a/_b.py`` is tested in ``tests/test_a_b.py`` (leading underscores
# dropped, the path joined with "_"), or in ``tests/test_b.py`` when no other
# module's full name is ``b`` (``quantized/_sdp_cv.py`` -> ``test_sdp_cv.py``,
# but a ``skquad/_pipeline.py`` would own ``test_pipeline.py``, not
# ``inspection/_pipeline.py``). ``__init__`` and ``__main__`` modules are the
# packages' doors: they are tested through the modules behind them.
#
# The exceptions: module -> (the test module that tests it, why not its own).
# None now; adding one is a decision to justify here, as the room table's are.
TESTED_ELSEWHERE = {}


def _test_names(name):
    """``(full, short)`` test module stems of module ``name`` (``skquad.a._b``)."""
    parts = [part.lstrip("_") for part in name.split(".")[1:]]
    return "test_" + "_".join(parts), "test_" + parts[-1]


def naming_problems(modules, test_stems, tested_elsewhere):
    """Modules with no test module named after them, and stale or broken exceptions."""
    full_names = {_test_names(name)[0]: name for name in modules}
    problems = []
    for name in modules:
        full, short = _test_names(name)
        named = full in test_stems or (short in test_stems and full_names.get(short, name) == name)
        if name in tested_elsewhere:
            test_module, _ = tested_elsewhere[name]
            if named:
                problems.append(f"{name} has its own test module now: drop it from TESTED_ELSEWHERE")
            elif test_module.removesuffix(".py") not in test_stems:
                problems.append(f"{name}: TESTED_ELSEWHERE names {test_module}, which does not exist")
        elif not named:
            problems.append(f"{name} has no test module: write tests/{full}.py")
    problems.extend(
        f"TESTED_ELSEWHERE names {name}, which is not a module" for name in tested_elsewhere if name not in modules
    )
    return problems


def _source_modules():
    return {
        name for name, path in _modules()
        if path.stem not in ("__init__", "__main__")
    }


def test_every_module_has_a_test_module_named_after_it():
    tests = {path.stem for path in Path(__file__).parent.glob("test_*.py")}
    assert naming_problems(_source_modules(), tests, TESTED_ELSEWHERE) == []


@pytest.mark.parametrize(
    "modules, tests, elsewhere, expected",
    [
        # a new module without a test
        ({"skquad.convex.newsolver"}, {"test_convex"}, {}, "write tests/test_convex_newsolver.py"),
        # the short form belongs to the module whose full name it is
        ({"skquad._pipeline", "skquad.inspection._pipeline"}, {"test_pipeline"}, {},
         "skquad.inspection._pipeline has no test module"),
        # an exception that is no longer needed, or points nowhere
        ({"skquad.nn.losses"}, {"test_nn_losses", "test_nn_fused"},
         {"skquad.nn.losses": ("test_nn_fused.py", "")}, "has its own test module now"),
        ({"skquad.nn.losses"}, set(), {"skquad.nn.losses": ("test_nn_fused.py", "")}, "does not exist"),
        ({"skquad.nn.layers"}, {"test_nn_layers"}, {"skquad.nn.gone": ("test_nn_layers.py", "")},
         "not a module"),
    ],
)
def test_the_naming_check_finds_missing_tests(modules, tests, elsewhere, expected):
    problems = naming_problems(modules, tests, elsewhere)
    assert len(problems) == 1 and expected in problems[0]


def test_the_naming_check_accepts_both_forms():
    assert naming_problems(
        {"skquad._training._config", "skquad.quantized._sdp_cv", "skquad._rows"},
        {"test_training_config", "test_sdp_cv", "test_rows"},
        {},
    ) == []


def private_names_across_convex_modules(name, source):
    """``from .other import _private`` between two modules of ``skquad.convex``: each
    solver's helpers stay its own; what several share is a public name of one module
    (the barrier toolkit, the table)."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        local = node.level == 1 and node.module is not None
        absolute = node.level == 0 and (node.module or "").startswith("skquad.convex.")
        if not (local or absolute):
            continue
        problems += [
            f"{name} imports {alias.name} from {node.module}"
            for alias in node.names if alias.name.startswith("_")
        ]
    return problems


CONVEX_MODULES = sorted((PACKAGE_ROOT / "convex").glob("*.py"))


@pytest.mark.parametrize("path", CONVEX_MODULES, ids=lambda path: path.stem)
def test_no_private_name_is_imported_between_convex_modules(path):
    assert private_names_across_convex_modules(path.stem, path.read_text()) == []


def test_the_convex_check_finds_a_private_import():
    assert private_names_across_convex_modules("squared_dual", "from .hinge_dual import _lmi_terms\n")
    assert private_names_across_convex_modules(
        "routes", "def f():\n    from skquad.convex.face_dual import _backtrack\n"
    )
    assert not private_names_across_convex_modules("routes", "from .barrier import backtrack\n")
    assert not private_names_across_convex_modules("routes", "from .._foundation._memory import available_memory\n")


def package_of(name):
    """The package a module belongs to (``skquad.convex``, ``skquad._foundation``), or
    ``skquad`` for the root modules."""
    head = ".".join(name.split(".")[:2])
    return head if (PACKAGE_ROOT.parent / Path(*head.split("."))).is_dir() else "skquad"


def private_names_across_packages(name, source, is_package=False):
    """``(module, imported module, name)`` of every private name (``_x``, not a dunder)
    that module ``name`` imports from another package: what packages share is public."""
    return [
        (name, target, imported) for target, imported, _ in skquad_imports(source, name, is_package)
        if imported is not None and imported.startswith("_") and not imported.startswith("__")
        and package_of(target) != package_of(name)
    ]


# Cross-package private imports still to mend: this list may only shrink (the test
# fails when one of them is gone, so that it is struck from here).
PRIVATE_ACROSS_PACKAGES = set()


def test_no_private_name_is_imported_across_packages():
    found = {
        row for name, source, is_package in _package_modules()
        for row in private_names_across_packages(name, source, is_package)
    }
    assert found - PRIVATE_ACROSS_PACKAGES == set(), "import a public name instead"
    assert PRIVATE_ACROSS_PACKAGES - found == set(), "mended: strike it from the list"


@pytest.mark.parametrize("name, source, flagged", [
    ("skquad.linear_model._sparse_q", "from ..nn.quadratic_ridge import _pairs_of\n", True),
    ("skquad.convex.relaxation", "def f():\n    from .._foundation._threads import _pool\n", True),
    ("skquad._base", "from .convex.routes import _table\n", True),
    ("skquad.quantized._sdp", "from ._common import _standardization\n", False),
    ("skquad.convex.hinge_dual", "from .._foundation._reporting import progress_line\n", False),
    ("skquad._dask_dispatch", "from . import _dask\n", False),
    ("skquad.convex.problem", "from .._version import __version__\n", False),
])
def test_the_package_check_finds_a_private_import(name, source, flagged):
    assert bool(private_names_across_packages(name, source)) is flagged


# ---------------------------------------------------------------------------
# Comments and docstrings give the rule and its reason; timings taken under
# load, machine descriptions and issue histories belong in the CHANGELOG.
HISTORY_PHRASES = re.compile(r"under load|\b(?:2|two)-core\b|\bissue \d+\s*:|earlier version", re.I)


def history_lines(source):
    """``(line number, line)`` of each line of ``source`` that carries a history phrase."""
    return [(number, line.strip()) for number, line in enumerate(source.splitlines(), 1)
            if HISTORY_PHRASES.search(line)]


@pytest.mark.parametrize(
    "path",
    [path for path in sorted(PACKAGE_ROOT.rglob("*.py")) if "research" not in path.relative_to(PACKAGE_ROOT).parts],
    ids=lambda path: str(path.relative_to(PACKAGE_ROOT)),
)
def test_no_history_in_comments_and_docstrings(path):
    assert history_lines(path.read_text()) == []


@pytest.mark.parametrize("line", [
    "# took 3 s under load", "# on the 2-core machine", "# two-core runs", "# Issue 19: NaN",
    "    an earlier version sorted the rows",
])
def test_the_history_check_finds_a_phrase(line):
    assert history_lines(f"x = 1\n{line}\n") == [(2, line.strip())]


# ---------------------------------------------------------------------------
# Tests filter warnings by category: a blanket "ignore" hides every warning,
# the ones a test should see included.
def blanket_warning_filters(source):
    """Line numbers of ``simplefilter("ignore")`` / ``filterwarnings("ignore")`` calls
    with no category (nor message), and of ``"ignore"`` marks with an empty one."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if name not in ("simplefilter", "filterwarnings") or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        action, *rest = first.value.split(":")
        narrowed = len(node.args) > 1 or any(k.arg in ("category", "message", "module") for k in node.keywords)
        if action == "ignore" and not narrowed and not any(part.strip() for part in rest):
            lines.append(node.lineno)
    return lines


TEST_MODULES = sorted((PACKAGE_ROOT.parent / "tests").glob("*.py"))


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda path: path.name)
def test_no_blanket_warning_filter_in_the_tests(path):
    assert blanket_warning_filters(path.read_text()) == []


def test_the_warning_filter_check_finds_a_blanket_filter():
    assert blanket_warning_filters('warnings.simplefilter("ignore")\n') == [1]
    assert blanket_warning_filters('@pytest.mark.filterwarnings("ignore")\ndef f(): pass\n') == [1]
    assert blanket_warning_filters('warnings.filterwarnings("ignore", category=UserWarning)\n') == []
    assert blanket_warning_filters('warnings.simplefilter("ignore", ConvergenceWarning)\n') == []
    assert blanket_warning_filters('@pytest.mark.filterwarnings("ignore::UserWarning")\ndef f(): pass\n') == []


# Threads are decided once (skquad/_foundation/_runtime.py's thread_count, on _threads.py's
# rule); torch's and the BLAS libraries' counts are set only through _threads.py's blocks.
# The benchmark command and its suites pin the user's --threads, no rule of a fit.
THREAD_RULE = {"choose_thread_count", "PARALLEL_FLOPS", "PARALLEL_CALL_FLOPS", "sched_getaffinity"}  # and the cores a pool may use
THREAD_SETTERS = {"set_num_threads", "threadpool_limits", "ThreadpoolController"}
THREAD_MODULES = {"skquad._foundation._threads": THREAD_RULE | THREAD_SETTERS,
                  "skquad._foundation._runtime": THREAD_RULE}


def thread_decisions(name, source):
    """The thread-rule and thread-setting names module ``name`` uses outside its allowance."""
    names = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    names |= {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)}
    names |= {alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
              for alias in node.names}
    return sorted(names & (THREAD_RULE | THREAD_SETTERS) - THREAD_MODULES.get(name, set()))


@pytest.mark.parametrize(
    "name,path", [pytest.param(n, p, id=n) for n, p in _modules() if not n.startswith("skquad.benchmarks")]
)
def test_threads_are_decided_by_the_runtime_policy_only(name, path):
    assert thread_decisions(name, path.read_text()) == []


def test_the_thread_check_finds_a_second_rule():
    assert thread_decisions("skquad.linear_model._dask", "from .._foundation._threads import choose_thread_count\n")
    assert thread_decisions("skquad.convex.blocks", "import torch\ntorch.set_num_threads(1)\n")
    assert thread_decisions("skquad.convex.blocks", "import os\ncores = len(os.sched_getaffinity(0))\n")
    assert not thread_decisions("skquad._foundation._runtime", "from ._threads import choose_thread_count\n")
