"""skquad._dask_dispatch: Dask collections routed to skquad._dask, Dask itself never imported.

The routing is checked with a stand-in ``dask`` module (its ``is_dask_collection``
recognizes one marker class) and a stand-in ``skquad._dask`` that records its calls,
so these tests need no Dask; tests/test_dask.py runs the real collections.
"""

import inspect
import sys
import types

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils._available_if import available_if

import skquad
from skquad._dask_dispatch import FIT_METHODS, PREDICTION_METHODS, dask_dispatch, is_dask_collection


class Collection:
    """What the stand-in Dask recognizes as one of its collections."""


@pytest.fixture
def fake_dask(monkeypatch):
    """A stand-in ``dask`` in sys.modules and a ``skquad._dask`` recording its calls."""
    dask = types.ModuleType("dask")
    dask.is_dask_collection = lambda obj: isinstance(obj, Collection)
    monkeypatch.setitem(sys.modules, "dask", dask)
    calls = []
    blockwise = types.ModuleType("skquad._dask")
    blockwise.predict_blockwise = lambda est, method, X: calls.append(("predict", method, X)) or "blockwise"
    blockwise.score_blockwise = lambda est, X, y, **kw: calls.append(("score", X, y, kw)) or 0.5
    monkeypatch.setitem(sys.modules, "skquad._dask", blockwise)
    monkeypatch.setattr(skquad, "_dask", blockwise, raising=False)
    return calls


def _estimator_class(fits_dask=False, with_partial_fit=True):
    class Model(BaseEstimator):
        _fits_dask_collections = fits_dask

        @dask_dispatch
        def fit(self, X, y=None):
            self.fitted_on_ = X
            return self

        @dask_dispatch
        def predict(self, X):
            return "in memory"

        @dask_dispatch
        def decision_function(self, X):
            return "in memory"

        @dask_dispatch
        def score(self, X, y, sample_weight=None):
            return 1.0

        @available_if(lambda self: getattr(self, "probabilistic", False))
        @dask_dispatch
        def predict_proba(self, X):
            return "in memory"

    if with_partial_fit:
        def partial_fit(self, X, y=None):
            return self

        Model.partial_fit = dask_dispatch(partial_fit)
    return Model


def test_without_dask_loaded_nothing_is_a_dask_collection(monkeypatch):
    monkeypatch.delitem(sys.modules, "dask", raising=False)
    assert not is_dask_collection(np.ones(3), Collection(), None)
    assert "dask" not in sys.modules  # the check itself did not import it


def test_with_dask_loaded_only_its_collections_are_recognized(fake_dask):
    assert is_dask_collection(Collection())
    assert is_dask_collection(np.ones(3), Collection())  # any of the arguments
    assert not is_dask_collection(np.ones(3), [1, 2], None)


def test_predictions_on_a_collection_run_blockwise(fake_dask):
    estimator = _estimator_class()().fit(np.ones((2, 2)))
    X = Collection()
    assert estimator.predict(X) == "blockwise"
    assert estimator.decision_function(X) == "blockwise"
    assert fake_dask == [("predict", "predict", X), ("predict", "decision_function", X)]
    # numpy input stays on the estimator's own method
    assert estimator.predict(np.ones((2, 2))) == "in memory"
    assert len(fake_dask) == 2


def test_score_is_reduced_blockwise_when_any_argument_is_a_collection(fake_dask):
    estimator = _estimator_class()().fit(np.ones((2, 2)))
    X, y = np.ones((2, 2)), Collection()
    assert estimator.score(X, y, sample_weight=None) == 0.5
    assert fake_dask == [("score", X, y, {"sample_weight": None})]
    assert estimator.score(X, np.ones(2)) == 1.0


def test_available_if_keeps_deciding_whether_the_method_exists(fake_dask):
    estimator = _estimator_class()().fit(np.ones((2, 2)))
    assert not hasattr(estimator, "predict_proba")
    estimator.probabilistic = True
    assert estimator.predict_proba(np.ones((2, 2))) == "in memory"
    assert estimator.predict_proba(Collection()) == "blockwise"


def test_fit_on_a_collection_is_refused_with_what_to_do_instead(fake_dask):
    Model = _estimator_class()
    with pytest.raises(TypeError, match=r"Model.fit does not take Dask collections.*partial_fit.*Incremental"):
        Model().fit(Collection())
    with pytest.raises(TypeError, match=r"Model.partial_fit does not take Dask collections"):
        Model().partial_fit(np.ones((2, 2)), Collection())  # y a collection counts too
    # without partial_fit the advice is to fit on a sample
    with pytest.raises(TypeError, match=r"fit it on a sample"):
        _estimator_class(with_partial_fit=False)().fit(Collection())
    assert fake_dask == []


def test_an_estimator_that_fits_collections_gets_them_in_fit_only(fake_dask):
    Model = _estimator_class(fits_dask=True)
    X = Collection()
    assert Model().fit(X).fitted_on_ is X
    with pytest.raises(TypeError, match="partial_fit does not take Dask collections"):
        Model().partial_fit(X)


def test_only_fit_and_prediction_methods_take_the_decorator():
    def transform(self, X):
        return X

    with pytest.raises(ValueError, match="transform is neither a fit method"):
        dask_dispatch(transform)


def test_every_skquad_estimator_is_dask_aware(fake_dask):
    # every public estimator's methods carry the decorator (tests/test_dask.py checks them all)
    X = np.random.RandomState(0).normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = skquad.QuadraticLogisticRegression().fit(X, y)
    assert clf.predict_proba(Collection()) == "blockwise"
    with pytest.raises(TypeError, match="BackpropQuantizedClassifier.fit does not take Dask"):
        skquad.BackpropQuantizedClassifier().fit(Collection(), y)


@pytest.mark.parametrize("name", skquad.__all__)
def test_every_estimator_routes_dask_collections(name):
    # Every fit and prediction method of every public class carries @dispatch_inputs
    # (skquad/_base.py), the ones that available_if hides included.
    cls = getattr(skquad, name)
    methods = [method for method in FIT_METHODS + PREDICTION_METHODS if hasattr(cls, method)]
    assert {"fit", "predict", "score"} <= set(methods)
    for method in methods:
        function = inspect.getattr_static(cls, method)
        function = getattr(function, "fn", function)  # under available_if
        assert getattr(function, "skquad_dispatches_inputs", False), (name, method)
