"""The dask-models suite (skquad.benchmarks.research._dask_models): cases, children, report."""

import pytest

from skquad.benchmarks.research import _dask_models


def test_the_dask_models_suite_runs_its_cases_in_children_of_its_own_module(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match=r"unknown Dask model cases \['match'\]"):
        _dask_models.run(output_dir=tmp_path, datasets=["match"])
    calls = []

    def fake_child(case, n, d, rounds, progress, module):
        calls.append((case, n, d, module))
        return {"case": case, "n": n, "loss_relative_difference": 1e-15}

    monkeypatch.setattr(_dask_models, "_run_child", fake_child)
    result = _dask_models.run(output_dir=tmp_path, progress=lambda message: None)
    module = "skquad.benchmarks.research._dask_models"
    assert calls == [("sdp", 4_000_000, 20, module), ("qnn", 2_000_000, 30, module)]
    assert "### qnn" in result["markdown"] and "| loss_relative_difference | 1e-15 |" in result["markdown"]
    _dask_models.run(output_dir=tmp_path, quick=True, datasets=["qnn"], progress=lambda message: None)
    assert calls[-1] == ("qnn", 20_000, 8, module)
