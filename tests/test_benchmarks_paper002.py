"""The paper 002 benchmark suite keeps the benchmark contract (quick, one data set)."""

import pandas as pd

from skquad.benchmarks import _paper002


def _check_contract(result, output_dir):
    assert set(result) == {"title", "markdown", "tables", "figures"}
    assert result["title"] and result["markdown"].strip()
    assert all(isinstance(table, pd.DataFrame) and len(table) for table in result["tables"].values())
    for name in result["figures"]:
        assert (output_dir / name).is_file() and name in result["markdown"]


def test_run_quick_on_breast_cancer(tmp_path):
    messages = []
    result = _paper002.run(output_dir=tmp_path, quick=True, datasets=["breast.cancer"], progress=messages.append)
    _check_contract(result, tmp_path)
    summary = result["tables"]["paper002_uci"]
    assert set(summary["method"]) == {
        "SDP sampled", "SDP relaxed (no quantization)", "backprop", "backprop + quantization"
    }
    assert summary["test acc"].between(0.5, 1.0).all()
    assert "Agreement with the paper" in result["markdown"] and messages


def test_speed_quick(tmp_path):
    result = _paper002.speed(output_dir=tmp_path, quick=True, progress=lambda message: None)
    _check_contract(result, tmp_path)
    table = result["tables"]["paper002_speed"]
    assert set(table["solver"]) == {"SCS", "CLARABEL"}
    bounds = table["lower bound"].to_numpy()
    assert abs(bounds[0] - bounds[1]) < 1e-2 * abs(bounds[1])
