"""Multilabel y (a label indicator matrix) for QNNClassifier and RPQNNClassifier (_classifier.py).

As MLPClassifier: one logistic output per label, ``predict`` returns the
indicator matrix, ``predict_proba`` one independent probability per label;
early stopping (on subset accuracy, unstratified) and ``partial_fit`` work
with it; inspection and ``to_torch`` cover it; ONNX refuses it clearly.
"""

import warnings

import numpy as np
import pytest
import torch
from scipy.special import expit
from sklearn.datasets import make_multilabel_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score
from sklearn.preprocessing import StandardScaler

from skquad import QNNClassifier, RPQNNClassifier

CLASSIFIERS = [QNNClassifier, RPQNNClassifier]


@pytest.fixture(scope="module")
def multilabel():
    X, Y = make_multilabel_classification(n_samples=80, n_features=6, n_classes=4, random_state=0)
    return StandardScaler().fit_transform(X), Y


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_multilabel_outputs_are_per_label(Classifier, multilabel):
    X, Y = multilabel
    with warnings.catch_warnings():
        # whether L-BFGS meets tol in 300 iterations is not this test's subject
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = Classifier((8,), solver="lbfgs", alpha=1e-4, max_iter=300, random_state=0).fit(X, Y)
    assert clf.out_activation_ == "logistic" and clf.n_outputs_ == 4
    np.testing.assert_array_equal(clf.classes_, np.arange(4))
    scores = clf.decision_function(X)
    proba = clf.predict_proba(X)
    # one independent sigmoid per label, not a softmax (kept inside (0, 1):
    # the smallest probability is the smallest normal double, hence atol)
    np.testing.assert_allclose(proba, expit(scores), rtol=1e-12, atol=1e-300)
    assert np.all((proba > 0) & (proba < 1))
    np.testing.assert_array_equal(clf.predict(X), (scores > 0).astype(int))
    assert clf.predict(X).dtype.kind == Y.dtype.kind
    assert clf.score(X, Y) == accuracy_score(Y, clf.predict(X)) > 0.9


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_multilabel_partial_fit_and_early_stopping(Classifier, multilabel):
    X, Y = multilabel
    clf = Classifier((8,), learning_rate_init=0.05, random_state=0)
    for _ in range(3):
        clf.partial_fit(X, Y, classes=np.arange(4))
    assert clf.n_iter_ == 1 and len(clf.loss_curve_) == 3 and clf.t_ == 3 * len(X)
    with pytest.raises(ValueError, match="1-D class labels"):
        clf.partial_fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="3 columns"):
        clf.partial_fit(X, Y[:, :3])
    with pytest.raises(ValueError, match="does not match the 4 columns"):
        Classifier().partial_fit(X, Y, classes=[0, 1])
    with pytest.warns(ConvergenceWarning):
        clf = Classifier((8,), early_stopping=True, max_iter=5, random_state=0).fit(X, Y)
    assert clf.best_loss_ is None and len(clf.validation_scores_) == 5
    # subset accuracy on 8 held-out samples: a multiple of 1/8
    assert all(float(8 * s).is_integer() for s in clf.validation_scores_)


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_multilabel_refuses_class_weight(Classifier, multilabel):
    X, Y = multilabel
    with pytest.raises(ValueError, match="class_weight is not supported for multilabel"):
        Classifier(class_weight="balanced").fit(X, Y)


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_multilabel_inspection_and_export(Classifier, multilabel):
    from skquad.inspection import quadratic_neurons

    X, Y = multilabel
    with pytest.warns(ConvergenceWarning):
        clf = Classifier((5,), max_iter=5, random_state=0).fit(X, Y)
    out = clf.to_torch()(torch.as_tensor(X)).detach().numpy()
    np.testing.assert_allclose(out, clf.decision_function(X), rtol=1e-10, atol=1e-12)
    names = [neuron.name for neuron in quadratic_neurons(clf)]
    assert names == [f"score (log-odds of label {k})" for k in range(4)]
    skl2onnx = pytest.importorskip("skl2onnx")
    from skquad.export import register_onnx_converters

    register_onnx_converters()
    with pytest.raises(NotImplementedError, match="multilabel y"):
        skl2onnx.to_onnx(clf, X[:1])
