"""skquad._version: the one place the version is written, and everything that reads it agrees."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.version import Version

import skquad
from skquad._version import __version__

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_canonical_pep440():
    # pip and PyPI normalize versions; a non-canonical spelling ("0.2-dev") would
    # publish under another string than the one skquad.__version__ reports.
    assert str(Version(__version__)) == __version__


def test_the_package_reports_it():
    assert skquad.__version__ == __version__


def test_pyproject_reads_it_from_this_module():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]  # not written a second time
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "skquad._version.__version__"}


def test_the_installed_metadata_agrees():
    try:
        installed = importlib.metadata.version("skquad")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("skquad is imported from a checkout that is not installed: no metadata to compare")
    assert installed == __version__, (
        f"the installed metadata says {installed}, the source {__version__}: reinstall (pip install -e .)"
    )


def test_the_changelog_opens_on_this_release():
    # the first release heading ("## Unreleased (0.2.0)" or "## 0.2.0 ...") is the one
    # this version builds towards
    changelog = (ROOT / "CHANGELOG.md").read_text()
    heading = re.search(r"^## (?:Unreleased \()?(\d+(?:\.\d+)*)", changelog, flags=re.M)
    assert heading is not None, "CHANGELOG.md has no release heading"
    assert Version(heading.group(1)) == Version(Version(__version__).base_version)
