"""The shap-speed suite (skquad.benchmarks.research._shap_speed) follows the benchmark contract."""

from skquad.benchmarks.research import _shap_speed


def test_run_contract_and_report(tmp_path, monkeypatch):
    # The plumbing, not the speed: shap's explainers (a minute of numba
    # compilation on first use) are replaced by rows of known numbers.
    def fake_shap_rows(model, X, background, n_exact, reference, progress):
        assert reference.shape == X.shape and background.shape == (10, X.shape[1])
        return [("shap Exact", n_exact, 2.0, 2.0 / n_exact * X.shape[0], 1e-12)]

    monkeypatch.setattr(_shap_speed, "_shap_rows", fake_shap_rows)
    result = _shap_speed.run(output_dir=tmp_path, quick=True, repeats=1, progress=lambda message: None)
    assert set(result) == {"title", "markdown", "tables", "figures"}
    table = result["tables"]["shap_speed"]
    assert list(table["method"]) == ["skquad shap_values (closed form)", "shap Exact"]
    closed, exact = table["seconds for 100 samples"]
    assert exact == 2.0 / 4 * 100 and table["closed form faster by"].iloc[1] == exact / closed
    assert "faster, values equal to 1e-12" in result["markdown"]
