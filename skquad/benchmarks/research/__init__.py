"""The paper reproductions and speed runs of ``python -m skquad.benchmarks``.

Suites of the benchmark command, not a library: each module follows the suite
contract of :mod:`skquad.benchmarks.__main__` (``run`` and/or ``speed``
returning a report section) and is run through the command, whose ``SUITES``
table names the suite of each module and part (``--suite paper001``, ...); each
module's docstring says what it measures.

They are written on skquad's public API only (the estimators, ``skquad.nn``,
``skquad.convex``, ``skquad.datasets``) plus the command's report helpers
(Markdown tables, figures on the Agg backend, child processes), so that they keep working
when the internals change; ``tests/test_architecture.py`` checks it.
"""

__all__ = []
