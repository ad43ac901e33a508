"""The layer speed benchmark runs (tiny shapes) and follows the benchmark contract."""

import torch

from skquad.benchmarks.research import _layers


def test_speed_contract_and_thread_setting_restored(tmp_path, monkeypatch):
    # Tiny shapes and timings: this checks the plumbing, not the speed.
    monkeypatch.setattr(_layers, "QUICK_WIDE_SHAPE", (8, 6, 3))
    monkeypatch.setattr(_layers, "QUICK_SHAPES", [(4, 1, 1), (8, 9, 2)])
    monkeypatch.setattr(_layers, "MIN_SECONDS_PER_TIMING", 1e-4)
    monkeypatch.setattr(_layers, "measure_matmul_rate", lambda size, repeats: 1e9)
    threads = torch.get_num_threads()
    messages = []
    result = _layers.speed(
        output_dir=tmp_path, quick=True, repeats=1, device="cpu", progress=messages.append
    )
    assert torch.get_num_threads() == threads
    assert set(result) == {"title", "markdown", "tables", "figures"}
    wide = result["tables"]["layers_wide"]
    # 2 storages x 2 backwards x (forward, forward+backward) per thread setting.
    assert len(wide) == 8 * len(set(wide["threads"]))
    assert (wide["ms"] > 0).all()
    flops = 2 * 8 * 3 * 6**2
    forward = wide[wide["work"] == "forward"].iloc[0]
    assert abs(forward["counted GFLOP/s"] - flops / forward["ms"] * 1e3 / 1e9) < 1e-6
    cached = result["tables"]["layers_cached_vs_autograd"]
    assert len(cached) == 2 * 4 and (cached["autograd / cached"] > 0).all()
    storage = result["tables"]["layers_storage"]
    assert set(storage["storage"]) == {"full", "packed"} and list(storage["n_in"].unique()) == [9]
    assert storage.loc[storage["storage"] == "packed", "quadratic parameters"].iloc[0] == 2 * 45
    assert (tmp_path / result["figures"][0]).is_file()
    assert "40 % target" in result["markdown"] and messages
