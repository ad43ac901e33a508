"""Route Dask collections to :mod:`skquad._dask`, without importing Dask.

:func:`dask_dispatch` decorates a method (through ``skquad._base.dispatch_inputs``,
visible on each estimator's methods); by the method's name it wraps

* the prediction methods (``predict``, ``predict_proba``,
  ``predict_log_proba``, ``decision_function``, ``score``): on a Dask
  collection they run block by block on the workers
  (:func:`skquad._dask.predict_blockwise`, :func:`skquad._dask.score_blockwise`);
* ``fit`` and ``partial_fit`` of the estimators that cannot fit on a Dask
  collection without gathering it into one process: they refuse one, and
  say what to do instead. Estimators that can (``_fits_dask_collections =
  True``) dispatch inside their own ``fit``.

A Dask collection can only exist once its creator has imported ``dask``, so
the check looks at ``sys.modules`` first: ``import skquad`` never imports Dask,
and an estimator fed numpy arrays never touches it.
"""

import functools
import sys

from ._foundation._atomic import fitted_view

__all__ = ["FIT_METHODS", "PREDICTION_METHODS", "dask_dispatch", "is_dask_collection", "route_of"]

PREDICTION_METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "score")
FIT_METHODS = ("fit", "partial_fit")


def is_dask_collection(*objects):
    """Whether any of ``objects`` is a Dask collection (array, dataframe, series, ...)."""
    if "dask" not in sys.modules:
        return False
    from dask import is_dask_collection as check

    return any(check(obj) for obj in objects)


def _prediction(method, name):
    @functools.wraps(method)
    def dispatch(estimator, X, *args, **kwargs):
        # One model throughout, inherited ``score`` included (skquad/_foundation/_atomic.py).
        estimator = fitted_view(estimator)
        if is_dask_collection(X, *args, *kwargs.values()):
            from . import _dask

            if name == "score":
                return _dask.score_blockwise(estimator, X, *args, **kwargs)
            return _dask.predict_blockwise(estimator, name, X)
        return method(estimator, X, *args, **kwargs)

    dispatch.skquad_reads_fitted_state = True
    return dispatch


def _refusing_fit(method, name):
    @functools.wraps(method)
    def guard(estimator, *args, **kwargs):
        if not getattr(estimator, "_fits_dask_collections", False) or name != "fit":
            if is_dask_collection(*args, *kwargs.values()):
                raise TypeError(_fit_refusal(estimator, name))
        return method(estimator, *args, **kwargs)

    return guard


def _fit_refusal(estimator, name):
    estimator_name = type(estimator).__name__
    message = (
        f"{estimator_name}.{name} does not take Dask collections: it would gather the "
        "whole data into this process. "
    )
    if hasattr(estimator, "partial_fit"):
        return message + (
            "Stream the blocks through partial_fit instead, with "
            f"dask_ml.wrappers.Incremental({estimator_name}(...)).fit(X, y, classes=...) "
            "(classes only for classifiers), or pass X.compute() if the data fit in memory."
        )
    single, chosen = getattr(estimator, "_dask_single_estimator", ("", ""))
    advice = (
        f"choose the hyper-parameters on a sample that fits in memory (search = "
        f"{estimator_name}(...).fit(X[:n].compute(), y[:n].compute())), then fit "
        f"{single}({chosen}) on the Dask collections: it fits them data-parallel"
    ) if single else "fit it on a sample that fits in memory (e.g. X[:n].compute())"
    return message + f"Instead, {advice}. Predictions on Dask collections run block by block."


def route_of(method, routes):
    """``routes[0]`` for a fit method, ``routes[1]`` for a prediction method, by ``method``'s name."""
    name = method.__name__
    if name not in FIT_METHODS + PREDICTION_METHODS:
        raise ValueError(f"{name} is neither a fit method {FIT_METHODS} nor a prediction method "
                         f"{PREDICTION_METHODS}: it takes no routed input.")
    fit_route, prediction_route = routes
    return (prediction_route if name in PREDICTION_METHODS else fit_route)(method, name)


def dask_dispatch(method):
    """Decorate a fit or prediction method: Dask collections routed as the module docstring says."""
    return route_of(method, (_refusing_fit, _prediction))
