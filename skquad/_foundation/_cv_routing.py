"""Metadata routing of a CV estimator's ``fit(X, y, **params)`` to its splitter (``groups``).

LogisticRegressionCV's rule: with ``sklearn.set_config(enable_metadata_routing=True)``
the splitter's ``split`` receives what it requests (a group splitter requests
``groups``); without, extra ``params`` are refused by ``_raise_for_params``.
"""

from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _raise_for_params,
    _routing_enabled,
    process_routing,
)

__all__ = ["splitter_params", "splitter_router"]


def splitter_router(estimator):
    """The :class:`~sklearn.utils.metadata_routing.MetadataRouter` of ``fit`` to ``estimator.cv``'s ``split``."""
    return (
        MetadataRouter(owner=estimator)
        .add_self_request(estimator)
        .add(splitter=estimator.cv, method_mapping=MethodMapping().add(caller="fit", callee="split"))
    )


def splitter_params(estimator, params):
    """The keyword arguments of the splitter's ``split`` among ``fit``'s ``params``."""
    _raise_for_params(params, estimator, "fit")
    if not _routing_enabled():
        return {}
    return process_routing(estimator, "fit", **params).splitter.split
