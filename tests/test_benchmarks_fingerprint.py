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


@pytest.mark.parametrize("directory", sorted(p for p in RESULTS.iterdir() if p.is_dir()),
                         ids=lambda path: path.name)
def test_committed_results_match_the_code(directory):
    recorded, current, command = recorded_and_current(directory)
    where = f"doc/benchmark_results/{directory.name}"
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
