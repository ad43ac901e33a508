"""The dask-scaling suite (skquad.benchmarks.research._dask_scaling): cases, errors, report."""

import pytest

from skquad.benchmarks.research import _dask_scaling


def test_unknown_cases_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match=r"unknown Dask scaling cases \['bogus'\]"):
        _dask_scaling.run(output_dir=tmp_path, datasets=["match", "bogus"])


def test_quick_runs_the_small_cases_each_in_a_child(monkeypatch, tmp_path):
    calls = []

    def fake_child(case, n, d, rounds, progress):
        calls.append((case, n, d, rounds))
        return {"case": case, "n": n, "d": d, "median_ratio_2_over_1": 0.6}

    monkeypatch.setattr(_dask_scaling, "_run_child", fake_child)
    result = _dask_scaling.run(output_dir=tmp_path, quick=True, progress=lambda message: None)
    assert calls == [("match", 20_000, 10, 1), ("scaling", 20_000, 10, 1)]
    assert set(result["tables"]) == {"match", "scaling"}
    assert "### scaling" in result["markdown"] and "| median_ratio_2_over_1 | 0.6 |" in result["markdown"]
    _dask_scaling.run(output_dir=tmp_path, datasets=["memory"], repeats=4, progress=lambda message: None)
    assert calls[-1] == ("memory", 10_000_000, 50, 4)


def test_a_failing_case_reports_its_error_instead_of_stopping_the_suite():
    row = _dask_scaling._run_child("bogus", 10, 2, 1, progress=lambda message: None)
    assert row["case"] == "bogus" and "unknown case 'bogus'" in row["error"]

