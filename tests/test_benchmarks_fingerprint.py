"""The committed benchmark results describe the current code: their fingerprints still hold.

A results directory under doc/benchmark_results records in fingerprint.json the
parameters its skquad estimators ran with and the SDP solver routes (written by
``python -m skquad.benchmarks``); when the code's defaults or routes change, the
fingerprint recomputed here differs and the directory must be re-run.
"""

from pathlib import Path

import pytest

from skquad.benchmarks._fingerprint import FINGERPRINT_FILE, fingerprint, recorded_and_current

RESULTS = Path(__file__).resolve().parents[1] / "doc" / "benchmark_results"


# Directories whose re-run on the current code is pending: their pages say that the
# fingerprint does not match (doc/conf.py). The test holds each to that and fails
# once it matches, so the list only shrinks.
PENDING_RERUN = set()


@pytest.mark.parametrize("directory", sorted(p for p in RESULTS.iterdir() if p.is_dir()),
                         ids=lambda path: path.name)
def test_committed_results_match_the_code(directory):
    where = f"doc/benchmark_results/{directory.name}"
    if directory.name in PENDING_RERUN:
        recorded, current = (recorded_and_current(directory)[:2]
                             if (directory / FINGERPRINT_FILE).is_file() else (None, None))
        assert recorded is None or recorded["hash"] != current["hash"], (
            f"{where} matches the code now: remove it from PENDING_RERUN")
        return
    recorded, current, command = recorded_and_current(directory)
    assert recorded is not None, (
        f"{where} has no {FINGERPRINT_FILE}: re-run it with the command of doc/benchmark_results/README.md")
    changed = [key for key in ("estimators", "solver_routes", "reference_solver_") if current[key] != recorded[key]]
    assert current["hash"] == recorded["hash"], (
        f"{where} is stale: {', '.join(changed) or 'the hash'} changed since it ran. Re-run from the "
        f"repository root with SKQUAD_DATA set: {command} (doc/benchmark_results/README.md)")


def test_fingerprint_follows_the_parameters(monkeypatch):
    from skquad.benchmarks import _estimators

    before = fingerprint("uci", ["SDP"])
    monkeypatch.setitem(_estimators.SDP_SETTINGS, "beta", 0.1)
    assert fingerprint("uci", ["SDP"])["hash"] != before["hash"]
    assert fingerprint("uci", ["QLR"])["estimators"].keys() == {"QuadraticLogisticRegression"}
    assert "SDPQuantizedClassifierCV" not in fingerprint("uci")["estimators"]  # named only


def test_a_suite_fingerprint_counts_only_the_estimators_it_builds(monkeypatch):
    from skquad.benchmarks import _estimators

    before = {suite: fingerprint(suite)["hash"] for suite in ("qlr", "sdp-targets", "uci")}
    monkeypatch.setitem(_estimators.SDP_SETTINGS, "tol", 1e-3)  # the SDP classifiers' specs
    assert fingerprint("qlr")["hash"] == before["qlr"]  # builds no SDP estimator
    assert fingerprint("sdp-targets")["hash"] != before["sdp-targets"]
    assert fingerprint("uci")["hash"] != before["uci"]
    assert set(fingerprint("speed-networks")["estimators"]) == {
        "QNNClassifier", "RPQNNClassifier", "QNNRegressor", "RPQNNRegressor"}
