"""Tables and the Markdown narrative of a benchmark run (what the numbers say)."""

import numpy as np

from ._report import ACCURACY, format_mean_std, markdown_table

__all__ = ["markdown_section", "overall_table", "ratios_to_baselines", "summarize"]


def summarize(runs, score=ACCURACY):
    """One row per dataset x estimator: score mean and std, fit time median, parameters.

    Regression runs (an ``rmse`` column) also get ``rmse_mean`` and ``rmse_std``.
    """
    column = score.column

    def std(values):
        return float(np.std(values.dropna(), ddof=1)) if values.notna().sum() > 1 else np.nan

    grouped = runs.groupby(["dataset", "estimator"], sort=False)
    extra = {}
    if "rmse" in runs.columns:
        extra = {"rmse_mean": ("rmse", "mean"), "rmse_std": ("rmse", std)}
    summary = grouped.agg(
        kind=("kind", "first"),
        **{f"{column}_mean": (column, "mean"), f"{column}_std": (column, std)},
        fit_time_median=("fit_time", "median"),
        n_parameters=("n_parameters", "median"),
        n_runs=(column, lambda values: int(values.notna().sum())),
        n_failed=("error", lambda values: int((values.fillna("") != "").sum())),
        **extra,
    ).reset_index()
    return summary[
        ["dataset", "estimator", f"{column}_mean", f"{column}_std", "fit_time_median",
         "n_runs", "kind", "n_failed", "n_parameters", *extra]
    ]


def ratios_to_baselines(summary, score=ACCURACY):
    """Per dataset, each skquad estimator (and yours) against each baseline."""
    import pandas as pd

    mean = f"{score.column}_mean"
    rows = []
    for dataset, block in summary.groupby("dataset", sort=False):
        skquad = block[block["kind"] != "baseline"]
        baselines = block[block["kind"] == "baseline"]
        for _, ours in skquad.iterrows():
            for _, theirs in baselines.iterrows():
                rows.append(
                    {
                        "dataset": dataset,
                        "estimator": ours["estimator"],
                        "baseline": theirs["estimator"],
                        f"{score.column}_diff": ours[mean] - theirs[mean],
                        f"{score.column}_ratio": ours[mean] / theirs[mean],
                        "fit_time_ratio": ours["fit_time_median"] / theirs["fit_time_median"],
                    }
                )
    return pd.DataFrame(
        rows,
        columns=["dataset", "estimator", "baseline", f"{score.column}_diff",
                 f"{score.column}_ratio", "fit_time_ratio"],
    )


def _pivot_accuracy(summary, order, names, score=ACCURACY):
    mean, spread = f"{score.column}_mean", f"{score.column}_std"
    table = []
    for dataset in names:
        block = summary[summary["dataset"] == dataset].set_index("estimator")
        best = block[mean].max()
        row = [dataset]
        for name in order:
            if name not in block.index or np.isnan(block.loc[name, mean]):
                row.append("failed" if name in block.index else "")
                continue
            cell = format_mean_std(
                score.scale * block.loc[name, mean], score.scale * block.loc[name, spread],
                digits=score.digits,
            )
            # Bold every estimator within 1e-3 of the best on this dataset
            # (0.1 pp of accuracy, 0.001 of R²).
            if block.loc[name, mean] >= best - 1e-3:
                cell = f"**{cell}**"
            row.append(cell)
        table.append(row)
    return markdown_table(["dataset", *order], table)


def _pivot(summary, order, names, column, fmt):
    """One row per dataset, one ``column`` value per estimator (blank where missing)."""
    table = []
    for dataset in names:
        block = summary[summary["dataset"] == dataset].set_index("estimator")
        row = [dataset]
        for name in order:
            value = block[column].get(name, np.nan)
            row.append("" if np.isnan(value) else format(value, fmt))
        table.append(row)
    return markdown_table(["dataset", *order], table)


def _ratio_table(ratios, score=ACCURACY):
    if ratios.empty:
        return ""
    baselines = list(dict.fromkeys(ratios["baseline"]))
    rows = []
    for name, block in ratios.groupby("estimator", sort=False):
        row = [name]
        for baseline in baselines:
            pair = block[block["baseline"] == baseline].dropna()
            if pair.empty:
                row.append("")
                continue
            diff = score.scale * pair[f"{score.column}_diff"].mean()
            wins = int((pair[f"{score.column}_diff"] >= 0).sum())
            time_ratio = float(np.exp(np.log(pair["fit_time_ratio"]).mean()))
            row.append(
                f"{diff:+.{score.digits}f} {score.unit}, {wins}/{len(pair)}, {time_ratio:.2g}x"
            )
        rows.append(row)
    return markdown_table(["skquad estimator", *baselines], rows)


def overall_table(summary, order, score=ACCURACY):
    """Per estimator over the datasets: mean score, mean rank, typical fit time."""
    import pandas as pd

    mean = f"{score.column}_mean"
    valid = summary.dropna(subset=[mean])
    ranks = valid.groupby("dataset")[mean].rank(ascending=False, method="average")
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
                mean: block[mean].mean(),
                "mean_rank": block["rank"].mean(),
                "fit_time_geomean": float(np.exp(np.log(block["fit_time_median"].clip(lower=1e-6)).mean())),
                "n_parameters_median": block["n_parameters"].median(),
            }
        )
    return pd.DataFrame(rows).sort_values("mean_rank") if rows else pd.DataFrame(rows)


def _conclusions(summary, ratios, names, score=ACCURACY):
    mean = f"{score.column}_mean"
    digits, unit = score.digits, score.unit

    def shown(value):
        return f"{score.scale * value:.{digits}f}"

    lines = []
    for dataset in names:
        block = summary[(summary["dataset"] == dataset) & summary[mean].notna()]
        if block.empty:
            continue
        best = block.loc[block[mean].idxmax()]
        skquad = block[block["kind"] != "baseline"]
        text = (
            f"- **{dataset}**: best {best['estimator']} ({shown(best[mean])}"
            + (" %" if score.scale == 100 else f" {score.name}") + ")"
        )
        if not skquad.empty and best["kind"] != "skquad":
            ours = skquad.loc[skquad[mean].idxmax()]
            gap = score.scale * (best[mean] - ours[mean])
            text += f"; best skquad estimator {ours['estimator']} {gap:.{digits}f} {unit} behind"
        lines.append(text + ".")
    overall = []
    baselines = summary[summary["kind"] == "baseline"].dropna(subset=[mean])
    best_baseline = baselines.groupby("dataset")[mean].max()
    mlp = next((name for name in summary["estimator"] if name.startswith("MLP")), "MLP")
    for name, block in summary[summary["kind"] == "skquad"].groupby("estimator", sort=False):
        block = block.dropna(subset=[mean]).set_index("dataset")
        common = block.index.intersection(best_baseline.index)
        if common.empty:
            continue
        gap = score.scale * (block.loc[common, mean] - best_baseline.loc[common])
        text = (
            f"- {name}: {gap.mean():+.{digits}f} {unit} on average against the best baseline "
            f"of each dataset, at least as {'accurate' if score.scale == 100 else 'good'} on "
            f"{int((gap >= 0).sum())} of {len(common)} datasets"
        )
        pairs = ratios[(ratios["estimator"] == name)].dropna()
        if not pairs.empty:
            by_baseline = pairs.groupby("baseline")[f"{score.column}_diff"].mean()
            closest = by_baseline.idxmax() if by_baseline.max() < 0 else None
            time_vs_mlp = pairs[pairs["baseline"] == mlp]["fit_time_ratio"]
            if closest is not None:
                text += f"; behind every baseline on average, least behind {closest}"
            if not time_vs_mlp.empty:
                text += (
                    f"; fit time {float(np.exp(np.log(time_vs_mlp).mean())):.2g}x "
                    f"{'MLPClassifier' if score is ACCURACY else 'MLPRegressor'}'s (geometric mean)"
                )
        overall.append(text + ".")
    return lines, overall


def markdown_section(runs, summary, ratios, *, specs, names, source, repeats, test_size,
                     max_train, tune, score=ACCURACY, protocol=None, notes=()):
    """The Markdown of one benchmark run: protocol, tables, conclusions, figure links.

    ``protocol`` replaces the classification protocol's paragraph (the
    regression protocol writes its own); ``notes`` are lines added after it.
    """
    order = [spec.name for spec in specs]
    parts = []
    parts.append(protocol or 
        f"Datasets: {', '.join(names)} ({source}). Protocol: {repeats} stratified shuffle "
        f"split(s) per dataset, {round(test_size * 100)} % test; every estimator is a Pipeline "
        "`make_uci_preprocessor()` (impute + one-hot nominal, impute + standardize numeric) "
        "then the model, fitted on the training part only. "
        + (f"Training parts are capped at {max_train} samples (stratified subsample; the test "
           "part is always the full test split). " if max_train else "")
        + ("Each estimator is tuned by a nested 3-fold GridSearchCV on the training part "
           "(its fit time includes the search). " if tune else "Default settings, no tuning. ")
        + "Accuracy is mean ± std over the splits in percent; fit time is the median wall time "
        "of `fit`, in seconds, on a machine shared with other jobs (so ratios are more "
        "telling than absolute times)."
    )
    parts.extend(f"\n{note}" for note in notes)
    parts.append("\n### Estimators\n")
    parts.append(markdown_table(["name", "kind", "estimator and settings"],
                                [[spec.name, spec.kind, spec.settings] for spec in specs]))
    parts.append(f"\n### {score.label[0].upper() + score.label[1:]}\n")
    parts.append(_pivot_accuracy(summary, order, names, score))
    parts.append(
        f"\nBold: best on the dataset (within {score.scale * 1e-3:g} {score.unit}).\n"
    )
    if "rmse_mean" in summary.columns:
        parts.append(
            "\n### Test RMSE (mean over the splits, in the target's units)\n\nThe root mean "
            "squared error on the original scale (after undoing any log of the target), averaged "
            "over the outputs of a multi-output target.\n"
        )
        parts.append(_pivot(summary, order, names, "rmse_mean", ".4g"))
    parts.append("\n### Fit time (median seconds)\n")
    parts.append(_pivot(summary, order, names, "fit_time_median", ".3g"))
    parts.append(
        "\n### Learned parameters (median count)\n\nNumbers stored in the fitted model's "
        "weights; blank where the model is not a set of weights (tree ensembles).\n"
    )
    parts.append(_pivot(summary, order, names, "n_parameters", ",.0f"))
    ratio_table = _ratio_table(ratios, score)
    if ratio_table:
        parts.append(
            f"\n### skquad estimators against the baselines\n\nEach cell: mean {score.name} "
            f"difference ({score.unit}, skquad minus baseline) over the datasets, the "
            "number of datasets where the skquad estimator is at least as good, and the "
            "geometric mean of the fit-time ratio (skquad / baseline; below 1 is faster). "
            "Per-dataset values are in `ratios.csv`.\n"
        )
        parts.append(ratio_table)
    overall_rows = overall_table(summary, order, score)
    if not overall_rows.empty:
        parts.append(
            f"\n### Over all datasets\n\nMean {score.label} over the datasets, mean rank "
            f"(1 = best {score.name} on a dataset), the geometric mean of the fit time and the "
            "median number of learned parameters.\n"
        )
        parts.append(
            markdown_table(
                ["estimator", "kind", "datasets", f"mean {score.label}", "mean rank",
                 "fit time (s)", "parameters (median)"],
                [
                    [row.estimator, row.kind, row.n_datasets,
                     f"{score.scale * getattr(row, f'{score.column}_mean'):.{score.digits}f}",
                     f"{row.mean_rank:.1f}", f"{row.fit_time_geomean:.3g}",
                     "" if np.isnan(row.n_parameters_median) else f"{row.n_parameters_median:,.0f}"]
                    for row in overall_rows.itertuples()
                ],
            )
        )
    per_dataset, overall = _conclusions(summary, ratios, names, score)
    parts.append("\n### What the numbers say\n")
    parts.extend(per_dataset)
    if overall:
        parts.append("")
        parts.extend(overall)
    failures = runs[runs["error"].fillna("") != ""]
    if not failures.empty:
        parts.append("\n### Failed fits\n")
        failed_rows = (
            failures.groupby(["dataset", "estimator"])["error"].first().reset_index().values.tolist()
        )
        parts.append(markdown_table(["dataset", "estimator", "error"], failed_rows))
    warned = runs[runs["warnings"].fillna("") != ""]
    if not warned.empty:
        parts.append("\n### Warnings\n\nFits that raised warnings (every fit's in `runs.csv`):\n")
        rows = [
            [name, len(block), block["warnings"].iloc[0][:200]]
            for name, block in warned.groupby("estimator", sort=False)
        ]
        parts.append(markdown_table(["estimator", "fits", "first message"], rows))
    return "\n".join(parts) + "\n"
