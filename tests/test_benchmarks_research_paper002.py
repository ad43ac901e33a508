"""The suite of Bartan & Pilanci's experiments (SDP) keeps the benchmark contract and learns."""

import numpy as np
import pandas as pd

from skquad.benchmarks.research import _paper002
from skquad.datasets import load_uci


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
    # Breast cancer's majority class is 70 %: the SDP models learn more than that on their
    # training part, and the relaxed SDP model generalizes above it.
    _, y = load_uci("breast.cancer", return_X_y=True)
    majority = max(np.mean(y == label) for label in np.unique(y))
    sdp = summary["method"].str.startswith("SDP")
    assert (summary.loc[sdp, "train acc"] > majority + 0.04).all(), summary
    # The quick run's 10 backprop epochs learn little, and sign quantization loses most of
    # it (the paper's point). Measured over random_state 0-19 (2 batch orders each): real
    # weights 0.715-0.772 train accuracy, quantized 0.697-0.759, so the bounds hold for any
    # seed and batch order, not for one.
    backprop = summary["method"] == "backprop"
    assert (summary.loc[backprop, "train acc"] > majority).all(), summary
    assert (summary.loc[~sdp & ~backprop, "train acc"] > majority - 0.03).all(), summary
    relaxed = summary.loc[summary["method"] == "SDP relaxed (no quantization)", "test acc"]
    assert (relaxed > majority + 0.05).all(), summary
    assert "Agreement with the paper" in result["markdown"] and messages


def test_run_quick_planted(tmp_path):
    # Figure 1's planted experiment: the sampled networks' costs lie above the SDP's
    # lower bound, which is a proof (it broke once when the sign sampling changed
    # its generator type, with no test on this part).
    result = _paper002.run(output_dir=tmp_path, quick=True, datasets=["planted"], progress=lambda message: None)
    _check_contract(result, tmp_path)
    planted = result["tables"]["paper002_planted"]
    bound = planted.loc[planted["method"] == "SDP lower bound", "train cost"].iloc[0]
    sampled = planted.loc[planted["method"] == "SDP sampled", "train cost"]
    assert len(sampled) and (sampled >= bound * (1 - 1e-6)).all(), planted


def test_speed_quick(tmp_path):
    result = _paper002.speed(output_dir=tmp_path, quick=True, progress=lambda message: None)
    _check_contract(result, tmp_path)
    table = result["tables"]["paper002_speed"]
    assert set(table["solver"]) == {"SCS", "CLARABEL"}
    bounds = table["lower bound"].to_numpy()
    assert abs(bounds[0] - bounds[1]) < 1e-2 * abs(bounds[1])
