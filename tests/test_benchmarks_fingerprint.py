"""The committed benchmark results describe the current code: their fingerprints still hold.

A results directory under doc/benchmark_results records, in fingerprint.json, the
parameters its skquad estimators ran with and the SDP solver routes (written by
``python -m skquad.benchmarks``). When the code's defaults or routes change, the
fingerprint recomputed here differs and the directory must be re-run.
"""

import json
import re
from pathlib import Path

import pytest

from skquad.benchmarks._fingerprint import FINGERPRINT_FILE, fingerprint

RESULTS = Path(__file__).resolve().parents[1] / "doc" / "benchmark_results"
DIRECTORIES = sorted(path for path in RESULTS.iterdir() if path.is_dir())


def _command(directory):
    match = re.search(r"^command: (.*)$", (directory / "machine.txt").read_text(), re.MULTILINE)
    return match.group(1) if match else "(machine.txt names no command)"


def _estimators(command):
    """The names after ``--estimators`` in ``command`` (None: the suite's)."""
    match = re.search(r"--estimators ((?:[^-\s]\S* ?)+)", command)
    return match.group(1).split() if match else None


@pytest.mark.parametrize("directory", DIRECTORIES, ids=lambda path: path.name)
def test_committed_results_match_the_code(directory):
    assert (directory / FINGERPRINT_FILE).is_file(), (
        f"doc/benchmark_results/{directory.name} has no {FINGERPRINT_FILE}: re-run it with the "
        "command doc/benchmark_results/README.md gives")
    recorded = json.loads((directory / FINGERPRINT_FILE).read_text())
    command = _command(directory)
    current = fingerprint(recorded["suite"], _estimators(command))
    changed = [key for key in ("estimators", "solver_routes", "reference_solver_")
               if current[key] != recorded[key]]
    assert current["hash"] == recorded["hash"], (
        f"doc/benchmark_results/{directory.name} is stale: {', '.join(changed) or 'the hash'} "
        f"changed since it ran. Re-run from the repository root with SKQUAD_DATA set: {command} "
        "(doc/benchmark_results/README.md)")


def test_fingerprint_follows_the_parameters(monkeypatch):
    from skquad.benchmarks import _estimators

    before = fingerprint("uci", ["SDP"])
    monkeypatch.setitem(_estimators.SDP_SETTINGS, "beta", 0.1)
    assert fingerprint("uci", ["SDP"])["hash"] != before["hash"]
    assert fingerprint("uci", ["QLR"])["estimators"].keys() == {"QuadraticLogisticRegression"}
