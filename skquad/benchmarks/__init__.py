"""Benchmarks: ``python -m skquad.benchmarks``.

Suites (``--suite``):

uci (default)
    Every skquad estimator and the baselines a user would otherwise pick
    (LogisticRegression, PolynomialFeatures(2) + LogisticRegression,
    MLPClassifier, SVC with RBF and degree-2 polynomial kernels,
    HistGradientBoostingClassifier) on the UCI datasets; ``--quick`` runs it on
    scikit-learn's bundled datasets in about two minutes.
paper001, paper002
    The papers' experiments.
speed
    The speed targets of the estimators, measured side by side.

Each suite writes ``report.md``, CSV tables and PNG plots to ``--output``.

Contract for suite modules: a module ``skquad/benchmarks/_NAME.py`` exposes

.. code-block:: python

    def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto",
            progress=print) -> dict
    def speed(*, output_dir, quick=False, repeats=None, datasets=None, device="auto",
              progress=print) -> dict

returning ``{"title": str, "markdown": str, "tables": {name: DataFrame},
"figures": [file names saved under output_dir]}``.
"""
