"""The device suite (skquad.benchmarks.research._device_speed): CPU against GPU fit times."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from skquad import QNNClassifier, SDPQuantizedClassifier
from skquad.benchmarks.research import _device_speed


def _tiny_cases(quick):
    def data():
        return make_classification(n_samples=60, n_features=4, n_informative=3, n_redundant=0, random_state=0)

    network = dict(hidden_layer_sizes=(4,), batch_size=20, max_iter=2, tol=0.0, n_iter_no_change=3,
                   random_state=0)
    cases = [
        ("QNN", data, lambda device: QNNClassifier(**network, device=device), "s / epoch"),
        ("MLP", data, None, "s / epoch"),
        ("SDP", data, lambda device: SDPQuantizedClassifier(n_neurons=10, random_state=0, device=device),
         "s / fit"),
    ]
    return cases, network


def test_every_case_is_timed_on_both_devices(monkeypatch, tmp_path):
    monkeypatch.setattr(_device_speed, "_cases", _tiny_cases)
    result = _device_speed.run(output_dir=tmp_path, device="cpu", progress=lambda message: None)
    table = result["tables"]["device_speed"].set_index("case")
    assert list(table.index) == ["QNN", "MLP", "SDP"]
    for case in ("QNN", "SDP"):
        row = table.loc[case]
        assert row["cpu"] > 0 and row["device"] > 0
        np.testing.assert_allclose(row["cpu / device"], row["cpu"] / row["device"])
        assert np.isnan(row["device peak GiB"])  # the device was the CPU
    # The MLP is scikit-learn's CPU reference: one time, per epoch.
    assert table.loc["MLP", "cpu"] > 0 and np.isnan(table.loc["MLP", "device"])
    assert "the device cpu" in result["markdown"]


def test_the_default_device_is_cuda(monkeypatch, tmp_path):
    # "auto" means the GPU this suite exists to measure.
    monkeypatch.setattr(_device_speed, "_cases", _tiny_cases)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="torch sees no CUDA device.*--device cpu"):
        _device_speed.run(output_dir=tmp_path, device="auto", progress=lambda message: None)
