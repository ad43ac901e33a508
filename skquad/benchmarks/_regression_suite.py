"""The ``regression`` suite: skquad's regressors against the baselines on the regression sets.

The seven sets of :data:`skquad.datasets.REGRESSION_DATASETS` (read by
:func:`skquad.datasets.load_regression` from ``SKQUAD_DATA``), with
:func:`skquad.benchmarks.run_benchmark`'s regression protocol; ``quick=True``
runs it on scikit-learn's bundled ``diabetes`` set, so no data directory is
needed.
"""

from ..datasets import REGRESSION_DATASETS
from ._api import _describe_source, _result
from ._estimators import missing_regressors
from ._protocol import BUNDLED_REGRESSION_DATASETS, resolve_regression_datasets, run_protocol

__all__ = ["best_against_baselines", "resolve_suite_datasets", "run"]

# 3 repetitions of 5-fold cross-validation: the default run, the one committed
# to doc/benchmark_results/regression/.
DEFAULT_REPEATS = 3
QUICK_REPEATS = 1
N_SPLITS = 5
# diamonds (53,940 rows; the other sets have at most 3,000) is subsampled once to
# this many rows: the kernel baselines' n x n solves would take most of the run.
DEFAULT_MAX_SAMPLES = 5000
QUICK_DEFAULT_DATASETS = ("diabetes",)


def resolve_suite_datasets(datasets, quick):
    """The suite's dataset names, or ValueError naming a bad one."""
    if datasets is None:
        return list(QUICK_DEFAULT_DATASETS if quick else REGRESSION_DATASETS)
    resolved = resolve_regression_datasets(datasets)
    if quick:
        outside = [name for name, key in zip(datasets, resolved)
                   if key not in BUNDLED_REGRESSION_DATASETS]
        if outside:
            raise ValueError(
                f"unknown dataset {outside[0]!r} for --quick; choose from "
                f"{list(BUNDLED_REGRESSION_DATASETS)} (scikit-learn's bundled regression sets)"
            )
    return resolved


def best_against_baselines(summary, *, within=0.02, column="r2", name="r2"):
    """Per dataset, the best skquad regressor against the best baseline (mean R²).

    The accuracy target of the regression issue reads from it: the best skquad
    regressor within ``within`` of the best baseline, or ahead of it. ``column``:
    the score whose ``_mean`` is compared; ``name``: the score columns' suffix.
    """
    import pandas as pd

    mean, rows = f"{column}_mean", []
    for dataset, block in summary.dropna(subset=[mean]).groupby("dataset", sort=False):
        ours = block[block["kind"] == "skquad"]
        theirs = block[block["kind"] == "baseline"]
        if ours.empty or theirs.empty:
            continue
        best_ours, best_theirs = ours.loc[ours[mean].idxmax()], theirs.loc[theirs[mean].idxmax()]
        difference = best_ours[mean] - best_theirs[mean]
        rows.append({
            "dataset": dataset, "skquad": best_ours["estimator"], f"skquad_{name}": best_ours[mean],
            "baseline": best_theirs["estimator"], f"baseline_{name}": best_theirs[mean],
            "difference": difference, "within": bool(difference >= -within),
            "ahead": bool(difference > 0),
        })
    return pd.DataFrame(rows, columns=["dataset", "skquad", f"skquad_{name}", "baseline",
                                       f"baseline_{name}", "difference", "within", "ahead"])


def _best_section(best, within=0.02):
    from ._report import markdown_table

    if best.empty:
        return ""
    rows = [[row.dataset, f"{row.skquad} {row.skquad_r2:.3f}", f"{row.baseline} {row.baseline_r2:.3f}",
             f"{row.difference:+.3f}"] for row in best.itertuples()]
    return (
        "\n### Best skquad regressor against the best baseline\n\nPer dataset, mean test R² of "
        "the best skquad regressor and of the best scikit-learn baseline, and their difference. "
        f"The best skquad regressor is within {within} R² of the best baseline on "
        f"{int(best['within'].sum())} of {len(best)} datasets and ahead on "
        f"{int(best['ahead'].sum())} of {len(best)}.\n\n"
        + markdown_table(["dataset", "best skquad", "best baseline", "difference"], rows) + "\n"
    )


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print,
        tune=False, estimators=None, max_train=None, random_state=0, max_samples=None,
        n_splits=N_SPLITS, n_jobs=1, n_threads=None):
    """Run the regression suite (or its quick version) and return the report section.

    Follows the suite contract of :mod:`skquad.benchmarks.__main__`; the
    experiment itself is :func:`skquad.benchmarks.run_benchmark`'s. ``n_jobs``
    fits run at once, in worker processes (each under the run's thread limit).
    """
    repeats = repeats or (QUICK_REPEATS if quick else DEFAULT_REPEATS)
    names = resolve_suite_datasets(datasets, quick)
    max_samples = DEFAULT_MAX_SAMPLES if max_samples is None else (max_samples or None)
    runs, specs, names = run_protocol(
        names, task="regression", estimators=estimators, quick=quick, repeats=repeats,
        n_splits=n_splits, max_samples=max_samples, max_train=max_train or None, tune=tune,
        random_state=random_state, device=device, progress=progress, n_jobs=n_jobs,
        n_threads=n_threads,
    )
    result = _result(
        runs, specs, names, source=_describe_source(names, None), repeats=repeats,
        test_size=1 / n_splits, max_train=max_train or None, tune=tune, n_splits=n_splits,
    )
    result.plot(output_dir)
    best = best_against_baselines(result.summary)
    markdown = result.markdown_with_figures() + _best_section(best)
    missing = missing_regressors()
    if missing and estimators is None:
        markdown = (
            f"Not in this install, so not run: {', '.join(missing)}.\n\n" + markdown
        )
    return {
        "title": "Quick regression benchmark (scikit-learn's diabetes)" if quick
        else "Regression benchmark",
        "markdown": markdown,
        "tables": {**result.tables(), "best_against_baselines": best},
        "figures": list(result.figures),
    }
