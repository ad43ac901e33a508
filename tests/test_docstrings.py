"""skquad._foundation._docstrings: the entries several estimators' docstrings share."""

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import skquad
from skquad._foundation._docstrings import ENTRIES, shared_docstring


def test_a_marker_line_becomes_its_entries_indented_as_the_line():
    @shared_docstring
    class Model:
        """Model.

        Parameters
        ----------
        [shared: tol tol:QNNClassifier]
        """

    expected = "\n\n".join("        " + ENTRIES[key].replace("\n", "\n        ") for key in ("tol", "tol:QNNClassifier"))
    assert Model.__doc__.split("----------\n")[1] == expected + "\n        "


def test_an_unknown_entry_is_an_error():
    with pytest.raises(KeyError, match="no_such_parameter"):
        shared_docstring(type("Model", (), {"__doc__": "    [shared: no_such_parameter]"}))


def test_every_entry_is_written_in_and_no_marker_is_left():
    docs = [inspect.getdoc(getattr(skquad, name)) for name in skquad.__all__]
    assert [doc for doc in docs if "[shared:" in doc] == []
    assert [key for key, entry in ENTRIES.items() if not any(entry in doc for doc in docs)] == []


def test_the_estimators_import_without_docstrings():
    # python -OO strips docstrings: the decorator has nothing to fill in
    root = Path(__file__).resolve().parents[1]
    code = "import skquad; print([getattr(skquad, name).__doc__ for name in skquad.__all__][0])"
    result = subprocess.run([sys.executable, "-OO", "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"
