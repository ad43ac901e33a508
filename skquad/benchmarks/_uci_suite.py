"""The ``uci`` suite: every estimator against the baselines on the 13 UCI datasets.

``quick=True`` runs the same protocol (:func:`skquad.benchmarks.run_benchmark`)
on datasets that ship with scikit-learn, so no data directory is needed.
"""

from ..datasets import UCI_DATASETS
from ._api import _describe_source, _result
from ._protocol import BUNDLED_DATASETS, resolve_datasets, run_protocol

__all__ = ["resolve_suite_datasets", "run"]

TEST_SIZE = 0.25
# 3 splits of the full training parts (no training cap): the default run of
# the suite, the one committed to doc/benchmark_results/uci/.
DEFAULT_REPEATS = 3
QUICK_REPEATS = 2
# The quick run's default datasets: a check of the install in under a minute
# (digits stays available with --datasets digits).
QUICK_DEFAULT_DATASETS = ("iris", "wine", "breast_cancer")


def resolve_suite_datasets(datasets, quick):
    """The suite's dataset names, or ValueError naming a bad one."""
    if datasets is None:
        return list(QUICK_DEFAULT_DATASETS if quick else UCI_DATASETS)
    resolved = resolve_datasets(datasets)
    if quick:
        outside = [name for name, key in zip(datasets, resolved) if key not in BUNDLED_DATASETS]
        if outside:
            raise ValueError(
                f"unknown dataset {outside[0]!r} for --quick; choose from "
                f"{list(BUNDLED_DATASETS)} (scikit-learn's bundled datasets)"
            )
    return resolved


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print,
        tune=False, estimators=None, max_train=None, random_state=0, n_jobs=1, n_threads=None):
    """Run the uci suite (or its quick version) and return the report section.

    Follows the suite contract of :mod:`skquad.benchmarks.__main__`; the
    experiment itself is :func:`skquad.benchmarks.run_benchmark`'s.
    """
    repeats = repeats or (QUICK_REPEATS if quick else DEFAULT_REPEATS)
    names = resolve_suite_datasets(datasets, quick)
    runs, specs, names = run_protocol(
        names, task="classification", estimators=estimators, quick=quick, repeats=repeats, test_size=TEST_SIZE,
        max_train=max_train or None, tune=tune, random_state=random_state, device=device,
        progress=progress, n_jobs=n_jobs, n_threads=n_threads,
    )
    result = _result(
        runs, specs, names,
        source=_describe_source(names, None),
        repeats=repeats, test_size=TEST_SIZE, max_train=max_train or None, tune=tune,
    )
    result.plot(output_dir)
    return {
        "title": "Quick benchmark (scikit-learn's bundled datasets)" if quick else "UCI benchmark",
        "markdown": result.markdown_with_figures(),
        "tables": result.tables(),
        "figures": list(result.figures),
    }
