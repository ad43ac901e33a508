"""The logistic output layer of a binary network, solved in the neurons' lifted coordinates."""

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skquad import BackpropQuantizedClassifier
from skquad.convex.statistics import neuron_svecs, svec_rows
from skquad.quantized._logistic_output import logistic_output_layer

# the networks here train three epochs only: their output layers are what is under test
pytestmark = pytest.mark.filterwarnings("ignore:Stochastic Optimizer:sklearn.exceptions.ConvergenceWarning")


@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_output_layer_is_scikit_learns_logistic_regression_on_the_scaled_outputs(n_classes):
    # Solved in the neurons' lifted coordinates, it is the logistic regression of the labels on
    # the outputs H, centred and scaled to unit mean square, at scikit-learn's C.
    X, y = load_wine(return_X_y=True)
    X, y = StandardScaler().fit_transform(X)[:, :4], np.minimum(y, n_classes - 1)
    model = BackpropQuantizedClassifier(n_neurons=30, max_iter=3, refit_output_layer=False,
                                        random_state=0).fit(X, y)
    lifting = model._lifting()
    H = lifting.bilinear(X, model.U_, model.V_)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    coef, intercept = logistic_output_layer(
        svec_rows(lifting.features(X)), neuron_svecs(model.U_, model.V_), y, weight, C=0.5,
        tol=1e-12, max_iter=10_000)
    mean = weight @ H / weight.sum()
    scale = np.sqrt(weight @ ((H - mean) ** 2).sum(axis=1) / weight.sum() / H.shape[1])
    reference = LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000).fit(
        (H - mean) / scale, y, sample_weight=weight)
    np.testing.assert_allclose(H @ coef + intercept,
                               reference.decision_function((H - mean) / scale).reshape(len(y), -1),
                               atol=1e-5 * np.abs(H @ coef).max())


def test_a_refit_that_runs_out_of_iterations_says_so_in_the_networks_terms():
    from sklearn.exceptions import ConvergenceWarning

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:, :4]
    model = BackpropQuantizedClassifier(n_neurons=30, max_iter=3, refit_output_layer=False,
                                        random_state=0).fit(X, y)
    lifting = model._lifting()
    with pytest.warns(ConvergenceWarning, match="logistic refit of the output layer stopped after 2"):
        logistic_output_layer(svec_rows(lifting.features(X)), neuron_svecs(model.U_, model.V_), y,
                              np.ones(len(y)), max_iter=2)


def test_the_outputs_themselves_give_the_same_layer_and_wide_inputs_take_them(monkeypatch):
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:, :4]
    model = BackpropQuantizedClassifier(n_neurons=30, max_iter=3, refit_output_layer=False,
                                        random_state=0).fit(X, y)
    lifting = model._lifting()
    H = lifting.bilinear(X, model.U_, model.V_)
    common = dict(labels=y, weight=np.ones(len(y)), tol=1e-12, max_iter=10_000)
    factored = logistic_output_layer(svec_rows(lifting.features(X)), neuron_svecs(model.U_, model.V_),
                                     **common)
    explicit = logistic_output_layer(H, None, **common)
    np.testing.assert_allclose(H @ factored[0] + factored[1], H @ explicit[0] + explicit[1],
                               atol=1e-5 * np.abs(H @ explicit[0]).max())
    # 40 features: 861 lifted coordinates against 25 neurons, so the layer reads H; a
    # factored solve would form an 861 x 861 eigenproblem and n x 861 rows.
    import skquad.quantized._backprop as backprop_module

    monkeypatch.setattr(backprop_module, "svec_rows", lambda *args: pytest.fail("formed Φ"))
    rng = np.random.default_rng(0)
    wide = rng.standard_normal((120, 40))
    labels = np.digitize(wide[:, 0] * wide[:, 1], [-0.5, 0.5])
    network = BackpropQuantizedClassifier(n_neurons=25, max_iter=3, refit_output_layer="logistic",
                                          random_state=0).fit(wide, labels)
    assert network.refit_loss_ == "logistic" and network.alpha_.shape == (25, 3)
