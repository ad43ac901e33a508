"""The QLR speed benchmark runs (quick mode) and follows the benchmark contract."""

from skquad.benchmarks.research import _qlr


def test_speed_quick_contract(tmp_path, monkeypatch):
    # A small "large" problem in real child processes, with a memory budget that
    # the explicit degree-2 features (20 000 x 496 float64, 79 MB) cannot fit in.
    monkeypatch.setattr(_qlr, "QUICK_LARGE_PROBLEM", (20_000, 30))
    monkeypatch.setattr(_qlr, "LARGE_MEMORY_TARGET_GB", 0.02)
    messages = []
    result = _qlr.speed(
        output_dir=tmp_path, quick=True, repeats=1, datasets=["ionosphere"],
        device="cpu", progress=messages.append,
    )
    assert set(result) >= {"title", "markdown", "tables", "figures"}
    summary = result["tables"]["qlr_uci_summary"]
    assert list(summary["dataset"]) == ["ionosphere"]
    # Ionosphere's majority class is 64 %.
    assert 0.8 < summary["QLR accuracy %"].iloc[0] / 100 <= 1.0
    assert (tmp_path / result["figures"][0]).is_file()
    assert "ratio" in result["markdown"] and messages
    qlr, pipeline = result["tables"]["qlr_large"].to_dict("records")
    assert qlr["fit s"] > 0 and qlr["iterations"] > 0 and "train accuracy" in qlr["note"]
    assert "MemoryError" in pipeline["note"], pipeline


def test_regression_speed_parts(capsys):
    """The regression part's runs, summary and large-problem child, in this process
    (the suite itself runs the child in its own process, for its peak memory)."""
    import json

    runs = _qlr._regression_runs(["cpus"], 2, lambda _: None)
    summary = _qlr._regression_summary(runs)
    assert list(summary["dataset"]) == ["cpus"] and len(runs) == 4
    # the same ridge problem: the predictions agree far below the target
    assert summary["max relative difference"].iloc[0] < _qlr.REGRESSION_MATCH_TARGET
    assert summary["CPU ratio"].iloc[0] > 0
    # n > D = 90: the matrix-free conjugate gradients are not "auto"'s choice here
    _qlr._regression_large_child(2_000, 12)
    large = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert large["solver"] == "cholesky" and large["train_r2"] > 0.9
    assert large["peak_rss_gb"] >= large["data_peak_rss_gb"] > 0
