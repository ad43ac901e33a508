"""The speed-networks suite (skquad.benchmarks.research._network_speed) on a tiny problem."""

import numpy as np

from skquad.benchmarks.research import _network_speed


def test_regressor_part_times_every_model_in_both_dtypes(monkeypatch, tmp_path):
    monkeypatch.setattr(_network_speed, "QUICK_REGRESSION_SHAPE", (240, 5, 6))
    messages = []
    result = _network_speed.regressors(output_dir=tmp_path, quick=True, repeats=2, progress=messages.append)
    table = result["tables"]["regressors"]
    assert list(table["dtype"]) == ["float64"] * 3 + ["float32"] * 3
    assert list(table["model"]) == ["MLPRegressor", "QNNRegressor", "RPQNNRegressor"] * 2
    ratio = table["ratio to MLPRegressor (median of rounds)"]
    np.testing.assert_array_equal(ratio[table["model"] == "MLPRegressor"], 1.0)
    assert np.all(np.isfinite(ratio)) and np.all(ratio > 0)
    assert all(len(rounds.split()) == 2 for rounds in table["ratios of the rounds"])
    cpu_ratio = table["CPU-time ratio to MLPRegressor (median of rounds)"]
    np.testing.assert_array_equal(cpu_ratio[table["model"] == "MLPRegressor"], 1.0)
    assert np.all(np.isfinite(cpu_ratio)) and np.all(cpu_ratio > 0)
    assert "n=240, d=5" in result["markdown"] and "round 2/2" in messages[-1]


def test_ratios_are_per_round_then_median():
    seconds = {"base": [1.0, 2.0, 4.0], "model": [2.0, 2.0, 2.0]}
    cpu_seconds = {"base": [1.0, 1.0, 1.0], "model": [3.0, 1.0, 0.5]}
    (base, model) = _network_speed._ratio_rows((seconds, cpu_seconds), "base", "float64")
    # per-round ratios 2, 1, 0.5: their median is 1 (the ratio of medians would be 1 too,
    # but the per-round ratios are what is listed)
    assert model["ratio to base (median of rounds)"] == 1.0
    assert model["ratios of the rounds"] == "2.00 1.00 0.50"
    assert model["median epoch time (ms)"] == 2000.0 and base["median epoch time (ms)"] == 2000.0
    # the CPU-time ratio is its own per-round median: 3, 1, 0.5 -> 1
    assert model["CPU-time ratio to base (median of rounds)"] == 1.0
