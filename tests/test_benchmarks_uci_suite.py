"""skquad/benchmarks/_uci_suite.py: the uci suite (quick and on a UCI dataset), its report and failures."""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad.benchmarks import __main__ as cli
from skquad.benchmarks._estimators import EstimatorSpec, default_specs
from skquad.benchmarks._uci_suite import run as run_uci


SUMMARY_COLUMNS = ["dataset", "estimator", "accuracy_mean", "accuracy_std", "fit_time_median", "n_runs"]


RUN_COLUMNS = ["dataset", "estimator", "repeat", "seed", "n_train", "n_test", "accuracy", "fit_time", "error"]


needs_data = pytest.mark.skipif(
    not os.environ.get("SKQUAD_DATA") or not Path(os.environ["SKQUAD_DATA"]).is_dir(),
    reason="SKQUAD_DATA does not point at the UCI ARFF folder",
)


def test_quick_cli_writes_report_csvs_and_plots(tmp_path, capsys):
    output = tmp_path / "quick"
    status = cli.main(["--quick", "--datasets", "iris", "--repeats", "1", "--output", str(output)])
    assert status == 0
    for name in ["report.md", "runs.csv", "summary.csv", "ratios.csv", "machine.txt",
                 "accuracy.png", "accuracy_vs_time.png"]:
        assert (output / name).is_file(), name
    assert (output / "accuracy.png").read_bytes()[:4] == b"\x89PNG"

    runs = pd.read_csv(output / "runs.csv")
    summary = pd.read_csv(output / "summary.csv")
    assert set(RUN_COLUMNS) <= set(runs.columns)
    assert list(summary.columns[: len(SUMMARY_COLUMNS)]) == SUMMARY_COLUMNS
    names = [spec.name for spec in default_specs() if spec.quick]
    assert sorted(runs["estimator"]) == sorted(names)  # one split, every estimator once
    assert runs["error"].isna().all(), runs.loc[runs["error"].notna(), ["estimator", "error"]]
    assert runs["accuracy"].between(0, 1).all() and (runs["fit_time"] > 0).all()
    assert (runs["n_train"] + runs["n_test"] == 150).all()
    # Every available skquad estimator learns iris.
    skquad_runs = runs[runs["kind"] == "skquad"]
    assert (skquad_runs["accuracy"] > 0.8).all(), skquad_runs[["estimator", "accuracy"]]

    # The benchmark's number for LogReg is the one a user gets by hand with the
    # same split and the same pipeline.
    X, y = load_iris(return_X_y=True)
    train, test = next(StratifiedShuffleSplit(1, test_size=0.25, random_state=0).split(X, y))
    by_hand = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X[train], y[train])
    logreg = runs.loc[runs["estimator"] == "LogReg", "accuracy"].item()
    assert logreg == pytest.approx(by_hand.score(X[test], y[test]))

    report = (output / "report.md").read_text()
    assert "### Test accuracy (%)" in report and "](accuracy.png)" in report
    assert "iris" in report and "LogReg" in report
    machine = (output / "machine.txt").read_text()
    assert "command: python -m skquad.benchmarks --quick --datasets iris" in machine
    assert "scikit-learn" in machine and "torch" in machine
    assert "blas:" in machine  # the BLAS libraries threadpoolctl sees, with their threads
    assert os.environ.get("SKQUAD_DATA", "no such path") not in machine  # no local paths
    captured = capsys.readouterr()
    assert "iris split 1/1 LogReg: acc" in captured.err  # progress goes to stderr
    assert "[1/11 " in captured.err and "[11/11 " in captured.err  # one total for the run
    assert "run()" not in captured.err and "_uci_suite" not in captured.err
    assert captured.out.strip().endswith("report.md")


def test_a_failing_estimator_is_recorded_not_fatal(tmp_path, monkeypatch):
    def explode(seed, device):
        raise ValueError("cannot build")

    specs = [
        EstimatorSpec("Broken", "skquad", explode, "always fails"),
        EstimatorSpec("LogReg", "baseline", lambda seed, device: LogisticRegression(), "lr"),
    ]
    monkeypatch.setattr("skquad.benchmarks._protocol.default_specs", lambda: specs)
    result = run_uci(output_dir=tmp_path, quick=True, repeats=1, datasets=["wine"], progress=lambda m: None)
    runs = result["tables"]["runs"]
    broken = runs[runs["estimator"] == "Broken"].iloc[0]
    assert broken["error"] == "ValueError: cannot build" and np.isnan(broken["accuracy"])
    assert runs.loc[runs["estimator"] == "LogReg", "accuracy"].item() > 0.9
    assert "### Failed fits" in result["markdown"] and "cannot build" in result["markdown"]


def test_nested_tuning_records_best_parameters(tmp_path):
    result = run_uci(
        output_dir=tmp_path, quick=True, repeats=1, datasets=["iris"],
        estimators=["LogReg"], tune=True, progress=lambda m: None,
    )
    runs = result["tables"]["runs"]
    assert runs["tuned"].all()
    assert runs["best_params"].item().startswith("{'C': ")


@needs_data
def test_uci_suite_on_a_uci_dataset_with_training_cap(tmp_path):
    result = run_uci(
        output_dir=tmp_path, repeats=2, datasets=["credit-approval"], estimators=["LogReg", "SVC-rbf"],
        max_train=200, progress=lambda m: None,
    )
    runs, summary = result["tables"]["runs"], result["tables"]["summary"]
    assert (runs["dataset"] == "credit.a").all()
    assert (runs["n_train"] == 200).all() and (runs["n_test"] == 173).all()
    assert list(summary.columns[: len(SUMMARY_COLUMNS)]) == SUMMARY_COLUMNS
    assert summary["n_runs"].tolist() == [2, 2]
    # Credit approval with nominal features and missing values: both well above chance.
    assert (summary["accuracy_mean"] > 0.8).all()
    assert "capped at 200 samples" in result["markdown"]
