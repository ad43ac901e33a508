"""``run_benchmark``: the benchmark's protocol on your data, as a Python function."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sklearn.base import BaseEstimator

from ._protocol import BUNDLED_DATASETS, resolve_datasets, run_protocol
from ._report import (
    plot_accuracy,
    plot_accuracy_vs_time,
    prepare_output_dir,
    write_report,
)
from ._summary import markdown_section, overall_table, ratios_to_baselines, summarize

if TYPE_CHECKING:  # pandas comes with the bench extra, imported only when a run starts
    import pandas

__all__ = ["BenchmarkResult", "run_benchmark"]

FIGURES = {
    "accuracy.png": ("Test accuracy per dataset", plot_accuracy),
    "accuracy_vs_time.png": ("Accuracy against fit time", plot_accuracy_vs_time),
}


@dataclass
class BenchmarkResult:
    """What :func:`run_benchmark` measured.

    Attributes
    ----------
    runs : pandas.DataFrame
        One row per fit: dataset, estimator, split, sizes, ``accuracy``, ``fit_time``,
        ``predict_time``, ``n_parameters``, the warnings it raised (category and message)
        and its error, if any.
    summary : pandas.DataFrame
        One row per dataset and estimator: accuracy mean and std, median fit time and
        parameter count.
    ratios : pandas.DataFrame
        Per dataset, every skquad estimator (and yours) against every baseline: accuracy
        difference and ratio, fit-time ratio.
    overall : pandas.DataFrame
        One row per estimator over all datasets: mean accuracy, mean rank, geometric mean
        fit time, median parameter count.
    markdown : str
        The report section: protocol, tables and what the numbers say.
    figures : dict
        ``{file name: path}`` of the plots written by :meth:`save` (empty until then).
    """

    runs: "pandas.DataFrame"
    summary: "pandas.DataFrame"
    ratios: "pandas.DataFrame"
    overall: "pandas.DataFrame"
    markdown: str
    figures: dict[str, Path] = field(default_factory=dict)

    def plot(self, output_dir):
        """Write ``accuracy.png`` and ``accuracy_vs_time.png`` to ``output_dir``; return their paths."""
        output_dir = prepare_output_dir(output_dir)
        order = list(dict.fromkeys(self.summary["estimator"]))
        if self.summary["accuracy_mean"].notna().any():
            for name, (_, plot) in FIGURES.items():
                plot(self.summary, output_dir / name, order)
                self.figures[name] = output_dir / name
        return dict(self.figures)

    def save(self, output_dir, *, title="skquad benchmark", command=None, wall_time=None):
        """Write ``report.md``, the CSV tables, the plots and ``machine.txt`` to ``output_dir``.

        Returns the paths written, ``report.md`` first.
        """
        output_dir = prepare_output_dir(output_dir)
        self.plot(output_dir)
        section = {
            "title": "Results",
            "markdown": self.markdown_with_figures(),
            "tables": self.tables(),
        }
        return write_report(output_dir, title, [(section, "")], command=command, wall_time=wall_time)

    def tables(self):
        """The four tables by the CSV name they are saved under."""
        return {"runs": self.runs, "summary": self.summary, "ratios": self.ratios,
                "overall": self.overall}

    def markdown_with_figures(self):
        """The report section with links to the figures written so far."""
        links = [f"\n![{FIGURES[name][0]}]({name})" for name in self.figures]
        return self.markdown.rstrip() + "\n" + "\n".join(links) + ("\n" if links else "")


def run_benchmark(
    data: Any,
    y: Any = None,
    *,
    estimators: Mapping[str, BaseEstimator] | Sequence[str] | None = None,
    include_defaults: bool = True,
    repeats: int = 3,
    test_size: float = 0.25,
    max_train: int | None = None,
    tune: bool = False,
    preprocessor: Any = "auto",
    random_state: int = 0,
    device: str = "auto",
    n_threads: int | None = 1,
    output_dir: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> "BenchmarkResult":
    """Compare estimators on your data with the protocol of ``python -m skquad.benchmarks``.

    For each dataset, ``repeats`` stratified shuffle splits; on each split every
    estimator is fitted as ``Pipeline([("preprocess", preprocessor), ("model",
    estimator)])`` on the training part and scored on the test part. By default
    skquad's five estimators run beside the usual scikit-learn baselines
    (LogisticRegression, PolynomialFeatures(2) + LogisticRegression,
    MLPClassifier, RBF and degree-2 SVC, HistGradientBoostingClassifier).

    Needs the ``bench`` extra (pandas and matplotlib): ``pip install 'skquad[bench]'``.

    Parameters
    ----------
    data : array-like, str, list of str or dict
        ``X`` (then pass ``y``); a dataset name or a list of names (scikit-learn's
        bundled ``"iris"``, ``"wine"``, ``"breast_cancer"``, ``"digits"``, or the UCI
        datasets of :data:`skquad.datasets.UCI_DATASETS` by file or OpenML name, read by
        :func:`skquad.datasets.load_uci`); or ``{name: (X, y)}``.
    y : array-like of shape (n_samples,), default=None
        Class labels, when ``data`` is ``X``.
    estimators : dict or list of str, default=None
        ``{name: estimator}``: your unfitted classifiers, run beside the defaults
        (cloned for every fit; a ``random_state`` left at None gets the split's seed).
        A list of names selects among the defaults (``"QLR"``, ``"QNN"``, ``"RPQNN"``,
        ``"SDP"``, ``"BackpropQ"``, ``"LogReg"``, ``"Poly2+LogReg"``, ``"MLP"``,
        ``"SVC-rbf"``, ``"SVC-poly2"``, ``"HistGB"``).
    include_defaults : bool, default=True
        Run the default estimators; False runs only ``estimators``.
    repeats : int, default=3
        Stratified shuffle splits per dataset (split ``r`` is seeded ``random_state + r``).
    test_size : float, default=0.25
        Fraction of each dataset held out for testing.
    max_train : int, default=None
        Cap on every training part (a stratified subsample); None uses the whole part.
    tune : bool, default=False
        Wrap every default estimator in a nested 3-fold GridSearchCV over a small grid
        (its fit time includes the search).
    preprocessor : "auto", transformer or None, default="auto"
        ``"auto"``: :func:`skquad.datasets.make_uci_preprocessor` (impute and one-hot
        encode nominal columns, impute and standardize numeric ones); a transformer of
        your own (cloned for every fit); None: the models see ``X`` as it is.
    random_state : int, default=0
        Seeds the splits and the estimators.
    device : str, default="auto"
        Torch device of the skquad estimators that train with torch.
    n_threads : int or None, default=1
        Threads of BLAS, OpenMP and torch during the run: one by default, so that fit
        times compare algorithms rather than how each library shares a busy machine;
        None leaves the libraries' defaults.
    output_dir : str or pathlib.Path, default=None
        When given, ``report.md``, ``runs.csv``, ``summary.csv``, ``ratios.csv``,
        ``overall.csv``, ``machine.txt`` and the plots are written there.
    progress : callable, default=None
        Called with one line per fit (``print`` shows progress).

    Returns
    -------
    result : BenchmarkResult
        ``runs``, ``summary``, ``ratios`` and ``overall`` DataFrames, the Markdown
        report section, and the figures written.

    Examples
    --------
    Your estimator beside skquad's quadratic logistic regression on your data:

    >>> from sklearn.datasets import load_wine
    >>> from sklearn.linear_model import RidgeClassifier
    >>> from skquad import QuadraticLogisticRegression
    >>> from skquad.benchmarks import run_benchmark
    >>> X, y = load_wine(return_X_y=True)
    >>> mine = {"QLR": QuadraticLogisticRegression(C=0.1), "Ridge": RidgeClassifier()}
    >>> result = run_benchmark(X, y, estimators=mine, include_defaults=False, repeats=3)
    >>> result.summary[["estimator", "accuracy_mean", "n_parameters"]].round(3)
      estimator  accuracy_mean  n_parameters
    0       QLR          0.985         315.0
    1     Ridge          0.993          42.0

    ``accuracy_mean`` is the test accuracy averaged over the three splits;
    ``n_parameters`` counts the learned numbers (QLR's 13 x 13 symmetric ``Q`` per
    class score is what makes it larger). ``result.save("results/")`` writes the
    report, the CSV tables and the plots.
    """
    import time

    start = time.perf_counter()
    runs, specs, names = run_protocol(
        data, y, estimators=estimators, include_defaults=include_defaults, repeats=repeats,
        test_size=test_size, max_train=max_train, tune=tune, preprocessor=preprocessor,
        random_state=random_state, device=device, n_threads=n_threads, progress=progress,
    )
    result = _result(runs, specs, names, source=_describe_source(data, y), repeats=repeats,
                     test_size=test_size, max_train=max_train, tune=tune)
    if output_dir is not None:
        result.save(Path(output_dir), wall_time=time.perf_counter() - start)
    return result


def _describe_source(data, y):
    if y is not None:
        return "your data"
    if isinstance(data, dict):
        return "your datasets"
    names = resolve_datasets([data] if isinstance(data, str) else list(data))
    kinds = []
    if any(name in BUNDLED_DATASETS for name in names):
        kinds.append("scikit-learn's bundled datasets")
    if any(name not in BUNDLED_DATASETS for name in names):
        kinds.append("UCI datasets read by `skquad.datasets.load_uci`")
    return " and ".join(kinds)


def _result(runs, specs, names, **context):
    summary = summarize(runs)
    order = [spec.name for spec in specs]
    ratios = ratios_to_baselines(summary)
    markdown = markdown_section(runs, summary, ratios, specs=specs, names=names, **context)
    return BenchmarkResult(runs, summary, ratios, overall_table(summary, order), markdown)
