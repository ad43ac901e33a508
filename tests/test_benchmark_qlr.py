"""The QLR speed benchmark runs (quick mode) and follows the benchmark contract."""

import numpy as np

from skquad.benchmarks import _qlr


def test_speed_quick_contract(tmp_path, monkeypatch):
    # keep the test small: one tiny "large" problem instead of the quick one
    monkeypatch.setattr(
        _qlr, "_run_child",
        lambda task, n, d, device, max_iter, progress: _qlr_child_inline(task, n, d, device),
    )
    messages = []
    result = _qlr.speed(
        output_dir=tmp_path, quick=True, repeats=1, datasets=["ionosphere"],
        device="cpu", progress=messages.append,
    )
    assert set(result) >= {"title", "markdown", "tables", "figures"}
    summary = result["tables"]["qlr_uci_summary"]
    assert list(summary["dataset"]) == ["ionosphere"]
    assert 0.7 < summary["QLR accuracy %"].iloc[0] / 100 <= 1.0
    assert (tmp_path / result["figures"][0]).is_file()
    assert "ratio" in result["markdown"] and messages


def _qlr_child_inline(task, n, d, device):
    if task == "pipeline":
        return {"task": task, "error": "MemoryError: (skipped in the test)"}
    from skquad import QuadraticLogisticRegression

    X, y = _qlr._synthetic(500, 8)
    model = QuadraticLogisticRegression(C=100.0, max_iter=20, tol=0.0, device=device)
    wall, cpu, converged = _qlr._timed_fit(model, X, y)
    return dict(task=task, fit_time_s=wall, fit_cpu_s=cpu, n_iter=model.n_iter_,
                converged=converged, train_accuracy=model.score(X, y), peak_rss_gb=0.5,
                data_peak_rss_gb=0.4, load_average=np.nan)
