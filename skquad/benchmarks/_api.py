"""``run_benchmark``: the benchmark's protocol on your data, as a Python function."""

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sklearn.base import BaseEstimator

from ._protocol import (
    BUNDLED_DATASETS,
    BUNDLED_REGRESSION_DATASETS,
    resolve_datasets,
    run_protocol,
)
from ._report import (
    ACCURACY,
    R2,
    Score,
    plot_accuracy,
    plot_accuracy_vs_time,
    prepare_output_dir,
    write_report,
)
from ._summary import markdown_section, overall_table, ratios_to_baselines, summarize

if TYPE_CHECKING:  # pandas comes with the bench extra, imported only when a run starts
    import pandas

__all__ = ["BenchmarkResult", "run_benchmark"]


def _figures(score):
    """``{file name: (title, plot function)}`` of a run scored by ``score``."""
    return {
        f"{score.column}.png": (f"Test {score.name} per dataset", plot_accuracy),
        f"{score.column}_vs_time.png": (f"{score.name[0].upper()}{score.name[1:]} against fit time",
                                        plot_accuracy_vs_time),
    }


@dataclass
class BenchmarkResult:
    """What :func:`run_benchmark` measured.

    Attributes
    ----------
    runs : pandas.DataFrame
        One row per fit: dataset, estimator, split, sizes, ``accuracy`` (regression:
        ``r2`` and ``rmse``), ``fit_time``, ``predict_time``, ``n_parameters``, the
        warnings it raised (category and message) and its error, if any.
    summary : pandas.DataFrame
        One row per dataset and estimator: accuracy (regression: R² and RMSE) mean and
        std, median fit time and parameter count.
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
    score : Score
        What the runs are scored by: accuracy (classification) or R² (regression).
    """

    runs: "pandas.DataFrame"
    summary: "pandas.DataFrame"
    ratios: "pandas.DataFrame"
    overall: "pandas.DataFrame"
    markdown: str
    figures: dict[str, Path] = field(default_factory=dict)
    score: Score = ACCURACY

    def plot(self, output_dir):
        """Write the score's plots to ``output_dir``; return their paths.

        ``accuracy.png`` and ``accuracy_vs_time.png`` for classification,
        ``r2.png`` and ``r2_vs_time.png`` for regression.
        """
        output_dir = prepare_output_dir(output_dir)
        order = list(dict.fromkeys(self.summary["estimator"]))
        if self.summary[f"{self.score.column}_mean"].notna().any():
            for name, (_, plot) in _figures(self.score).items():
                plot(self.summary, output_dir / name, order, self.score)
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
        titles = _figures(self.score)
        links = [f"\n![{titles[name][0]}]({name})" for name in self.figures]
        return self.markdown.rstrip() + "\n" + "\n".join(links) + ("\n" if links else "")


def run_benchmark(
    data: Any, y: Any = None, *, estimators: Mapping[str, BaseEstimator] | Sequence[str] | None = None,
    include_defaults: bool = True, repeats: int = 3, test_size: float = 0.25,
    max_train: int | None = None, tune: bool = False, preprocessor: Any = "auto",
    random_state: int = 0, device: str = "auto", n_threads: int | None = 1,
    output_dir: str | Path | None = None, progress: Callable[[str], None] | None = None,
    task: str = "auto", n_splits: int = 5, log_target: bool | str = "auto",
    max_samples: int | None = None, n_jobs: int = 1,
) -> "BenchmarkResult":
    """Compare estimators on your data with the protocol of ``python -m skquad.benchmarks``.

    Repeated stratified splits scored by accuracy (classification), or repeated K-fold
    cross-validation scored by R² and RMSE (regression), of every estimator in a preprocessing
    pipeline, beside the suites' baselines: :ref:`api-benchmarks-protocol`. Needs the ``bench``
    extra (pandas and matplotlib): ``pip install 'skquad[bench]'``.

    Parameters
    ----------
    data : array-like, str, list of str or dict
        ``X`` (then pass ``y``); a dataset name or a list of names (scikit-learn's bundled sets,
        :data:`skquad.datasets.UCI_DATASETS` or :data:`skquad.datasets.REGRESSION_DATASETS`:
        :ref:`api-benchmarks-protocol`); or ``{name: (X, y)}``.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Class labels or regression targets, when ``data`` is ``X``.
    estimators : dict or list of str, default=None
        ``{name: estimator}``: your unfitted estimators, run beside the defaults (cloned for every
        fit; a ``random_state`` left at None gets the split's seed). A list of names selects among
        the defaults (their names: :ref:`api-benchmarks-protocol`).
    include_defaults : bool, default=True
        Run the default estimators; False runs only ``estimators``.
    repeats : int, default=3
        Stratified shuffle splits per dataset (split ``r`` is seeded ``random_state + r``); for
        regression, repetitions of the K-fold cross-validation (the estimators of repetition ``r``
        are seeded ``random_state + r``).
    test_size : float, default=0.25
        Fraction of each dataset held out for testing (classification).
    max_train : int, default=None
        Cap on every training part (a stratified subsample; uniform for regression); None uses the
        whole part.
    tune : bool, default=False
        Wrap every default estimator in a nested 3-fold GridSearchCV over a small grid (its fit
        time includes the search).
    preprocessor : "auto", transformer or None, default="auto"
        ``"auto"``: :func:`skquad.datasets.make_uci_preprocessor` (regression:
        :func:`skquad.datasets.make_regression_preprocessor`); a transformer of your own (cloned
        for every fit); None: the models see ``X`` as it is.
    random_state : int, default=0
        Seeds the splits and the estimators.
    device : str, default="auto"
        Torch device of the skquad estimators that train with torch.
    n_threads : int or None, default=1
        Threads of BLAS, OpenMP and torch during the run (one: fit times compare algorithms, not
        how each library shares a busy machine); None leaves the libraries' defaults.
    output_dir : str or pathlib.Path, default=None
        When given, ``report.md``, ``runs.csv``, ``summary.csv``, ``ratios.csv``, ``overall.csv``,
        ``machine.txt`` and the plots are written there.
    progress : callable, default=None
        Called with one line per fit (``print`` shows progress).
    task : {"auto", "classification", "regression"}, default="auto"
        ``"auto"``: regression for a continuous ``y`` or regression sets
        (:ref:`api-benchmarks-protocol`); integer targets read as class labels.
    n_splits : int, default=5
        Folds of the regression cross-validation.
    log_target : "auto" or bool, default="auto"
        Regression: model ``log(y)`` (the predictions are exponentiated back before scoring).
        ``"auto"``: for the shared sets whose README calls the target skewed (diamonds, wage, cpus,
        car_prices), not for your data.
    max_samples : int, default=None
        Regression: a dataset with more rows is subsampled to this many (uniformly, once, seeded
        ``random_state``) before the splits; the report says so.
    n_jobs : int, default=1
        Worker processes fitting side by side, each under ``n_threads``; the scores do not depend
        on it (every fit is seeded by its split).

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
    start = time.perf_counter()
    runs, specs, names = run_protocol(
        data, y, estimators=estimators, include_defaults=include_defaults, repeats=repeats,
        test_size=test_size, max_train=max_train, tune=tune, preprocessor=preprocessor,
        random_state=random_state, device=device, n_threads=n_threads, progress=progress,
        task=task, n_splits=n_splits, log_target=log_target, max_samples=max_samples,
        n_jobs=n_jobs,
    )
    result = _result(runs, specs, names, source=_describe_source(data, y), repeats=repeats,
                     test_size=test_size, max_train=max_train, tune=tune, n_splits=n_splits)
    if output_dir is not None:
        result.save(Path(output_dir), wall_time=time.perf_counter() - start)
    return result


def _describe_source(data, y):
    if y is not None:
        return "your data"
    if isinstance(data, dict):
        return "your datasets"
    names = [data] if isinstance(data, str) else list(data)
    from ._protocol import _is_regression_name, resolve_regression_datasets

    if names and all(_is_regression_name(name) for name in names):
        names, bundled = resolve_regression_datasets(names), BUNDLED_REGRESSION_DATASETS
        kinds = ("scikit-learn's bundled regression datasets",
                 "regression sets read by `skquad.datasets.load_regression`")
    else:
        names, bundled = resolve_datasets(names), BUNDLED_DATASETS
        kinds = ("scikit-learn's bundled datasets", "UCI datasets read by `skquad.datasets.load_uci`")
    present = (any(name in bundled for name in names), any(name not in bundled for name in names))
    return " and ".join(kind for kind, found in zip(kinds, present) if found)


def _regression_protocol(runs, names, *, source, repeats, n_splits, max_train, tune):
    """The regression run's protocol paragraph and its notes (log targets, subsampling)."""
    first = runs.groupby("dataset", sort=False).first()
    logged = [name for name in names if name in first.index and bool(first.loc[name, "log_target"])]
    text = (
        f"Datasets: {', '.join(names)} ({source}). Protocol: {repeats} x {n_splits}-fold "
        "cross-validation per dataset (`RepeatedKFold`, the same folds for every estimator); "
        "every estimator is `TransformedTargetRegressor(Pipeline([make_regression_preprocessor(), "
        "model]))`: one-hot string columns; impute numeric ones, clip them to their training "
        "range and standardize them; the target "
        + ("is log-transformed on " + ", ".join(logged) + " (skewed targets), then " if logged
           else "is ")
        + "standardized, and predictions are bounded to the training targets' range (as a "
        "tree's are). Everything is fitted on the training folds only. "
        + (f"Training parts are capped at {max_train} samples (uniform subsample). "
           if max_train else "")
        + ("Each estimator is tuned by a nested 3-fold GridSearchCV on the training folds "
           "(its fit time includes the search). " if tune else "Default settings, no tuning. ")
        + "R² and RMSE are computed on the held-out fold on the target's own scale (averaged "
        "over the outputs of a multi-output target), mean ± std over the folds; fit time is "
        "the median wall time of `fit`, in seconds, on a machine shared with other jobs (so "
        "ratios are more telling than absolute times)."
    )
    notes = [
        f"**{name}** was subsampled to {int(first.loc[name, 'n_used']):,} of its "
        f"{int(first.loc[name, 'n_samples']):,} rows (uniformly, once, before the splits) to "
        "keep the run short."
        for name in names
        if name in first.index and first.loc[name, "n_used"] < first.loc[name, "n_samples"]
    ]
    return text, notes


def _result(runs, specs, names, *, n_splits=None, **context):
    score = R2 if "r2" in runs.columns else ACCURACY
    summary = summarize(runs, score)
    order = [spec.name for spec in specs]
    ratios = ratios_to_baselines(summary, score)
    protocol, notes = None, ()
    if score is R2:
        protocol, notes = _regression_protocol(
            runs, names, source=context["source"], repeats=context["repeats"], n_splits=n_splits,
            max_train=context["max_train"], tune=context["tune"],
        )
    markdown = markdown_section(runs, summary, ratios, specs=specs, names=names, score=score,
                                protocol=protocol, notes=notes, **context)
    return BenchmarkResult(runs, summary, ratios, overall_table(summary, order, score), markdown,
                           score=score)
