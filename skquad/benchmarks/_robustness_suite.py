"""The ``robustness`` suite: every skquad estimator at its defaults, as a new user runs it.

A user's plain protocol (stated in each report), not the tuned one of the
``regression`` suite: the estimators' own defaults after
:func:`skquad.datasets.make_uci_preprocessor`, ``log(y)`` where the target is
skewed, shuffled 75/25 splits. Two parts, ``regression`` on the shared
regression sets and ``classification`` on the UCI sets with categorical
features, each reporting the mean and the worst split of every estimator per
dataset and the catastrophic splits: a score more than a margin below the
linear reference's (Ridge, LogisticRegression) on the same split.
"""

import math
from functools import partial

import numpy as np
from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
from sklearn.preprocessing import FunctionTransformer

from ..datasets import REGRESSION_DATASETS, make_uci_preprocessor, resolve_uci_name
from ._estimators import default_regression_specs, default_specs
from ._regression_suite import best_against_baselines
from ._protocol import (
    REGRESSION_RUN_COLUMNS,
    RUN_COLUMNS,
    _execute,
    _load_named,
    _load_regression_named,
    _protocol_tasks,
)
from ._report import markdown_table

__all__ = [
    "CLASSIFICATION_DATASETS",
    "regression",
    "classification",
    "split_table",
    "targets",
]

TEST_SIZE = 0.25
DEFAULT_REPEATS = 3
# diamonds' 53,940 rows are subsampled once, as in the regression suite.
DEFAULT_MAX_SAMPLES = 5000
# The UCI sets with categorical features.
CLASSIFICATION_DATASETS = ("breast.cancer", "credit.a")
REGRESSION_BASELINES = ("Ridge", "Poly2+Ridge", "MLP", "SVR", "KRR-poly2", "HistGB")
CLASSIFICATION_BASELINES = ("LogReg", "MLP", "HistGB")
# Catastrophic: a split's score this far below the linear reference's on it.
REGRESSION_MARGIN = 0.1
CLASSIFICATION_MARGIN = 0.05
# The accuracy target: the best skquad regressor within this R² of the
# best baseline on at least 5 of 7 sets.
WITHIN = 0.02
WITHIN_SHARE = 5 / 7


def _plain_target(log):
    """The user's target side: ``np.log``/``np.exp`` for a skewed target, else none."""
    return FunctionTransformer(np.log, inverse_func=np.exp, check_inverse=False) if log else None


def _select(specs, estimators, baselines):
    """The skquad specs and the named baselines, filtered by ``estimators`` names."""
    chosen = [spec for spec in specs if spec.kind == "skquad" or spec.name in baselines]
    if estimators is not None:
        chosen = [spec for spec in chosen if spec.name in estimators]
    return chosen


def _regression_names(datasets):
    if datasets is None:
        return list(REGRESSION_DATASETS)
    return [name for name in datasets if name in REGRESSION_DATASETS]


def _classification_names(datasets):
    if datasets is None:
        return list(CLASSIFICATION_DATASETS)
    return [resolve_uci_name(name).file_name for name in datasets
            if name not in REGRESSION_DATASETS and resolve_uci_name(name) is not None]


def _run_part(names, specs, *, task, repeats, max_samples, random_state, device,
              n_jobs, n_threads, progress):
    """The runs table of one part (the protocol's columns)."""
    import pandas as pd

    regression = task == "regression"
    column = "r2" if regression else "accuracy"
    # the protocol's fits on shuffled splits, one-hot and standardized inputs, a plain target side
    splitter = (ShuffleSplit if regression else StratifiedShuffleSplit)(
        repeats, test_size=TEST_SIZE, random_state=random_state)
    tasks = _protocol_tasks(
        {name: partial(_load_regression_named if regression else _load_named, name) for name in names},
        specs, make_uci_preprocessor(), regression=regression, repeats=repeats, test_size=TEST_SIZE,
        n_splits=1, max_samples=max_samples, max_train=None, tune=False, random_state=random_state,
        device=device, log_target="auto", splitter=splitter, target_transformer=_plain_target,
    )

    def describe(row):
        status = (f"FAILED {row['error'][:80]}" if row["error"]
                  else f"{column} {row[column]:.3f}  fit {row['fit_time']:.2f}s")
        return f"{row['dataset']} split {row['repeat'] + 1}/{repeats} {row['estimator']}: {status}"

    rows = _execute(tasks, n_fits=len(names) * repeats * len(specs), n_jobs=n_jobs,
                    n_threads=n_threads, progress=progress, describe=describe)
    return pd.DataFrame(rows).reindex(
        columns=REGRESSION_RUN_COLUMNS if task == "regression" else RUN_COLUMNS)


def split_table(runs, column, reference, margin):
    """Per dataset and estimator: mean, worst split, catastrophic splits against ``reference``.

    A split is catastrophic when the estimator's score is more than ``margin``
    below ``reference``'s on the same split (or the fit failed).
    """
    import pandas as pd

    base = runs[runs["estimator"] == reference].set_index(["dataset", "repeat"])[column]
    rows = []
    for (dataset, name), block in runs.groupby(["dataset", "estimator"], sort=False):
        scores = block.set_index(["dataset", "repeat"])[column]
        below = scores.lt(base.reindex(scores.index) - margin) | scores.isna()
        rows.append({
            "dataset": dataset, "estimator": name, "kind": block["kind"].iloc[0],
            f"{column}_mean": scores.mean(skipna=False), f"{column}_worst": scores.min(skipna=False),
            "catastrophic": int(below.sum()) if reference in set(runs["estimator"]) else np.nan,
            "n_splits": len(scores), "fit_time_median": block["fit_time"].median(),
        })
    return pd.DataFrame(rows)


def targets(table, *, column="r2", reference="Ridge", margin=REGRESSION_MARGIN, within=WITHIN):
    """The issue's two targets from :func:`split_table`: ``(failures, best, share_met)``.

    ``failures``: the (dataset, estimator) pairs of skquad whose mean or worst split is
    more than ``margin`` below the reference's; ``best``: per dataset the best
    skquad and the best baseline (mean) and whether the first is within ``within``.
    """
    failures = []
    for dataset, block in table.groupby("dataset", sort=False):
        ref = block[block["estimator"] == reference]
        if not ref.empty:
            ref = ref.iloc[0]
            for row in block[block["kind"] == "skquad"].itertuples():
                mean, worst = getattr(row, f"{column}_mean"), getattr(row, f"{column}_worst")
                if not (mean >= ref[f"{column}_mean"] - margin
                        and worst >= ref[f"{column}_worst"] - margin):
                    failures.append((dataset, row.estimator))
    best = best_against_baselines(table, within=within, column=column, name="score").drop(columns="ahead")
    needed = math.ceil(WITHIN_SHARE * len(best) - 1e-9)
    return failures, best, bool(len(best) and best["within"].sum() >= needed)


def _score_grid(table, column, digits):
    """Datasets as rows, estimators as columns, ``mean (worst)`` in each cell."""
    names = list(dict.fromkeys(table["estimator"]))
    rows = []
    for dataset, block in table.groupby("dataset", sort=False):
        cells = block.set_index("estimator")
        row = [dataset]
        for name in names:
            if name not in cells.index:
                row.append("")
                continue
            cell = cells.loc[name]
            text = f"{cell[f'{column}_mean']:.{digits}f} ({cell[f'{column}_worst']:.{digits}f})"
            if cell["catastrophic"] and cell["catastrophic"] > 0:
                text += f" ×{int(cell['catastrophic'])}"
            row.append(text)
        rows.append(row)
    return markdown_table(["dataset", *names], rows)


def _section(table, *, column, digits, reference, margin, protocol, target_lines):
    failures, best, met = targets(table, column=column, reference=reference, margin=margin)
    counts = table[table["kind"] == "skquad"].groupby("estimator", sort=False)["catastrophic"].sum()
    lines = [
        protocol, "",
        f"Each cell: mean over the splits (worst split); ×k: k catastrophic splits (more than "
        f"{margin} below {reference} on the same split, or a failed fit).", "",
        _score_grid(table, column, digits), "",
        "Catastrophic splits per skquad estimator: "
        + ", ".join(f"{name} {int(count)}" for name, count in counts.items()) + ".", "",
    ]
    if not best.empty:
        lines += [markdown_table(
            ["dataset", "best skquad", "best baseline", "difference"],
            [[r.dataset, f"{r.skquad} {r.skquad_score:.{digits}f}",
              f"{r.baseline} {r.baseline_score:.{digits}f}", f"{r.difference:+.{digits}f}"]
             for r in best.itertuples()]), ""]
    if target_lines:
        pairs = ", ".join(f"{e} on {d}" for d, e in failures) or "none"
        lines += [
            f"- {'PASS' if not failures else 'FAIL'}: no skquad regressor's mean or worst split "
            f"more than {margin} below {reference}'s (failing: {pairs}).",
            f"- {'PASS' if met else 'FAIL'}: the best skquad regressor within {WITHIN} of the "
            f"best baseline on {int(best['within'].sum())} of {len(best)} sets (target: "
            f"{math.ceil(WITHIN_SHARE * len(best) - 1e-9)} of {len(best)}, 5 of 7).",
        ]
    return "\n".join(lines) + "\n", best


def regression(*, output_dir, quick=False, repeats=None, datasets=None, device="auto",
               progress=print, estimators=None, random_state=0, max_samples=None, n_jobs=1,
               n_threads=None):
    """The regression part: the shared regression sets; follows the suite contract."""
    repeats = repeats or DEFAULT_REPEATS
    names = _regression_names(datasets)
    specs = _select(default_regression_specs(), estimators, REGRESSION_BASELINES)
    if not names or not specs:
        return {"title": "Regression", "markdown": "No regression set or estimator selected.\n",
                "tables": {}}
    max_samples = DEFAULT_MAX_SAMPLES if max_samples is None else (max_samples or None)
    runs = _run_part(names, specs, task="regression", repeats=repeats, max_samples=max_samples,
                     random_state=random_state, device=device,
                     n_jobs=n_jobs, n_threads=n_threads, progress=progress)
    table = split_table(runs, "r2", "Ridge", REGRESSION_MARGIN)
    logged = [name for name in names if REGRESSION_DATASETS[name].skewed_target]
    protocol = (
        f"Datasets: {', '.join(names)} (`skquad.datasets.load_regression`); {repeats} shuffled "
        f"75/25 splits; every estimator at its defaults after `make_uci_preprocessor()` (one-hot "
        "string columns, unknown categories ignored; impute and standardize numeric ones), "
        f"with `log(y)` modelled on {', '.join(logged) or 'none'}; nothing else (no "
        "bound on the predictions; the skquad models clip their inputs to the training "
        "range and the networks scale their targets, by default)."
        + (f" Sets over {max_samples} rows are subsampled to {max_samples} once." if max_samples
           else "") + " Test R², on the target's own scale."
    )
    markdown, best = _section(table, column="r2", digits=3, reference="Ridge",
                              margin=REGRESSION_MARGIN, protocol=protocol, target_lines=True)
    return {"title": "Regression at defaults", "markdown": markdown,
            "tables": {"regression_runs": runs, "regression_splits": table,
                       "regression_best": best}}


def classification(*, output_dir, quick=False, repeats=None, datasets=None, device="auto",
                   progress=print, estimators=None, random_state=0, max_samples=None, n_jobs=1,
                   n_threads=None):
    """The classification part: the UCI sets with categorical features; the suite contract."""
    repeats = repeats or DEFAULT_REPEATS
    names = _classification_names(datasets)
    specs = _select(default_specs(), estimators, CLASSIFICATION_BASELINES)
    if not names or not specs:
        return {"title": "Classification",
                "markdown": "No classification set or estimator selected.\n", "tables": {}}
    runs = _run_part(names, specs, task="classification", repeats=repeats, max_samples=None,
                     random_state=random_state, device=device,
                     n_jobs=n_jobs, n_threads=n_threads, progress=progress)
    table = split_table(runs, "accuracy", "LogReg", CLASSIFICATION_MARGIN)
    protocol = (
        f"Datasets: {', '.join(names)} (`skquad.datasets.load_uci`); {repeats} stratified "
        "shuffled 75/25 splits; every estimator at its defaults after `make_uci_preprocessor()`"
        + ". Test accuracy."
    )
    markdown, best = _section(table, column="accuracy", digits=3, reference="LogReg",
                              margin=CLASSIFICATION_MARGIN, protocol=protocol, target_lines=False)
    return {"title": "Classification at defaults", "markdown": markdown,
            "tables": {"classification_runs": runs, "classification_splits": table,
                       "classification_best": best}}
