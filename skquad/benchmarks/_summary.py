"""Tables and the Markdown narrative of a benchmark run (what the numbers say)."""

import numpy as np

from ._report import format_mean_std, markdown_table

__all__ = ["markdown_section", "overall_table", "ratios_to_baselines", "summarize"]


def summarize(runs):
    """One row per dataset x estimator: accuracy mean and std, fit time median, parameters."""
    grouped = runs.groupby(["dataset", "estimator"], sort=False)
    summary = grouped.agg(
        kind=("kind", "first"),
        accuracy_mean=("accuracy", "mean"),
        accuracy_std=("accuracy", lambda values: float(np.std(values.dropna(), ddof=1))
                      if values.notna().sum() > 1 else np.nan),
        fit_time_median=("fit_time", "median"),
        n_parameters=("n_parameters", "median"),
        n_runs=("accuracy", lambda values: int(values.notna().sum())),
        n_failed=("error", lambda values: int((values.fillna("") != "").sum())),
    ).reset_index()
    return summary[
        ["dataset", "estimator", "accuracy_mean", "accuracy_std", "fit_time_median",
         "n_runs", "kind", "n_failed", "n_parameters"]
    ]


def ratios_to_baselines(summary):
    """Per dataset, each skquad estimator (and yours) against each baseline."""
    import pandas as pd

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


def _pivot_accuracy(summary, order, names):
    table = []
    for dataset in names:
        block = summary[summary["dataset"] == dataset].set_index("estimator")
        best = block["accuracy_mean"].max()
        row = [dataset]
        for name in order:
            if name not in block.index or np.isnan(block.loc[name, "accuracy_mean"]):
                row.append("failed" if name in block.index else "")
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


def _ratio_table(ratios, summary):
    if ratios.empty:
        return "", []
    baselines = list(dict.fromkeys(ratios["baseline"]))
    rows = []
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
    import pandas as pd

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
                "n_parameters_median": block["n_parameters"].median(),
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
        skquad = block[block["kind"] != "baseline"]
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


def markdown_section(runs, summary, ratios, *, specs, names, source, repeats, test_size,
                     max_train, tune):
    """The Markdown of one benchmark run: protocol, tables, conclusions, figure links."""
    order = [spec.name for spec in specs]
    parts = []
    parts.append(
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
    parts.append("\n### Estimators\n")
    parts.append(markdown_table(["name", "kind", "estimator and settings"],
                                [[spec.name, spec.kind, spec.settings] for spec in specs]))
    parts.append("\n### Test accuracy (%)\n")
    parts.append(_pivot_accuracy(summary, order, names))
    parts.append("\nBold: best on the dataset (within 0.1 pp).\n\n### Fit time (median seconds)\n")
    parts.append(_pivot(summary, order, names, "fit_time_median", ".3g"))
    parts.append(
        "\n### Learned parameters (median count)\n\nNumbers stored in the fitted model's "
        "weights; blank where the model is not a set of weights (tree ensembles).\n"
    )
    parts.append(_pivot(summary, order, names, "n_parameters", ",.0f"))
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
            "(1 = most accurate on a dataset), the geometric mean of the fit time and the median "
            "number of learned parameters.\n"
        )
        parts.append(
            markdown_table(
                ["estimator", "kind", "datasets", "mean accuracy (%)", "mean rank", "fit time (s)",
                 "parameters (median)"],
                [
                    [row.estimator, row.kind, row.n_datasets, f"{100 * row.accuracy_mean:.1f}",
                     f"{row.mean_rank:.1f}", f"{row.fit_time_geomean:.3g}",
                     "" if np.isnan(row.n_parameters_median) else f"{row.n_parameters_median:,.0f}"]
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
