"""The ``uci`` suite: every estimator against the baselines on UCI datasets.

Protocol: for each dataset, ``repeats`` stratified shuffle splits (25 % test);
on each split every estimator is fitted as
``Pipeline([("preprocess", make_uci_preprocessor()), ("model", estimator)])``
on the training part only (so imputation, one-hot categories and scaling never
see the test part), then scored on the test part. Fit time is the wall time of
``Pipeline.fit``. With ``tune=True`` the pipeline is wrapped in a 3-fold
``GridSearchCV`` fitted on the training part (nested: the test part stays
unseen) and the fit time includes the search.

``quick=True`` runs the same protocol on datasets that ship with
scikit-learn (no data directory needed).
"""

import time
import warnings
from collections import Counter

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit
from sklearn.pipeline import Pipeline

from ..datasets import UCI_DATASETS, load_uci, make_uci_preprocessor
from ..datasets._uci import resolve_uci_name
from ._estimators import available_specs, describe_missing, subsample_indices
from ._report import (
    format_mean_std,
    markdown_table,
    plot_accuracy,
    plot_accuracy_vs_time,
)

__all__ = ["run", "QUICK_DATASETS", "UCI_DEFAULT_DATASETS", "resolve_datasets"]

TEST_SIZE = 0.25
# Default size of the full run, chosen so that it finishes in under 15 minutes
# on two cores shared with other jobs: 3 splits, and every training part
# capped at 1000 samples (a stratified subsample; it bites on the eight larger
# datasets; the test part is always the full 25 %). Small training sets are
# also the regime where paper 001 expects quadratic neurons to help. For the
# full-size protocol use --max-train 0 (much longer: the SDP and the networks
# dominate).
DEFAULT_REPEATS = 3
DEFAULT_MAX_TRAIN = 1000
QUICK_REPEATS = 2
QUICK_MAX_TRAIN = 1000

UCI_DEFAULT_DATASETS = list(UCI_DATASETS)


def _load_sklearn(name):
    from sklearn import datasets

    loader = {
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "breast_cancer": datasets.load_breast_cancer,
        "digits": datasets.load_digits,
    }[name]
    return loader(return_X_y=True)


QUICK_DATASETS = ["iris", "wine", "breast_cancer", "digits"]
QUICK_DEFAULT_DATASETS = ["iris", "wine", "breast_cancer", "digits"]


def resolve_datasets(datasets, quick):
    """Canonical dataset names for the uci suite, or ValueError naming the bad one."""
    if datasets is None:
        return list(QUICK_DEFAULT_DATASETS if quick else UCI_DEFAULT_DATASETS)
    resolved = []
    for name in datasets:
        if quick:
            key = name.strip().lower().replace("-", "_")
            if key not in QUICK_DATASETS:
                raise ValueError(
                    f"unknown dataset {name!r} for --quick; choose from {QUICK_DATASETS} "
                    "(scikit-learn's bundled datasets)"
                )
            resolved.append(key)
        else:
            dataset = resolve_uci_name(name)
            if dataset is None:
                raise ValueError(
                    f"unknown dataset {name!r}; choose from {UCI_DEFAULT_DATASETS} "
                    "(file or OpenML names)"
                )
            resolved.append(dataset.file_name)
    return resolved


def _load(name, quick):
    if quick:
        return _load_sklearn(name)
    return load_uci(name, return_X_y=True, as_frame=True)


def _take(X, indices):
    return X.iloc[indices] if hasattr(X, "iloc") else X[indices]


def _fit_one(spec, X_train, y_train, X_test, y_test, *, seed, device, n_classes, tune):
    """Fit and score one estimator; never raises (failures are recorded)."""
    n_features = X_train.shape[1]
    record = {"error": "", "warnings": "", "best_params": ""}
    caught = []
    try:
        model = Pipeline(
            [
                ("preprocess", make_uci_preprocessor()),
                ("model", spec.build(seed, device, n_features, n_classes)),
            ]
        )
        if tune and spec.grid:
            model = GridSearchCV(
                model,
                {f"model__{key}": values for key, values in spec.grid.items()},
                cv=3,
                error_score=np.nan,
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            model.fit(X_train, y_train)
            record["fit_time"] = time.perf_counter() - start
            start = time.perf_counter()
            y_pred = model.predict(X_test)
            record["predict_time"] = time.perf_counter() - start
        record["accuracy"] = float(np.mean(np.asarray(y_pred) == np.asarray(y_test)))
        fitted = model.best_estimator_ if hasattr(model, "best_estimator_") else model
        record["n_features_model"] = int(fitted.named_steps["preprocess"].transform(X_test[:1]).shape[1])
        if hasattr(model, "best_params_"):
            record["best_params"] = str(
                {key.removeprefix("model__"): value for key, value in model.best_params_.items()}
            )
    except Exception as exc:  # one broken fit must not end a 15-minute run
        record.update(accuracy=np.nan, fit_time=np.nan, predict_time=np.nan)
        record["error"] = f"{type(exc).__name__}: {exc}"[:300]
    counts = Counter(
        "ConvergenceWarning" if issubclass(w.category, ConvergenceWarning) else w.category.__name__
        for w in caught
        if not issubclass(w.category, (DeprecationWarning, FutureWarning))
    )
    record["warnings"] = "; ".join(f"{name} x{count}" for name, count in sorted(counts.items()))
    return record


def run(
    *,
    output_dir,
    quick=False,
    repeats=None,
    datasets=None,
    device="auto",
    progress=print,
    tune=False,
    estimators=None,
    max_train=None,
    random_state=0,
):
    """Run the uci suite (or its quick version) and return the report section.

    Parameters
    ----------
    output_dir : pathlib.Path
        Existing folder; the plots are saved there.
    quick : bool, default=False
        scikit-learn's bundled datasets, smaller sizes.
    repeats : int, default=None
        Stratified splits per dataset (default 3, quick 2).
    datasets : list of str, default=None
        Dataset names (default: all 13 UCI datasets; quick: iris, wine,
        breast_cancer).
    device : str, default="auto"
        Passed to the skquad estimators that train with torch.
    progress : callable, default=print
        Called with one line per fit.
    tune : bool, default=False
        Nested 3-fold GridSearchCV per estimator.
    estimators : list of str, default=None
        Subset of estimator names (default: all available).
    max_train : int or None, default=None
        Cap on every training part (default 1000, quick 1000; 0 for no cap).
    random_state : int, default=0
        Seeds the splits and the estimators (split ``r`` uses ``random_state + r``).

    Returns
    -------
    result : dict
        ``title``, ``markdown``, ``tables`` (``runs``, ``summary``, ``ratios``, ``overall``)
        and ``figures``, as the benchmark contract asks.
    """
    repeats = repeats or (QUICK_REPEATS if quick else DEFAULT_REPEATS)
    if max_train is None:
        max_train = QUICK_MAX_TRAIN if quick else DEFAULT_MAX_TRAIN
    max_train = max_train or None
    names = resolve_datasets(datasets, quick)
    specs = available_specs()
    missing = describe_missing(specs)
    if quick:
        specs = [spec for spec in specs if spec.quick]
    if estimators is not None:
        unknown = sorted(set(estimators) - {spec.name for spec in specs})
        if unknown:
            raise ValueError(
                f"unknown or unavailable estimators {unknown}; available: "
                f"{[spec.name for spec in specs]}"
            )
        specs = [spec for spec in specs if spec.name in set(estimators)]

    rows, skipped = [], []
    n_fits = len(names) * repeats * len(specs)
    done = 0
    suite_start = time.perf_counter()
    for dataset in names:
        X, y = _load(dataset, quick)
        y = np.asarray(y)
        n_classes = len(np.unique(y))
        # The model's input width (after one-hot encoding) decides the skips;
        # fitting the preprocessor on everything here only counts columns.
        width = make_uci_preprocessor().fit_transform(X).shape[1]
        reasons = {spec.name: spec.skip(width, n_classes) for spec in specs if spec.skip}
        for name, reason in reasons.items():
            if reason:
                skipped.append((dataset, name, reason))
                progress(f"{dataset}: {name} skipped, {reason}")
                n_fits -= repeats
        splitter = StratifiedShuffleSplit(
            n_splits=repeats, test_size=TEST_SIZE, random_state=random_state
        )
        for repeat, (train, test) in enumerate(splitter.split(np.zeros(len(y)), y)):
            seed = random_state + repeat
            X_test, y_test = _take(X, test), y[test]
            for spec in specs:
                if reasons.get(spec.name):
                    continue
                caps = [cap for cap in (max_train, spec.max_train) if cap]
                cap = min(caps) if caps else None
                used = train[subsample_indices(y[train], cap, seed)]
                record = _fit_one(
                    spec, _take(X, used), y[used], X_test, y_test,
                    seed=seed, device=device, n_classes=n_classes, tune=tune,
                )
                done += 1
                rows.append(
                    {
                        "dataset": dataset,
                        "estimator": spec.name,
                        "kind": spec.kind,
                        "repeat": repeat,
                        "seed": seed,
                        "n_train": len(used),
                        "n_test": len(test),
                        "n_features": X.shape[1],
                        "n_classes": n_classes,
                        "tuned": bool(tune and spec.grid),
                        **record,
                    }
                )
                status = (
                    f"FAILED {record['error'][:80]}" if record["error"]
                    else f"acc {record['accuracy']:.3f}  fit {record['fit_time']:.2f}s"
                )
                progress(
                    f"[{done}/{n_fits} {time.perf_counter() - suite_start:6.0f}s] "
                    f"{dataset} split {repeat + 1}/{repeats} {spec.name}: {status}"
                )

    columns = [
        "dataset", "estimator", "kind", "repeat", "seed", "n_train", "n_test", "n_features",
        "n_features_model", "n_classes", "tuned", "accuracy", "fit_time", "predict_time",
        "best_params", "warnings", "error",
    ]
    runs = pd.DataFrame(rows).reindex(columns=columns)
    summary = summarize(runs)
    ratios = ratios_to_baselines(summary)
    order = [spec.name for spec in specs]

    figures = []
    if not summary.empty and summary["accuracy_mean"].notna().any():
        plot_accuracy(summary, output_dir / "accuracy.png", order)
        plot_accuracy_vs_time(summary, output_dir / "accuracy_vs_time.png", order)
        figures = ["accuracy.png", "accuracy_vs_time.png"]

    markdown = _markdown(
        runs, summary, ratios, specs, missing, names, repeats, max_train, quick, tune, figures,
        skipped,
    )
    title = "Quick benchmark (scikit-learn's bundled datasets)" if quick else "UCI benchmark"
    return {
        "title": title,
        "markdown": markdown,
        "tables": {
            "runs": runs,
            "summary": summary,
            "ratios": ratios,
            "overall": overall_table(summary, order),
        },
        "figures": figures,
    }


def summarize(runs):
    """One row per dataset x estimator: accuracy mean and std, fit time median."""
    grouped = runs.groupby(["dataset", "estimator"], sort=False)
    summary = grouped.agg(
        kind=("kind", "first"),
        accuracy_mean=("accuracy", "mean"),
        accuracy_std=("accuracy", lambda values: float(np.std(values.dropna(), ddof=1))
                      if values.notna().sum() > 1 else np.nan),
        fit_time_median=("fit_time", "median"),
        n_runs=("accuracy", lambda values: int(values.notna().sum())),
        n_failed=("error", lambda values: int((values.fillna("") != "").sum())),
    ).reset_index()
    return summary[
        ["dataset", "estimator", "accuracy_mean", "accuracy_std", "fit_time_median",
         "n_runs", "kind", "n_failed"]
    ]


def ratios_to_baselines(summary):
    """Per dataset, each skquad estimator against each baseline."""
    rows = []
    for dataset, block in summary.groupby("dataset", sort=False):
        skquad = block[block["kind"] == "skquad"]
        baselines = block[block["kind"] == "baseline"]
        for _, ours in skquad.iterrows():
            for _, theirs in baselines.iterrows():
                rows.append(
                    {
                        "dataset": dataset,
                        "estimator": ours["estimator"],
                        "baseline": theirs["estimator"],
                        "accuracy_diff": ours["accuracy_mean"] - theirs["accuracy_mean"],
                        "accuracy_ratio": ours["accuracy_mean"] / theirs["accuracy_mean"],
                        "fit_time_ratio": ours["fit_time_median"] / theirs["fit_time_median"],
                    }
                )
    return pd.DataFrame(
        rows,
        columns=["dataset", "estimator", "baseline", "accuracy_diff", "accuracy_ratio",
                 "fit_time_ratio"],
    )


def _pivot_accuracy(summary, order, names, skipped=()):
    skipped = {(dataset, name) for dataset, name, _ in skipped}
    table = []
    for dataset in names:
        block = summary[summary["dataset"] == dataset].set_index("estimator")
        best = block["accuracy_mean"].max()
        row = [dataset]
        for name in order:
            if name not in block.index or np.isnan(block.loc[name, "accuracy_mean"]):
                row.append(
                    "failed" if name in block.index
                    else "skipped" if (dataset, name) in skipped else ""
                )
                continue
            cell = format_mean_std(
                100 * block.loc[name, "accuracy_mean"], 100 * block.loc[name, "accuracy_std"]
            )
            # Bold every estimator within 0.1 pp of the best on this dataset.
            if block.loc[name, "accuracy_mean"] >= best - 1e-3:
                cell = f"**{cell}**"
            row.append(cell)
        table.append(row)
    return markdown_table(["dataset", *order], table)


def _pivot_time(summary, order, names):
    table = []
    for dataset in names:
        block = summary[summary["dataset"] == dataset].set_index("estimator")
        row = [dataset]
        for name in order:
            value = block["fit_time_median"].get(name, np.nan)
            row.append("" if np.isnan(value) else f"{value:.3g}")
        table.append(row)
    return markdown_table(["dataset", *order], table)


def _ratio_table(ratios, summary):
    if ratios.empty:
        return "", []
    baselines = list(dict.fromkeys(ratios["baseline"]))
    rows, lines = [], []
    for name, block in ratios.groupby("estimator", sort=False):
        row = [name]
        for baseline in baselines:
            pair = block[block["baseline"] == baseline].dropna()
            if pair.empty:
                row.append("")
                continue
            diff = 100 * pair["accuracy_diff"].mean()
            wins = int((pair["accuracy_diff"] >= 0).sum())
            time_ratio = float(np.exp(np.log(pair["fit_time_ratio"]).mean()))
            row.append(f"{diff:+.1f} pp, {wins}/{len(pair)}, {time_ratio:.2g}x")
        rows.append(row)
    table = markdown_table(["skquad estimator", *baselines], rows)
    return table, baselines


def overall_table(summary, order):
    """Per estimator over the datasets: mean accuracy, mean rank, typical fit time."""
    valid = summary.dropna(subset=["accuracy_mean"])
    ranks = valid.groupby("dataset")["accuracy_mean"].rank(ascending=False, method="average")
    valid = valid.assign(rank=ranks)
    rows = []
    for name in order:
        block = valid[valid["estimator"] == name]
        if block.empty:
            continue
        rows.append(
            {
                "estimator": name,
                "kind": block["kind"].iloc[0],
                "n_datasets": len(block),
                "accuracy_mean": block["accuracy_mean"].mean(),
                "mean_rank": block["rank"].mean(),
                "fit_time_geomean": float(np.exp(np.log(block["fit_time_median"].clip(lower=1e-6)).mean())),
            }
        )
    return pd.DataFrame(rows).sort_values("mean_rank") if rows else pd.DataFrame(rows)


def _conclusions(summary, ratios, names):
    lines = []
    for dataset in names:
        block = summary[(summary["dataset"] == dataset) & summary["accuracy_mean"].notna()]
        if block.empty:
            continue
        best = block.loc[block["accuracy_mean"].idxmax()]
        skquad = block[block["kind"] == "skquad"]
        text = f"- **{dataset}**: best {best['estimator']} ({100 * best['accuracy_mean']:.1f} %)"
        if not skquad.empty and best["kind"] != "skquad":
            ours = skquad.loc[skquad["accuracy_mean"].idxmax()]
            gap = 100 * (best["accuracy_mean"] - ours["accuracy_mean"])
            text += f"; best skquad estimator {ours['estimator']} {gap:.1f} pp behind"
        lines.append(text + ".")
    overall = []
    baselines = summary[summary["kind"] == "baseline"].dropna(subset=["accuracy_mean"])
    best_baseline = baselines.groupby("dataset")["accuracy_mean"].max()
    for name, block in summary[summary["kind"] == "skquad"].groupby("estimator", sort=False):
        block = block.dropna(subset=["accuracy_mean"]).set_index("dataset")
        common = block.index.intersection(best_baseline.index)
        if common.empty:
            continue
        gap = 100 * (block.loc[common, "accuracy_mean"] - best_baseline.loc[common])
        text = (
            f"- {name}: {gap.mean():+.1f} pp on average against the best baseline of each "
            f"dataset, at least as accurate on {int((gap >= 0).sum())} of {len(common)} datasets"
        )
        pairs = ratios[(ratios["estimator"] == name)].dropna()
        if not pairs.empty:
            by_baseline = pairs.groupby("baseline")["accuracy_diff"].mean()
            closest = by_baseline.idxmax() if by_baseline.max() < 0 else None
            time_vs_mlp = pairs[pairs["baseline"] == "MLP"]["fit_time_ratio"]
            if closest is not None:
                text += f"; behind every baseline on average, least behind {closest}"
            if not time_vs_mlp.empty:
                text += (
                    f"; fit time {float(np.exp(np.log(time_vs_mlp).mean())):.2g}x "
                    "MLPClassifier's (geometric mean)"
                )
        overall.append(text + ".")
    return lines, overall


def _markdown(runs, summary, ratios, specs, missing, names, repeats, max_train, quick, tune, figures,
              skipped):
    order = [spec.name for spec in specs]
    parts = []
    source = (
        "scikit-learn's bundled datasets" if quick
        else "the UCI datasets of the data directory (ARFF, see `skquad.datasets.load_uci`)"
    )
    parts.append(
        f"Datasets: {', '.join(names)} from {source}. Protocol: {repeats} stratified shuffle "
        f"split(s) per dataset, {int(TEST_SIZE * 100)} % test; every estimator is a Pipeline "
        "`make_uci_preprocessor()` (impute + one-hot nominal, impute + standardize numeric) "
        "then the model, fitted on the training part only. "
        + (f"Training parts are capped at {max_train} samples (stratified subsample; the test "
           "part is always the full 25 %). " if max_train else "")
        + ("Each estimator is tuned by a nested 3-fold GridSearchCV on the training part "
           "(its fit time includes the search). " if tune else "Default settings, no tuning. ")
        + "Accuracy is mean ± std over the splits in percent; fit time is the median wall time "
        "of `fit`, in seconds, on a machine shared with other jobs (so ratios are more "
        "telling than absolute times)."
    )
    parts.append("\n### Estimators\n")
    estimator_rows = [
        [spec.name, spec.kind, spec.settings, spec.max_train or ""] for spec in specs
    ]
    parts.append(markdown_table(["name", "kind", "settings", "training cap"], estimator_rows))
    if missing:
        parts.append(
            f"\nNot available in this installation (not run): {', '.join(missing)}."
        )
    parts.append("\n### Test accuracy (%)\n")
    parts.append(_pivot_accuracy(summary, order, names, skipped))
    parts.append("\nBold: best on the dataset (within 0.1 pp).\n\n### Fit time (median seconds)\n")
    parts.append(_pivot_time(summary, order, names))
    ratio_table, _ = _ratio_table(ratios, summary)
    if ratio_table:
        parts.append(
            "\n### skquad estimators against the baselines\n\nEach cell: mean accuracy "
            "difference in percentage points (skquad minus baseline) over the datasets, the "
            "number of datasets where the skquad estimator is at least as accurate, and the "
            "geometric mean of the fit-time ratio (skquad / baseline; below 1 is faster). "
            "Per-dataset values are in `ratios.csv`.\n"
        )
        parts.append(ratio_table)
    overall_rows = overall_table(summary, order)
    if not overall_rows.empty:
        parts.append(
            "\n### Over all datasets\n\nMean test accuracy over the datasets, mean rank "
            "(1 = most accurate on a dataset) and the geometric mean of the fit time.\n"
        )
        parts.append(
            markdown_table(
                ["estimator", "kind", "datasets", "mean accuracy (%)", "mean rank", "fit time (s)"],
                [
                    [row.estimator, row.kind, row.n_datasets, f"{100 * row.accuracy_mean:.1f}",
                     f"{row.mean_rank:.1f}", f"{row.fit_time_geomean:.3g}"]
                    for row in overall_rows.itertuples()
                ],
            )
        )
    per_dataset, overall = _conclusions(summary, ratios, names)
    parts.append("\n### What the numbers say\n")
    parts.extend(per_dataset)
    if overall:
        parts.append("")
        parts.extend(overall)
    if skipped:
        parts.append("\n### Skipped\n")
        parts.append(markdown_table(["dataset", "estimator", "reason"], [list(item) for item in skipped]))
    failures = runs[runs["error"].fillna("") != ""]
    if not failures.empty:
        parts.append("\n### Failed fits\n")
        failed_rows = (
            failures.groupby(["dataset", "estimator"])["error"].first().reset_index().values.tolist()
        )
        parts.append(markdown_table(["dataset", "estimator", "error"], failed_rows))
    warned = runs[runs["warnings"].fillna("") != ""]
    if not warned.empty:
        counts = warned.groupby("estimator")["warnings"].count()
        parts.append(
            "\nFits that raised warnings (details in `runs.csv`): "
            + ", ".join(f"{name} {count}" for name, count in counts.items())
            + "."
        )
    for figure in figures:
        caption = {
            "accuracy.png": "Test accuracy per dataset",
            "accuracy_vs_time.png": "Accuracy against fit time",
        }.get(figure, figure)
        parts.append(f"\n![{caption}]({figure})")
    return "\n".join(parts) + "\n"
