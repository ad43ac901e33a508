"""Noel et al.'s benchmark suite runs at a tiny size and follows the contract."""

import pandas as pd

from skquad.benchmarks.research import _paper001


def _check_contract(result, output_dir):
    assert set(result) == {"title", "markdown", "tables", "figures"}
    assert all(isinstance(table, pd.DataFrame) for table in result["tables"].values())
    for figure in result["figures"]:
        assert (output_dir / figure).is_file()
        assert figure in result["markdown"]


def test_run_tiny(tmp_path, monkeypatch):
    # One digit dataset, one seed, one UCI dataset for the divergence study.
    monkeypatch.setattr(_paper001, "DIVERGENCE_DATASETS", ("wine",))
    # the paper's full size is tested in test_neural_network.py
    monkeypatch.setattr(_paper001, "SIX_CLUSTERS_SIZES", (300, 100))
    monkeypatch.setattr(_paper001, "XOR_EPOCHS", 30)
    messages = []
    result = _paper001.run(
        output_dir=tmp_path, quick=True, repeats=1, datasets=["optdigits", "wine"],
        device="cpu", progress=messages.append,
    )
    _check_contract(result, tmp_path)
    clusters = result["tables"]["paper001_six_clusters"].set_index("neurons")
    assert clusters.loc["quadratic neurons", "test accuracy"] > 0.99
    assert clusters.loc["linear neurons", "neuron 1 one-vs-rest"] < 0.9
    assert set(result["tables"]["paper001_xor"]["start"]) == {"Q0 = 0 (ReLinear start)", "random Q0"}
    table4 = result["tables"]["paper001_table4_raw"]
    assert set(table4["model"]) == {"conventional", "QNN", "RPQNN"} and set(table4["dataset"]) == {"optdigits"}
    divergence = result["tables"]["paper001_divergence"]
    assert len(divergence) == 2 * len(_paper001.DIVERGENCE_SETTINGS)
    assert messages


def test_speed_tiny(tmp_path):
    result = _paper001.speed(output_dir=tmp_path, quick=True, repeats=1, device="cpu", progress=lambda m: None)
    _check_contract(result, tmp_path)
    table = result["tables"]["paper001_speed"]
    assert table.iloc[0]["model"] == "MLPClassifier"
    assert (table["median fit time [s]"] > 0).all()
    assert "1.5x" in result["markdown"]
