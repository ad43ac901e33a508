"""The dask-scaling suite (skquad.benchmarks.research._dask_scaling)."""

import numpy as np
import pytest

from skquad.benchmarks.research import _dask_scaling


def test_unknown_cases_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match=r"unknown Dask scaling cases \['bogus'\]"):
        _dask_scaling.run(output_dir=tmp_path, datasets=["match", "bogus"])


def test_a_failing_case_reports_its_error_instead_of_stopping_the_suite(monkeypatch):
    monkeypatch.setitem(_dask_scaling.CASES, "bogus", ((10, 2, 0), (10, 2, 0)))
    row = _dask_scaling._run_child("bogus", True, 1, progress=lambda message: None)
    assert row["case"] == "bogus" and "unknown case 'bogus'" in row["error"]


def test_match_case_reports_the_dask_fit_against_the_in_memory_fit(monkeypatch):
    # In-process with a threads-only cluster (a process cluster's start-up is
    # what the suite's child processes pay, not what this test checks).
    from distributed import LocalCluster

    monkeypatch.setattr(
        _dask_scaling, "_cluster",
        lambda n_workers: LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=False,
                                       dashboard_address=None),
    )
    row = _dask_scaling._case("match", 3000, 4, 0, 1)  # the planted model uses 4 features
    assert row["case"] == "match" and row["n"] == 3000 and row["d"] == 4
    # the same objective to the solver's tolerance (tol=1e-6: far below 1e-6 relative)
    assert row["relative_difference"] < 1e-6
    assert row["max_probability_difference"] < 1e-3
    assert row["iterations_dask"] >= 1 and np.isfinite(row["objective_dask"])
