"""Functions of an upper room that a lower one calls, looked up when called.

The estimators' ``to_torch`` method is :func:`skquad.export.to_torch`, but the
base cannot import export: export stands above the estimators it converts, and
an import would close a circle. The base calls it through this module, which
finds it by name on first use, as ``skquad/__init__.py`` finds the estimators.
"""

import importlib


def to_torch(estimator, **kwargs):
    """:func:`skquad.export.to_torch` of ``estimator``."""
    return importlib.import_module("skquad.export").to_torch(estimator, **kwargs)
