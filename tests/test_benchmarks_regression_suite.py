"""skquad/benchmarks/_regression_suite.py: the regression suite's report, its command-line errors, the best-against-baselines table."""

import pandas as pd
import pytest

from skquad.benchmarks import __main__ as cli


def test_the_quick_regression_suite_writes_its_report(tmp_path, capsys):
    output = tmp_path / "regression"
    status = cli.main(["--suite", "regression", "--quick", "--estimators", "QuadReg", "Ridge",
                       "HistGB", "--folds", "2", "--output", str(output)])
    assert status == 0
    for name in ["report.md", "runs.csv", "summary.csv", "ratios.csv", "overall.csv",
                 "r2.png", "r2_vs_time.png"]:
        assert (output / name).is_file(), name
    runs = pd.read_csv(output / "runs.csv")
    assert len(runs) == 3 * 2 and runs["dataset"].eq("diabetes").all()
    assert runs["r2"].between(0.2, 0.8).all()  # diabetes: R² about 0.4 to 0.5 for all three
    report = (output / "report.md").read_text()
    assert "# Quick regression benchmark" in report and "](r2.png)" in report
    assert "### Best skquad regressor against the best baseline" in report
    assert (output / "best_against_baselines.csv").is_file()
    assert "diabetes repeat 1/1 fold 2/2 Ridge: R2" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--suite", "regression", "--datasets", "boston"], "unknown regression dataset 'boston'"),
        (["--suite", "regression", "--quick", "--datasets", "concrete"], "for --quick"),
        (["--suite", "regression", "--estimators", "QLR"], "unknown ['QLR']"),
        (["--suite", "uci", "--folds", "3"], "--folds applies to --suite regression only"),
        (["--suite", "regression", "--folds", "1"], "--folds: expected at least 2"),
    ],
)
def test_regression_cli_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--output", str(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_best_against_baselines_reads_the_accuracy_target():
    from skquad.benchmarks._regression_suite import best_against_baselines

    summary = pd.DataFrame({
        "dataset": ["a", "a", "a", "b", "b"],
        "estimator": ["QuadReg", "QNN", "HistGB", "QuadReg", "Ridge"],
        "kind": ["skquad", "skquad", "baseline", "skquad", "baseline"],
        "r2_mean": [0.80, 0.85, 0.86, 0.50, 0.60],
    })
    best = best_against_baselines(summary).set_index("dataset")
    assert best.loc["a", "skquad"] == "QNN" and best.loc["a", "difference"] == pytest.approx(-0.01)
    assert best.loc["a", "within"] and not best.loc["a", "ahead"]
    assert not best.loc["b", "within"] and best.loc["b", "baseline"] == "Ridge"
