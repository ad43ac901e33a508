"""skquad/benchmarks/_robustness_suite.py: the worst-split table, the targets, the command."""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from skquad.benchmarks import __main__ as cli
from skquad.benchmarks._robustness_suite import split_table, targets

needs_data = pytest.mark.skipif(
    not os.environ.get("SKQUAD_DATA") or not Path(os.environ["SKQUAD_DATA"]).is_dir(),
    reason="SKQUAD_DATA does not point at the shared datasets",
)


def _runs(scores):
    """A runs table from ``{(dataset, estimator, kind): [score per split]}``."""
    rows = [
        {"dataset": dataset, "estimator": name, "kind": kind, "repeat": repeat, "r2": score,
         "fit_time": 1.0}
        for (dataset, name, kind), values in scores.items()
        for repeat, score in enumerate(values)
    ]
    return pd.DataFrame(rows)


def test_split_table_counts_the_splits_below_the_reference_on_the_same_split():
    runs = _runs({
        ("a", "QuadReg", "skquad"): [0.50, 0.30, np.nan],  # below Ridge by 0.2 on split 1; failed on 2
        ("a", "Ridge", "baseline"): [0.55, 0.50, 0.40],
    })
    table = split_table(runs, "r2", "Ridge", 0.1).set_index("estimator")
    assert table.loc["QuadReg", "catastrophic"] == 2
    assert table.loc["Ridge", "catastrophic"] == 0
    assert np.isnan(table.loc["QuadReg", "r2_mean"])  # a failed split is not averaged away
    assert table.loc["Ridge", "r2_worst"] == pytest.approx(0.40)


def test_targets_read_the_mean_and_the_worst_split_and_the_best_baseline():
    runs = _runs({
        ("a", "QuadReg", "skquad"): [0.80, 0.78],
        ("a", "QNN", "skquad"): [0.85, 0.30],  # mean 0.575 fine, worst 0.30 < 0.70 - 0.1
        ("a", "Ridge", "baseline"): [0.75, 0.70],
        ("a", "HistGB", "baseline"): [0.81, 0.80],
        ("b", "QuadReg", "skquad"): [0.50, 0.50],
        ("b", "QNN", "skquad"): [0.40, 0.40],
        ("b", "Ridge", "baseline"): [0.60, 0.60],
    })
    failures, best, met = targets(split_table(runs, "r2", "Ridge", 0.1))
    assert failures == [("a", "QNN"), ("b", "QNN")]
    best = best.set_index("dataset")
    assert best.loc["a", "skquad"] == "QuadReg" and best.loc["a", "baseline"] == "HistGB"
    assert best.loc["a", "within"]  # 0.79 against 0.805
    assert not best.loc["b", "within"]
    assert not met  # 1 of 2 sets, and ceil(5/7 * 2) = 2 are needed


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--suite", "robustness", "--datasets", "boston"], "unknown ['boston']"),
        (["--suite", "robustness", "--estimators", "Lasso"], "unknown ['Lasso']"),
        (["--suite", "robustness", "--folds", "3"], "--folds applies to --suite regression only"),
    ],
)
def test_robustness_cli_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--output", str(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@needs_data
def test_the_suite_writes_both_parts_with_the_targets(tmp_path):
    output = tmp_path / "robustness"
    status = cli.main(["--suite", "robustness", "--datasets", "cpus", "breast.cancer",
                       "--estimators", "QuadReg", "Ridge", "QLR", "LogReg", "--repeats", "2",
                       "--output", str(output)])
    assert status == 0
    report = (output / "report.md").read_text()
    assert "## Regression at defaults" in report and "## Classification at defaults" in report
    assert "no skquad regressor's mean or worst split" in report
    assert "the skquad models clip their inputs" in report
    runs = pd.read_csv(output / "robustness_suite_regression_runs.csv")
    assert set(runs["estimator"]) == {"QuadReg", "Ridge"} and len(runs) == 4
    assert runs["n_test"].eq(53).all()  # 25 % of cpus' 209 rows, shuffled splits
    splits = pd.read_csv(output / "robustness_suite_classification_splits.csv")
    assert set(splits["estimator"]) == {"QLR", "LogReg"}
