"""The sdp-targets suite (skquad.benchmarks.research._sdp_targets)."""

import json

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skquad.benchmarks.research import _sdp_targets


def test_unknown_cases_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match=r"unknown SDP target cases \['bogus'\]"):
        _sdp_targets.run(output_dir=tmp_path, datasets=["small", "bogus"])


def test_small_case_times_the_native_solver_against_each_reference(monkeypatch, capsys):
    def tiny(return_X_y=True):
        return make_classification(n_samples=40, n_features=3, n_informative=2, n_redundant=0, random_state=0)

    for name in ("load_iris", "load_wine", "load_breast_cancer"):
        monkeypatch.setattr(_sdp_targets, name, tiny)  # looked up when the case runs
    _sdp_targets._child("small", 1)
    rows = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert [row["case"] for row in rows] == ["small: iris", "small: wine", "small: breast_cancer"]
    for row in rows:
        assert row["n"] == 40 and row["d"] == 3
        assert row["fit time (s)"] > 0 and row["peak RSS (MB)"] > 0
        assert 0 <= row["relative gap"] <= 1
        for solver in ("SCS", "CLARABEL", "CLARABEL at tol"):
            assert row[f"{solver} fit time (s)"] > 0
            np.testing.assert_allclose(row[f"{solver} / native"],
                                       row[f"{solver} fit time (s)"] / row["fit time (s)"])
            assert 0 <= row[f"{solver} relative gap"] <= 1


def test_small_uci_case_times_every_set_and_skips_a_slow_scs(monkeypatch, capsys):
    X, y = make_classification(n_samples=40, n_features=3, n_informative=2, n_redundant=0, random_state=0)
    current = []

    def load(name, return_X_y, as_frame):
        current.append(name)
        return X, y

    original = _sdp_targets._fit

    fits = []

    def slow_scs_on_segment(model, X_fit, y_fit, clock):
        elapsed, caught = original(model, X_fit, y_fit, clock)
        fits.append((current[-1], model.solver, model.solver_options))
        return elapsed + (100.0 if model.solver == "SCS" and current[-1] == "segment" else 0.0), caught

    monkeypatch.setattr(_sdp_targets, "SMALL_UCI", ("glass", "segment"))
    monkeypatch.setattr(_sdp_targets, "load_uci", load)
    monkeypatch.setattr(_sdp_targets, "_fit", slow_scs_on_segment)
    _sdp_targets._child("small_uci", 2)
    rows = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert [row["case"] for row in rows] == ["small_uci: glass", "small_uci: segment"]
    assert "note" not in rows[0] and rows[0]["SCS fit time (s)"] < 60
    # segment's SCS fit "took" over 60 s: timed once (the warm-up), not repeated;
    # its CLARABEL fit was quick and runs every round.
    assert rows[1]["SCS fit time (s)"] > 60 and rows[1]["note"].startswith("SCS took")
    assert "not repeated" in rows[1]["note"] and "CLARABEL" not in rows[1]["note"]
    assert fits.count(("segment", "SCS", None)) == 1 and fits.count(("segment", "CLARABEL", None)) == 3
    # CLARABEL at the native tol: its stopping tolerances at a tenth of it, every round
    matched = {"tol_gap_abs": 1e-5, "tol_gap_rel": 1e-5, "tol_feas": 1e-5}
    assert fits.count(("segment", "CLARABEL", matched)) == 3
    for row in rows:
        assert row["classes"] == 2 and row["fit time (s)"] > 0
        assert 0 <= row["relative gap"] <= 1e-3


def test_a_failing_case_reports_its_error_instead_of_stopping_the_suite():
    rows = _sdp_targets._run_child("bogus", 1, progress=lambda message: None)
    assert rows[0]["case"] == "bogus" and "unknown case 'bogus'" in rows[0]["error"]


def test_the_child_process_applies_the_runs_thread_limit(monkeypatch, capsys):
    """--threads reaches the case's child process (it used to run on the defaults)."""
    import torch

    monkeypatch.setattr(_sdp_targets, "_case", lambda case, rounds: [{"threads": torch.get_num_threads()}])
    _sdp_targets._child("small", 1, 1)
    assert json.loads(capsys.readouterr().out.splitlines()[-1])[0]["threads"] == 1


def test_the_child_gets_the_runs_thread_value_not_torchs_count():
    """A run without --threads (thread_limit(0)) passes no limit to the child;
    torch's count (2) used to go there as a BLAS limit of 2, and the SDP's
    parallel class blocks then ran two BLAS threads each (optdigits 460 s of
    CPU against 115 s)."""
    from skquad.benchmarks._report import active_thread_limit, thread_limit

    assert active_thread_limit() is None
    with thread_limit(0):
        assert active_thread_limit() is None
    with thread_limit(1):
        assert active_thread_limit() == 1


def _fake_child(monkeypatch, returncode, stdout=""):
    """Replace the capped reference's child by a finished process with this exit and output."""
    import subprocess

    calls = []

    def run(command, **kwargs):
        calls.append(command[-1])
        return subprocess.CompletedProcess(command, returncode, stdout=stdout, stderr="boom")

    monkeypatch.setattr(subprocess, "run", run)  # the run_child of the report helpers
    return calls


def test_a_finished_scs_fit_gives_the_exact_ratio(monkeypatch):
    result = {"SCS fit time (s)": 30.0, "SCS status": "optimal", "SCS relative gap": 1e-5,
              "SCS training accuracy": 0.9}
    calls = _fake_child(monkeypatch, 0, "noise\n" + json.dumps(result))
    row = _sdp_targets._capped_reference("SCS", "spambase", 2.0)
    assert row["SCS / native"] == 15.0 and row["SCS / native is a lower bound"] is False
    assert "note" not in row
    # The child is told the cap: CAP_RATIO times the native CPU time.
    assert "'SCS', 'spambase', 20.0," in calls[0]


def test_an_scs_fit_at_its_time_limit_gives_a_lower_bound_with_its_gap(monkeypatch):
    result = {"SCS fit time (s)": 25.0, "SCS status": "optimal_inaccurate", "SCS relative gap": 0.02,
              "SCS training accuracy": 0.9}
    _fake_child(monkeypatch, 0, json.dumps(result))
    row = _sdp_targets._capped_reference("SCS", "optdigits", 2.0)
    assert row["SCS / native"] == 12.5 and row["SCS / native is a lower bound"] is True
    assert "time limit (20 s)" in row["note"] and "2.0e-02" in row["note"]


def test_an_scs_fit_killed_at_the_cpu_cap_gives_the_cap_as_a_lower_bound(monkeypatch):
    import signal

    _fake_child(monkeypatch, -signal.SIGXCPU)
    row = _sdp_targets._capped_reference("SCS", "letter", 3.0)
    assert row["SCS / native"] == _sdp_targets.CAP_RATIO
    assert row["SCS / native is a lower bound"] is True and "CPU cap (30 s" in row["note"]


def test_an_scs_fit_out_of_memory_gives_its_cpu_time_until_then_as_a_lower_bound(monkeypatch):
    # Python's MemoryError: the child says how long the fit had run.
    _fake_child(monkeypatch, 0, json.dumps({"setup CPU (s)": 2.0}) + "\n"
                + json.dumps({"memory": True, "fit CPU (s)": 45.0}))
    row = _sdp_targets._capped_reference("SCS", "optdigits", 3.0)
    assert row["SCS / native"] == 15.0 and row["SCS / native is a lower bound"] is True
    assert "out of memory" in row["note"] and "after 45 CPU s" in row["note"]


def test_an_scs_fit_out_of_memory_or_failing_gives_no_ratio(monkeypatch):
    _fake_child(monkeypatch, 0, json.dumps({"memory": True}))
    row = _sdp_targets._capped_reference("SCS", "letter", 3.0)
    assert np.isnan(row["SCS / native"]) and "out of memory" in row["note"]
    _fake_child(monkeypatch, 1)
    row = _sdp_targets._capped_reference("SCS", "letter", 3.0)
    assert np.isnan(row["SCS / native"]) and "exit 1" in row["note"] and "boom" in row["note"]


@pytest.mark.parametrize("kind", ["regressor", "classifiercv"])
def test_wide_case_reports_time_route_beta_and_gap(kind):
    row = _sdp_targets._wide_case(f"wide80x4_{kind}")  # the shape is read from the name
    assert row["case"] == f"wide80x4_{kind}" and (row["n"], row["d"]) == (80, 4)
    assert row["fit time (s)"] > 0 and row["beta"] > 0 and row["solver path"]
    assert 0 <= row["relative gap"] <= 1e-4 and np.isfinite(row["test score"])


def test_a_clarabel_fit_killed_at_the_cpu_cap_names_clarabel(monkeypatch):
    import signal

    calls = _fake_child(monkeypatch, -signal.SIGXCPU)
    row = _sdp_targets._capped_reference("CLARABEL", "letter", 3.0)
    assert "'CLARABEL', 'letter', 30.0," in calls[0]
    assert row["CLARABEL / native"] == _sdp_targets.CAP_RATIO and row["CLARABEL / native is a lower bound"]
    assert row["note"].startswith("CLARABEL killed at the CPU cap") and "SCS / native" not in row


def test_the_large_case_merges_each_references_fields_and_notes(monkeypatch):
    X, y = make_classification(n_samples=40, n_features=3, n_informative=2, n_redundant=0, random_state=0)
    monkeypatch.setattr(_sdp_targets, "_uci_set", lambda name: (X, y))
    fields = {"SCS": {"SCS / native": 12.0, "note": "SCS stopped"}, "CLARABEL": {"CLARABEL / native": 4.0}}
    monkeypatch.setattr(_sdp_targets, "_capped_reference", lambda solver, name, native: dict(fields[solver]))
    row = _sdp_targets._versus_capped_references("spambase")
    assert row["SCS / native"] == 12.0 and row["CLARABEL / native"] == 4.0 and row["note"] == "SCS stopped"
    assert row["case"] == "large_uci: spambase" and row["fit time (s)"] > 0
