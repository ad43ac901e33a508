"""Sphinx configuration of the skquad documentation.

Build it from the repository root with::

    pip install -e ".[docs]"
    sphinx-build -W -b html doc doc/_build/html

The gallery runs every script of ``examples/``; set ``SKQUAD_EXAMPLES_QUICK=1``
for a fast build with small sizes, or ``SKQUAD_DOCS_NO_GALLERY=1`` to skip running
the examples while you work on the pages.

The build needs no network: links to Python, scikit-learn, NumPy, pandas, torch,
Dask, joblib, skops and skl2onnx come from the small inventories in
``_intersphinx/`` (see make_inventories.py there),
and MathJax is served from the pages themselves (sphinx-mathjax-offline).
"""

import os

# The array API example needs SciPy's array API mode, set before SciPy is imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import sys  # noqa: E402
import tempfile  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

DOC_DIR = Path(__file__).resolve().parent
# Build against the checkout next to this folder, not some installed copy.
sys.path.insert(0, str(DOC_DIR.parent))

import skquad  # noqa: E402

# Examples save their PNG files here while the gallery runs them, so that a docs
# build never writes into the source tree; the gallery scrapes the figures itself.
os.environ.setdefault("SKQUAD_EXAMPLES_OUTPUT", tempfile.mkdtemp(prefix="skquad-examples-"))
os.environ.setdefault("MPLBACKEND", "Agg")
# The gallery's UCI examples read the datasets from the shared folder beside the
# checkout when there is one (as the tests do); elsewhere SKQUAD_DATA names it,
# or the examples fall back to datasets that ship with scikit-learn.
_SHARED_UCI = DOC_DIR.parents[1] / "shared" / "datasets" / "uci"
if "SKQUAD_DATA" not in os.environ and _SHARED_UCI.is_dir():
    os.environ["SKQUAD_DATA"] = str(_SHARED_UCI)

project = "skquad"
author = "The skquad developers"
copyright = "2026, The skquad developers"
from skquad._version import __version__ as release  # noqa: E402

version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    # MathJax 3 copied into _static/mathjax: math renders without a CDN.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# -- Links to other projects, offline ----------------------------------------
# Each project's objects.inv is replaced by a small local inventory of the
# names skquad references (doc/_intersphinx/make_inventories.py): the build
# never downloads anything, and the links point at the online documentation.
_INVENTORIES = DOC_DIR / "_intersphinx"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", str(_INVENTORIES / "python.inv")),
    "sklearn": ("https://scikit-learn.org/stable/", str(_INVENTORIES / "sklearn.inv")),
    "numpy": ("https://numpy.org/doc/stable/", str(_INVENTORIES / "numpy.inv")),
    "pandas": ("https://pandas.pydata.org/docs/", str(_INVENTORIES / "pandas.inv")),
    "torch": ("https://docs.pytorch.org/docs/stable/", str(_INVENTORIES / "torch.inv")),
    "distributed": ("https://distributed.dask.org/en/stable/", str(_INVENTORIES / "distributed.inv")),
    "joblib": ("https://joblib.readthedocs.io/en/stable/", str(_INVENTORIES / "joblib.inv")),
    "skops": ("https://skops.readthedocs.io/en/stable/", str(_INVENTORIES / "skops.inv")),
    "skl2onnx": ("https://onnx.ai/sklearn-onnx/", str(_INVENTORIES / "skl2onnx.inv")),
}

templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "benchmark_results/**/report.md",
    "generated/benchmarks/*",  # table snippets that benchmarks.rst includes
    "generated/benchmarks_regression/*",  # and benchmarks_regression.rst
    "generated/changelog.rst",  # CHANGELOG.md as reStructuredText, for changelog.rst
    "generated/solver_routes.rst",  # the solver table, which architecture.rst includes
    "generated/provenance/*",  # where and when each results directory ran
    "_intersphinx",
    "Thumbs.db",
    ".DS_Store",
]
root_doc = "index"
default_role = "literal"
# Every cross-reference must resolve (CI builds with -W -n as well).
nitpicky = True

# -- API reference -----------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": True}
autodoc_typehints = "none"
# "On this page" of a class page lists ``fit()``, not ``QNNClassifier.fit()``,
# which the narrow column would cut off.
toc_object_entries_show_parents = "hide"
# An override without a docstring (a torch autograd Function's forward) would
# otherwise show torch's text, with links into torch's own documentation.
autodoc_inherit_docstrings = False
# numpydoc renders Parameters/Attributes/Examples; the method tables come from
# the autosummary class template, so numpydoc need not list members again.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def _undocumented_methods():
    """Per class of the API pages, the methods autodoc leaves out (no docstring).

    The class templates' "Methods" tables list the rest: an entry for a method
    without a docstring (a torch module's ``forward``) would link to nothing.
    """
    import importlib
    import inspect

    undocumented = {}
    for module_name in ["skquad", "skquad.datasets", "skquad.benchmarks", "skquad.nn",
                        "skquad.nn.backward", "skquad.nn.quadratic_form", "skquad.convex",
                        "skquad.quantized", "skquad.inspection", "skquad.export"]:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            cls = getattr(module, name)
            if not inspect.isclass(cls):
                continue
            undocumented[f"{module_name}.{name}"] = [
                member for member, value in inspect.getmembers(cls)
                if callable(value) and not (getattr(value, "__doc__", None) or "").strip()
            ]
    return undocumented


autosummary_context = {"undocumented_methods": _undocumented_methods()}

# -- Gallery -----------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(DOC_DIR.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "doc_module": ("skquad",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"skquad": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    "plot_gallery": "False" if os.environ.get("SKQUAD_DOCS_NO_GALLERY") else "True",
    "matplotlib_animations": False,
    # Timings are machine noise, not documentation; and the file would land in doc/.
    "write_computation_times": False,
}

# -- Benchmark page ----------------------------------------------------------
# benchmarks.rst shows the committed results of ``python -m skquad.benchmarks
# --suite uci`` (doc/benchmark_results/uci/). summary.csv has one row per
# dataset and estimator; the page wants one row per dataset and one column per
# estimator, as in the report, so the pivots are written next to the other
# generated pages at build time.
BENCHMARK_DIR = DOC_DIR / "benchmark_results" / "uci"
BENCHMARK_TABLES = DOC_DIR / "generated" / "benchmarks"
# benchmarks_regression.rst: the same tables of ``--suite regression``, R² for accuracy.
REGRESSION_BENCHMARK_DIR = DOC_DIR / "benchmark_results" / "regression"
REGRESSION_BENCHMARK_TABLES = DOC_DIR / "generated" / "benchmarks_regression"


# Full names of the benchmark's estimators (the CSVs use the short names of
# skquad.benchmarks), for the legend table and the overall table.
BENCHMARK_ESTIMATORS = {
    "QLR": ":class:`~skquad.QuadraticLogisticRegression`",
    "QNN": ":class:`~skquad.QNNClassifier`",
    "RPQNN": ":class:`~skquad.RPQNNClassifier`",
    "SDP": ":class:`~skquad.SDPQuantizedClassifier`",
    "BackpropQ": ":class:`~skquad.BackpropQuantizedClassifier`",
    "LogReg": ":class:`~sklearn.linear_model.LogisticRegression`",
    "Poly2+LogReg": "``PolynomialFeatures(2)`` + :class:`~sklearn.linear_model.LogisticRegression`",
    "MLP": ":class:`~sklearn.neural_network.MLPClassifier`",
    "SVC-rbf": ":class:`~sklearn.svm.SVC` (RBF kernel)",
    "SVC-poly2": ":class:`~sklearn.svm.SVC` (degree-2 polynomial kernel)",
    "HistGB": ":class:`~sklearn.ensemble.HistGradientBoostingClassifier`",
}
REGRESSION_BENCHMARK_ESTIMATORS = {
    "QuadReg": ":class:`~skquad.QuadraticRegression`",
    "QuadRegCV": ":class:`~skquad.QuadraticRegressionCV`",
    "QNN": ":class:`~skquad.QNNRegressor`",
    "RPQNN": ":class:`~skquad.RPQNNRegressor`",
    "SDP": ":class:`~skquad.SDPQuantizedRegressor`",
    "SDPCV": ":class:`~skquad.SDPQuantizedRegressorCV`",
    "BackpropQ": ":class:`~skquad.BackpropQuantizedRegressor`",
    "Ridge": ":class:`~sklearn.linear_model.Ridge`",
    "Poly2+Ridge": "``PolynomialFeatures(2)`` + :class:`~sklearn.linear_model.Ridge`",
    "MLP": ":class:`~sklearn.neural_network.MLPRegressor`",
    "SVR": ":class:`~sklearn.svm.SVR` (RBF kernel)",
    "KRR-poly2": ":class:`~sklearn.kernel_ridge.KernelRidge` (degree-2 polynomial kernel)",
    "HistGB": ":class:`~sklearn.ensemble.HistGradientBoostingRegressor`",
}
NBSP = "\u00a0"  # keeps "70.4 ± 4.0" on one line


def _rst_table(header, rows, widths=None, table_class="benchmark-table"):
    """A list-table directive (cells may hold roles, unlike csv-table files)."""
    lines = [".. list-table::", "   :header-rows: 1", f"   :class: {table_class}"]
    if widths:
        lines.append("   :widths: " + " ".join(str(w) for w in widths))
    lines.append("")
    for row in [header, *rows]:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" for cell in row[1:]]
    return "\n".join(lines) + "\n"


def _write_benchmark_tables(results=BENCHMARK_DIR, tables=BENCHMARK_TABLES,
                            names=BENCHMARK_ESTIMATORS, score="accuracy", scale=100, digits=1,
                            score_label="mean accuracy (%)"):
    """The pivots of one suite's committed results (uci: accuracy in %; regression: R²)."""
    import pandas as pd

    if not (results / "summary.csv").is_file():
        return
    summary = pd.read_csv(results / "summary.csv")
    estimators = list(dict.fromkeys(summary["estimator"]))
    kinds = summary.drop_duplicates("estimator").set_index("estimator")["kind"]
    datasets = list(dict.fromkeys(summary["dataset"]))
    summary = summary.set_index(["dataset", "estimator"])
    tables.mkdir(parents=True, exist_ok=True)

    def cell(dataset, estimator, format_row):
        if (dataset, estimator) not in summary.index:
            return "skipped"
        row = summary.loc[(dataset, estimator)]
        if row["n_runs"] - row.get("n_failed", 0) <= 0:
            return "failed"
        return format_row(row)

    def accuracy(row):
        mean, std = scale * row[f"{score}_mean"], scale * row[f"{score}_std"]
        return f"{mean:.{digits}f}{NBSP}±{NBSP}{std:.{digits}f}"

    def fit_time(row):
        return f"{row['fit_time_median']:.3g}"

    # Two narrow tables (skquad's estimators, then the baselines) instead of one
    # twelve columns wide.
    groups = {
        "skquad": [e for e in estimators if kinds[e] == "skquad"],
        "baselines": [e for e in estimators if kinds[e] != "skquad"],
    }
    for name, format_row in [(score, accuracy), ("fit_time", fit_time)]:
        for group, members in groups.items():
            rows = [[dataset] + [cell(dataset, e, format_row) for e in members] for dataset in datasets]
            text = _rst_table(["dataset", *members], rows)
            (tables / f"{name}_{group}.rst").write_text(text, encoding="utf-8")

    legend = [[f"**{short}**", full] for short, full in names.items() if short in estimators]
    (tables / "estimators.rst").write_text(
        _rst_table(["short name", "estimator"], legend, widths=[20, 80], table_class="benchmark-legend"), encoding="utf-8"
    )

    (tables / "caps.rst").write_text(_caps_and_skips(results, datasets, estimators),
                                     encoding="utf-8")

    overall = pd.read_csv(results / "overall.csv")
    header = ["estimator", score_label, "mean rank", "fit time (s)"]
    has_size = "n_parameters_median" in overall
    if has_size:
        header.append("parameters (median)")
    rows = []
    for row in overall.itertuples():
        cells = [names.get(row.estimator, row.estimator),
                 f"{scale * getattr(row, f'{score}_mean'):.{digits}f}", f"{row.mean_rank:.2f}",
                 f"{row.fit_time_geomean:.3g}"]
        if has_size:
            cells.append("" if pd.isna(row.n_parameters_median) else f"{row.n_parameters_median:,.0f}")
        rows.append(cells)
    (tables / "overall.rst").write_text(_rst_table(header, rows), encoding="utf-8")

    best_file = results / "best_against_baselines.csv"
    if best_file.is_file():  # the regression suite's comparison with the best baseline
        best = pd.read_csv(best_file)
        rows = [[row.dataset, f"{row.skquad} {row.skquad_r2:.3f}",
                 f"{row.baseline} {row.baseline_r2:.3f}", f"{row.difference:+.3f}"]
                for row in best.itertuples()]
        (tables / "best.rst").write_text(
            _rst_table(["dataset", "best skquad", "best baseline", "difference"], rows),
            encoding="utf-8",
        )



def _write_sdpcv_table(path=BENCHMARK_TABLES / "sdpcv.rst"):
    """The SDP's default ``beta`` against SDPQuantizedClassifierCV, from the committed
    ``uci_sdpcv`` and ``uci_sdpcv_large`` runs (accuracy in %, median fit time in s)."""
    import pandas as pd

    frames = [pd.read_csv(DOC_DIR / "benchmark_results" / name / "summary.csv")
              for name in ("uci_sdpcv", "uci_sdpcv_large")]
    summary = pd.concat(frames).set_index(["dataset", "estimator"])
    rows = []
    for dataset in dict.fromkeys(summary.index.get_level_values(0)):
        sdp, cv = summary.loc[(dataset, "SDP")], summary.loc[(dataset, "SDPCV")]
        rows.append([dataset, f"{100 * sdp.accuracy_mean:.1f}", f"{100 * cv.accuracy_mean:.1f}",
                     f"{sdp.fit_time_median:.3g}", f"{cv.fit_time_median:.3g}"])
    header = ["dataset", "SDP (default beta)", "SDPCV", "SDP fit (s)", "SDPCV fit (s)"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_rst_table(header, rows), encoding="utf-8")


def _write_sdp_fit_table(path=BENCHMARK_TABLES / "sdp_fits.rst"):
    """The default SDP's fit per UCI set in the committed uci run, cheapest first."""
    import pandas as pd

    runs = pd.read_csv(BENCHMARK_DIR / "runs.csv")
    sdp = runs[runs["estimator"] == "SDP"].groupby("dataset").agg(
        rows=("n_train", "median"), features=("n_features_model", "first"),
        classes=("n_classes", "first"), fit=("fit_time", "median")).sort_values("fit")
    rows = [[name, f"{row.rows:,.0f} × {row.features:.0f}", f"{row.classes:.0f}", f"{row.fit:.2g}"]
            for name, row in sdp.iterrows()]
    header = ["dataset", "training rows × features", "classes", "fit (s, median)"]
    path.write_text(_rst_table(header, rows), encoding="utf-8")

def _caps_and_skips(results, datasets, estimators):
    """What the run's ``runs.csv`` says about smaller training parts and skipped cells.

    A dataset's training part is the split's training rows, subsampled (stratified)
    to the suite's cap where the dataset is larger; an estimator may have a smaller
    cap of its own, and may be skipped on some datasets (the reason is in the
    report's settings column). The text is generated from the committed run so
    that it cannot disagree with the tables.
    """
    import pandas as pd

    runs = pd.read_csv(results / "runs.csv")
    sizes = runs.groupby(["dataset", "estimator"])[["n_train", "n_test"]].max()
    largest = sizes.groupby("dataset").max()
    # The test part is a fixed share of the rows; a training part shorter than the
    # rest of the rows means the suite's cap applied.
    test_share = float(runs["n_test"].iloc[0] / (runs["n_test"].iloc[0] + runs["n_train"].iloc[0]))
    full_train = largest["n_test"] * (1 - test_share) / test_share
    suite_capped = largest.index[largest["n_train"] < 0.95 * full_train].tolist()
    text = []
    if suite_capped:
        cap = int(largest.loc[suite_capped, "n_train"].max())
        text.append(
            f"Training parts are capped at {cap:,} rows, a stratified subsample of the "
            f"training split, on {', '.join(suite_capped)}; the test part is always the whole "
            f"test split, so every estimator is scored on the same rows.\n"
        )
    rows = []
    for estimator in estimators:
        own = sizes.xs(estimator, level="estimator")["n_train"]
        smaller = own[own < largest.loc[own.index, "n_train"]]
        skipped = [d for d in datasets if d not in own.index]
        if smaller.empty and not skipped:
            continue
        cap = f"at most {int(smaller.max()):,} rows (on {len(smaller)} datasets)" if len(smaller) else ""
        rows.append([f"**{estimator}**", cap, ", ".join(skipped)])
    if rows:
        text.append(
            "Estimators with a smaller training part of their own, or not run on some datasets "
            "(\"skipped\" in the tables; \"failed\" would mean that every fit raised). The "
            "report's settings column says why:\n"
        )
        text.append(_rst_table(["estimator", "training part", "skipped on"], rows,
                               widths=[20, 40, 40], table_class="benchmark-legend"))
    else:
        text.append("Every estimator ran on every dataset with the same training part.\n")
    return "\n".join(text)


_write_benchmark_tables()


def _write_solver_routes(path=DOC_DIR / "generated" / "solver_routes.rst"):
    """The convex path's solver table, printed from ``skquad.convex.routes.ROUTES`` itself."""
    from skquad.convex.routes import ROUTES

    def first_line(function):
        return ((function.__doc__ or "").strip().splitlines() or ["(see the code)"])[0]

    def yes(value):
        return "yes" if value else "no"

    def notes(row):
        blocks = "when several" if callable(row.blockwise) else yes(row.blockwise)
        then = ", ".join(f"``{name}``" for name in row.then) or "—"
        return f"CPU only: {yes(row.cpu_only)}; block by block: {blocks}; continued by: {then}"

    header = ["``solver_``", "what it is", "applies to", "notes"]
    rows = [[f"``{row.name}``", row.summary, first_line(row.applies), notes(row)] for row in ROUTES]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_rst_table(header, rows, widths=[16, 30, 32, 22], table_class="solver-routes"),
                    encoding="utf-8")


_write_solver_routes()
_write_sdpcv_table()
_write_sdp_fit_table()
_write_benchmark_tables(REGRESSION_BENCHMARK_DIR, REGRESSION_BENCHMARK_TABLES,
                        REGRESSION_BENCHMARK_ESTIMATORS, score="r2", scale=1, digits=3,
                        score_label="mean R²")



def _write_provenance(path=DOC_DIR / "generated" / "provenance"):
    """One sentence per results directory: where, when and on which code it ran, and whether
    its fingerprint still matches the code (tests/test_benchmarks_fingerprint.py fails when not)."""
    import re

    from skquad.benchmarks._fingerprint import recorded_and_current

    path.mkdir(parents=True, exist_ok=True)
    for directory in sorted(p for p in (DOC_DIR / "benchmark_results").iterdir() if p.is_dir()):
        if not (directory / "machine.txt").is_file():
            (path / f"{directory.name}.rst").write_text(
                "**Not the output of one benchmark command** (no ``machine.txt``): re-run it with the "
                "command of ``doc/benchmark_results/README.md``.\n", encoding="utf-8")
            continue
        machine = dict(line.split(": ", 1) for line in
                       (directory / "machine.txt").read_text().splitlines() if ": " in line)
        jobs = int((re.search(r"--jobs (\d+)", machine["command"]) or [0, 1])[1])
        threads = re.match(r"\d+", machine["threads during the run"])
        text = (f"Run on {machine['date'][:10]} on {machine['cpu']} ({machine['cores']} cores; "
                + ("one fit at a time" if jobs == 1 else f"{jobs} fits side by side")
                + (f", {threads[0]} thread(s) each" if threads else ", the libraries' threads")
                + f") with skquad {machine.get('skquad', '(version not recorded)')}: "
                f"``{machine['command']}``. ")
        recorded, current, _ = recorded_and_current(directory)
        fresh = recorded is not None and recorded["hash"] == current["hash"]
        text += ("Its fingerprint (the skquad estimators' parameters and the SDP solver routes) "
                 "matches the current code." if fresh else
                 "**Its fingerprint does not match the current code**: the defaults or the SDP "
                 "solver routes changed since it ran (re-run it with the command of "
                 "``doc/benchmark_results/README.md``).")
        (path / f"{directory.name}.rst").write_text(text + "\n", encoding="utf-8")


_write_provenance()

# -- Changelog page ------------------------------------------------------------
# changelog.rst includes CHANGELOG.md, converted here from the small part of
# Markdown it uses (headings, lists, code spans and blocks, links, bold): the
# build needs no Markdown parser, and the page cannot fall behind the file.
import re  # noqa: E402

_CODE = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_HEADINGS = {1: "=", 2: "-", 3: "~", 4: "^"}


def _inline(text):
    """Markdown inline markup of one line as reStructuredText."""
    parts, last = [], 0
    for match in _CODE.finditer(text):
        parts.append(("text", text[last:match.start()]))
        parts.append(("code", match.group(2).strip(" ")))
        last = match.end()
    parts.append(("text", text[last:]))
    out = []
    for index, (kind, value) in enumerate(parts):
        if kind == "code":
            before = out[-1][-1:] if out and out[-1] else ""
            after = parts[index + 1][1][:1] if index + 1 < len(parts) else ""
            literal = "``" + value + "``"
            if before and not re.match(r"[\s\-:/'\"<(\[{]", before):
                literal = "\\ " + literal
            if after and not re.match(r"[\s\-.,:;!?\\/'\")\]}>]", after):
                literal += "\\ "
            out.append(literal)
            continue
        value = value.replace("\\", "\\\\")
        value = value.replace("|", "\\|")
        value = re.sub(r"(?<!\*)\*(?!\*)", r"\\*", value)
        value = re.sub(r"(\w)_(?=\W|$)", r"\1\\_", value)
        value = _LINK.sub(lambda m: f"`{m.group(1)} <{m.group(2)}>`__", value)
        out.append(value)
    return "".join(out)


def markdown_to_rst(markdown):
    """The subset of Markdown CHANGELOG.md uses (headings, lists, code, links, bold)."""
    blocks, paragraph, fence = [], [], None
    for line in markdown.splitlines() + [""]:
        if line.strip().startswith("```"):
            if fence is None:  # a fenced block: a literal block, as written
                if paragraph:
                    blocks.append(_inline("\n".join(paragraph)))
                    paragraph = []
                fence = [line[: len(line) - len(line.lstrip())] + "::", ""]
            else:
                blocks.append("\n".join(fence))
                fence = None
            continue
        if fence is not None:
            fence.append("    " + line if line.strip() else "")
            continue
        heading = re.match(r"(#+) (.*)", line)
        if heading or not line.strip():
            if paragraph:
                blocks.append(_inline("\n".join(paragraph)))
                paragraph = []
            if heading:
                title = _inline(heading.group(2))
                blocks.append(title + "\n" + _HEADINGS[len(heading.group(1))] * len(title))
            continue
        # A list item starts a block of its own (Markdown needs no blank line before it).
        if line.startswith("- ") and paragraph and not paragraph[0].startswith("- "):
            blocks.append(_inline("\n".join(paragraph)))
            paragraph = []
        paragraph.append(line)
    return "\n\n".join(blocks) + "\n"



CHANGELOG_RST = DOC_DIR / "generated" / "changelog.rst"
CHANGELOG_RST.parent.mkdir(parents=True, exist_ok=True)
CHANGELOG_RST.write_text(
    markdown_to_rst((DOC_DIR.parent / "CHANGELOG.md").read_text(encoding="utf-8")),
    encoding="utf-8",
)

# -- HTML --------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skquad {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
# Pages without sub-pages would show an empty "Section Navigation" column.
html_sidebars = {
    "**": ["sidebar-nav-bs"],
    "install": [],
    "benchmarks": [],
    "benchmarks_regression": [],
}
html_static_path = ["_static"]
html_css_files = ["skquad.css"]

# Torch and CVXPY print deprecation chatter while the gallery runs; it is not
# a documentation problem, so it must not turn into a failed -W build.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=FutureWarning)


# -- Docstring touch-ups -------------------------------------------------------
import posixpath  # noqa: E402
import re  # noqa: E402

from sphinx.util import logging as sphinx_logging  # noqa: E402

logger = sphinx_logging.getLogger(__name__)

# ``ndarray of shape (n_features_in_,)``: in reStructuredText a bare word ending
# with "_" is a link to a target of that name. Show such names literally.
_SHAPE_NAME = re.compile(r"(?<![`\w])([A-Za-z][A-Za-z0-9_]*[A-Za-z0-9]_)(?=[,)\s])")
# Methods inherited from scikit-learn (score, get_params, set_fit_request, ...)
# link to scikit-learn's own user guide and glossary, which this site does not
# contain (and intersphinx would need the network): keep the words, drop the link.
_SKLEARN_XREF = re.compile(r":(?:ref|term):`([^`<]*?)\s*(?:<([^`>]*)>)?`")


# ``W_k . a`` (a dot product written with a period): autosummary ends a
# summary at the first ". ", which would cut the literal in two. Use a middle dot.
_LITERAL = re.compile(r"``.+?``")


# scikit-learn's version notes ("Added in version 1.3.") on the methods skquad's
# estimators inherit would read as skquad's own versions.
_VERSION_NOTE = re.compile(r"^\s*\.\. (versionadded|versionchanged|deprecated)::")


def _without_version_notes(lines):
    """``lines`` less every version directive and its indented body."""
    kept, skipping, indent = [], False, 0
    for line in lines:
        if _VERSION_NOTE.match(line):
            skipping, indent = True, len(line) - len(line.lstrip())
            continue
        if skipping and (not line.strip() or len(line) - len(line.lstrip()) > indent):
            continue
        skipping = False
        kept.append(line)
    return kept


def _touch_up_docstring(app, what, name, obj, options, lines):
    module = getattr(obj, "__module__", "") or ""
    from_sklearn = module.startswith("sklearn")
    if from_sklearn:
        lines[:] = _without_version_notes(lines)
    for index, line in enumerate(lines):
        if " . " in line:
            line = lines[index] = _LITERAL.sub(lambda m: m.group(0).replace(" . ", " \u00b7 "), line)
        if "shape (" in line:
            head, _, shape = line.partition("shape (")
            lines[index] = head + "shape (" + _SHAPE_NAME.sub(r"``\1``", shape)
        if from_sklearn:
            lines[index] = _SKLEARN_XREF.sub(
                lambda match: match.group(1).strip() or match.group(2), lines[index]
            )


def _skip_member(app, what, name, obj, skip, options):
    """Skip fitted attributes that are properties (``coefs_``, ``intercepts_``).

    scikit-learn's convention: a name ending in "_" is a fitted attribute, and the
    class's numpydoc Attributes section describes it; autodoc's ``:members:`` would
    list the property a second time. tests/test_doctests.py checks that every such
    property is in its class's Attributes section, so skipping loses nothing.
    """
    if what == "class" and isinstance(obj, property) and name.endswith("_") and not name.startswith("_"):
        return True
    return None


def _attributes_without_property_links():
    """numpydoc: describe a fitted property in the Attributes list, without a link.

    numpydoc turns an Attributes entry that is a documented property into a link to
    the property's own entry and replaces the description with the property's
    summary; with those entries skipped (above) the link would point nowhere.
    """
    from numpydoc.docscrape_sphinx import SphinxDocString

    process_param = SphinxDocString._process_param

    def process_param_plain_for_fitted_properties(self, param, desc, fake_autosummary):
        name = param.strip()
        if name.endswith("_") and isinstance(getattr(self._obj, name, None), property):
            fake_autosummary = False
        return process_param(self, param, desc, fake_autosummary)

    SphinxDocString._process_param = process_param_plain_for_fitted_properties


_VIEWCODE_BACKLINK = re.compile(r'(<a class="viewcode-back" href=")([^"#]*)#([^"]+)(")')


def _fix_viewcode_backlinks(app, pagename, templatename, context, doctree):
    """Point every "[docs]" link of a source page at the object's real anchor.

    sphinx.ext.viewcode prefixes all back-links of one source file with the first
    public module it saw documenting that file: PackedPairIndex (skquad.nn.backward)
    would link to ``#skquad.nn.PackedPairIndex`` because PackedQuadraticForm, from
    the same file, is documented as skquad.nn.PackedQuadraticForm. The Python
    domain knows each object's page and anchor; use them.
    """
    if not pagename.startswith("_modules/") or "body" not in context:
        return
    objects = app.env.get_domain("py").objects
    by_page = {}
    for fullname, entry in objects.items():
        by_page.setdefault(entry.docname, []).append((fullname, entry.node_id))
    page_dir = posixpath.dirname(pagename)

    def relink(match):
        opening, href, anchor, closing = match.groups()
        docname = posixpath.normpath(posixpath.join(page_dir, href)).removesuffix(".html")
        entries = by_page.get(docname, [])
        if any(node_id == anchor for _, node_id in entries):
            return match.group(0)
        # Drop the wrong module prefix one part at a time ("nn.PackedPairIndex.pack",
        # then "PackedPairIndex.pack") until one object of the page ends with the rest.
        parts = anchor.split(".")
        for start in range(1, len(parts)):
            tail = "." + ".".join(parts[start:])
            candidates = [node_id for fullname, node_id in entries if fullname.endswith(tail)]
            if len(candidates) == 1:
                return f"{opening}{href}#{candidates[0]}{closing}"
        logger.warning("source page %s: no anchor for the back-link %s#%s", pagename, href, anchor)
        return match.group(0)

    context["body"] = _VIEWCODE_BACKLINK.sub(relink, context["body"])


def setup(app):
    _attributes_without_property_links()
    app.connect("html-page-context", _fix_viewcode_backlinks)
    # Before numpydoc (priority 500) turns the sections into reStructuredText.
    app.connect("autodoc-process-docstring", _touch_up_docstring, priority=100)
    app.connect("autodoc-skip-member", _skip_member)
