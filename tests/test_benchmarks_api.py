"""skquad/benchmarks/_api.py: run_benchmark on your data and estimators, its defaults and errors."""

import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

from skquad import QuadraticLogisticRegression
from skquad.benchmarks import BenchmarkResult, run_benchmark


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
    assert (parallel["error"].fillna("") == "").all()


def test_run_benchmark_selects_default_names_without_the_other_defaults():
    result = run_benchmark("iris", estimators=["LogReg"], include_defaults=False, repeats=1)
    assert result.runs["estimator"].tolist() == ["LogReg"]
