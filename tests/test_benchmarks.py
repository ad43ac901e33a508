"""Tests of the benchmark API (run_benchmark) and command (python -m skquad.benchmarks)."""

import os
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedShuffleSplit
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticLogisticRegression
from skquad.benchmarks import BenchmarkResult, run_benchmark
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


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--suite", "nope"], "invalid choice: 'nope'"),
        (["--datasets", "no-such-data"], "unknown dataset 'no-such-data'"),
        (["--quick", "--datasets", "credit.a"], "unknown dataset 'credit.a' for --quick"),
        (["--estimators", "Magic"], "unknown ['Magic']"),
        (["--repeats", "0"], "expected a positive integer"),
        (["--suite", "speed", "--tune"], "--tune applies to --suite uci or regression only"),
        (["--suite", "speed", "--jobs", "2"], "--jobs applies to --suite uci or regression only"),
        (["--jobs", "0"], "argument --jobs"),
    ],
)
def test_cli_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--output", str(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_module_entry_point_reports_an_unknown_suite():
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-m", "skquad.benchmarks", "--suite", "paper999"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert completed.returncode == 2
    assert "invalid choice: 'paper999'" in completed.stderr
    assert "choose from" in completed.stderr and "uci" in completed.stderr


def test_cli_rejects_cuda_without_cuda(capsys, monkeypatch, tmp_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit):
        cli.main(["--quick", "--device", "cuda", "--output", str(tmp_path)])
    assert "CUDA is not available" in capsys.readouterr().err


def test_multi_part_suite_combines_sections_and_reports_failed_parts(tmp_path, monkeypatch):
    module = types.ModuleType("skquad.benchmarks._fake_part")

    def speed(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
        import matplotlib.pyplot as plt

        assert output_dir.is_dir() and quick and repeats == 2 and datasets == ["a"]
        progress("fake part running")
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        fig.savefig(output_dir / "curve.png")
        plt.close(fig)
        table = pd.DataFrame({"size": [1, 2], "ratio": [0.5, 0.7]})
        return {"title": "Fake", "markdown": "Ratio 0.5.\n\n![curve](curve.png)\n",
                "tables": {"ratios": table, "fake_part_times": table}, "figures": ["curve.png"]}

    def broken(**kwargs):
        raise RuntimeError("solver exploded")

    module.speed = speed
    module.broken = broken
    monkeypatch.setitem(sys.modules, "skquad.benchmarks._fake_part", module)
    monkeypatch.setitem(
        cli.SUITES, "speed",
        [("_fake_part", "speed"), ("_fake_part", "broken")],
    )
    status = cli.main(["--suite", "speed", "--quick", "--repeats", "2", "--datasets", "a",
                       "--output", str(tmp_path)])
    assert status == 1  # one part failed
    report = (tmp_path / "report.md").read_text()
    assert "## Fake" in report and "](fake_part/curve.png)" in report
    assert (tmp_path / "fake_part" / "curve.png").is_file()
    assert pd.read_csv(tmp_path / "fake_part_ratios.csv")["ratio"].tolist() == [0.5, 0.7]
    assert (tmp_path / "fake_part_times.csv").is_file()  # not fake_part_fake_part_times.csv
    assert "failed: the fake_part part: RuntimeError: solver exploded" in report


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


def test_run_benchmark_on_your_data_with_your_estimator(tmp_path):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import RidgeClassifier

    X, y = load_breast_cancer(return_X_y=True)
    lines = []
    result = run_benchmark(
        X, y, estimators={"Ridge": RidgeClassifier()}, include_defaults=False, repeats=2,
        output_dir=tmp_path, progress=lines.append,
    )
    assert isinstance(result, BenchmarkResult)
    runs = result.runs
    assert runs["estimator"].tolist() == ["Ridge", "Ridge"] and (runs["kind"] == "yours").all()
    # Well above the majority class (63 %) on every split.
    assert (runs["accuracy"] > 0.9).all()
    assert (runs["n_parameters"] == X.shape[1] + 1).all()  # coef_ and intercept_
    assert [line.split("]")[0].split()[0] for line in lines] == ["[1/2", "[2/2"]
    for name in ["report.md", "runs.csv", "summary.csv", "overall.csv", "machine.txt",
                 "accuracy.png", "accuracy_vs_time.png"]:
        assert (tmp_path / name).is_file(), name
    report = (tmp_path / "report.md").read_text()
    assert "your data" in report and "Ridge" in report and "](accuracy.png)" in report


def test_run_benchmark_selects_defaults_and_records_warning_messages():
    from sklearn.neural_network import MLPClassifier

    result = run_benchmark(
        "iris", estimators={"MLP-short": MLPClassifier(max_iter=3, random_state=0)},
        include_defaults=False, repeats=1,
    )
    warnings_text = result.runs["warnings"].item()
    assert warnings_text.startswith("ConvergenceWarning: Stochastic Optimizer: Maximum iterations (3)")
    only_logreg = run_benchmark({"mine": load_iris(return_X_y=True)}, estimators=["LogReg"], repeats=1)
    assert only_logreg.runs["estimator"].tolist() == ["LogReg"]
    assert only_logreg.runs["dataset"].tolist() == ["mine"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"estimators": ["Magic"]}, r"unknown estimators \['Magic'\]"),
        ({"estimators": {"LogReg": LogisticRegression()}}, "already used by the defaults"),
        ({"repeats": 0}, "repeats must be a positive integer"),
        ({"preprocessor": "scale"}, "preprocessor must be 'auto'"),
        # issue 19: a torch error, a silent "no limit", every fit failing, "choose from []"
        ({"n_threads": -1}, r"n_threads must be None or a positive integer; got -1"),
        ({"n_threads": 0}, r"n_threads must be None or a positive integer; got 0"),
        ({"n_jobs": 0}, r"n_jobs must be a positive integer; got 0"),
        ({"n_jobs": 1.5}, r"n_jobs must be a positive integer; got 1.5"),
        ({"device": "mps"}, "mps"),
        ({"estimators": ["QLRR"], "include_defaults": False},
         r"unknown estimators \['QLRR'\]; choose from \['QLR', "),
    ],
)
def test_run_benchmark_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_benchmark("iris", **kwargs)


def test_run_benchmark_refuses_rows_and_labels_that_do_not_pair():
    # Issue 19: run_benchmark(X, y[1:]) ran and scored rows against the wrong labels.
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=r"X and y: X has 150 rows but y has 149 labels"):
        run_benchmark(X, y[1:], estimators=["LogReg"], repeats=1)
    with pytest.raises(ValueError, match=r"data\['mine'\]: X has 150 rows but y has 149"):
        run_benchmark({"mine": (X, y[1:])}, estimators=["LogReg"], repeats=1)


def test_run_benchmark_in_worker_processes_gives_the_same_rows():
    # Every fit is seeded by its split, so n_jobs changes where fits run, not what they score.
    X, y = load_iris(return_X_y=True)
    mine = {"QLR": QuadraticLogisticRegression(C=0.5), "LogReg2": LogisticRegression(C=0.1)}
    kwargs = dict(estimators=mine, include_defaults=False, repeats=2)
    sequential = run_benchmark({"iris": (X, y)}, **kwargs).runs
    parallel = run_benchmark({"iris": (X, y)}, n_jobs=2, **kwargs).runs
    columns = ["dataset", "estimator", "repeat", "seed", "n_train", "accuracy", "n_parameters"]
    pd.testing.assert_frame_equal(sequential[columns], parallel[columns])
    assert parallel["error"].isna().all()


def test_run_benchmark_selects_default_names_without_the_other_defaults():
    result = run_benchmark("iris", estimators=["LogReg"], include_defaults=False, repeats=1)
    assert result.runs["estimator"].tolist() == ["LogReg"]


def test_without_the_bench_extra_the_message_names_it():
    import subprocess

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pandas', 'matplotlib'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import skquad.datasets, skquad.benchmarks\n"
        "try:\n"
        "    skquad.benchmarks.run_benchmark('iris')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert "pip install 'skquad[bench]'" in completed.stdout, completed.stderr


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
