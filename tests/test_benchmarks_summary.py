"""skquad/benchmarks/_summary.py: the summary of the runs and the ratios to the baselines."""

import numpy as np
import pandas as pd
import pytest

from skquad.benchmarks._summary import ratios_to_baselines, summarize


@pytest.fixture
def runs():
    return pd.DataFrame({
        "dataset": ["d"] * 6,
        "estimator": ["QLR"] * 3 + ["LogReg"] * 3,
        "kind": ["skquad"] * 3 + ["baseline"] * 3,
        "accuracy": [0.80, 0.90, np.nan, 0.70, 0.75, 0.80],
        "fit_time": [1.0, 3.0, 2.0, 0.5, 0.5, 2.0],
        "n_parameters": [10.0, 10.0, 10.0, 4.0, 4.0, 4.0],
        "error": ["", "", "boom", "", np.nan, ""],
    })


def test_summarize_means_stds_and_failures_per_dataset_and_estimator(runs):
    summary = summarize(runs).set_index("estimator")
    assert summary.loc["QLR", "accuracy_mean"] == pytest.approx(0.85)
    assert summary.loc["QLR", "accuracy_std"] == pytest.approx(np.std([0.8, 0.9], ddof=1))
    assert summary.loc["QLR", "n_runs"] == 2 and summary.loc["QLR", "n_failed"] == 1
    assert summary.loc["QLR", "fit_time_median"] == 2.0
    assert summary.loc["LogReg", "n_runs"] == 3 and summary.loc["LogReg", "n_failed"] == 0
    assert summary.loc["LogReg", "n_parameters"] == 4.0


def test_ratios_put_each_skquad_estimator_against_each_baseline(runs):
    ratios = ratios_to_baselines(summarize(runs))
    assert len(ratios) == 1
    row = ratios.iloc[0]
    assert (row["estimator"], row["baseline"]) == ("QLR", "LogReg")
    assert row["accuracy_diff"] == pytest.approx(0.85 - 0.75)
    assert row["accuracy_ratio"] == pytest.approx(0.85 / 0.75)
    assert row["fit_time_ratio"] == pytest.approx(2.0 / 0.5)
