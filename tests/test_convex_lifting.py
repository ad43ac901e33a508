"""Multi-level weights, polynomial activation lifting and the Appendix C export."""

import numpy as np
import pytest

from skquad.convex import (
    InputLifting,
    bilinear_network_scores,
    collapse_replicas,
    export_quadratic_network,
    replicate_features,
)

LIFTINGS = [
    InputLifting(fit_intercept=False),
    InputLifting(fit_intercept=True),
    InputLifting(fit_intercept=True, levels=3),
    InputLifting(fit_intercept=True, activation=(0.1, 1.0, 0.5)),
    InputLifting(fit_intercept=False, levels=2, activation=(1.0, -2.0, 0.0)),
]


def _random_network(lifting, n_features, n_neurons, n_outputs, seed):
    rng = np.random.RandomState(seed)
    p = lifting.n_lifted(n_features)
    U = rng.choice([-1, 1], size=(n_neurons, p)).astype(np.int8)
    V = rng.choice([-1, 1], size=(n_neurons, p)).astype(np.int8)
    alpha = rng.standard_normal((n_neurons, n_outputs))
    return U, V, alpha


def test_replication_turns_binary_weights_into_multilevel_ones():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((20, 4))
    M = 4
    U = rng.choice([-1, 1], size=(6, 4 * M))
    q = collapse_replicas(U, M)
    assert set(np.unique(q)) <= {-4, -2, 0, 2, 4}
    np.testing.assert_allclose(replicate_features(X, M) @ U.T, X @ q.T)
    # every level is reachable
    assert set(np.unique(collapse_replicas(np.array([[1, 1, 1, 1], [1, 1, 1, -1], [1, 1, -1, -1]]), M))) == {4, 2, 0}


@pytest.mark.parametrize("lifting", LIFTINGS, ids=repr)
def test_lifted_matrices_match_the_bilinear_form(lifting):
    rng = np.random.RandomState(1)
    X = rng.standard_normal((15, 3))
    U, V, _ = _random_network(lifting, 3, 5, 1, seed=2)
    direct = np.einsum("mi,nij,mj->nm", U.astype(float), lifting.matrices(X), V.astype(float))
    np.testing.assert_allclose(lifting.bilinear(X, U, V), direct, atol=1e-10)
    matrix = rng.standard_normal((U.shape[1], U.shape[1]))
    np.testing.assert_allclose(
        lifting.inner(X, matrix), np.einsum("nij,ij->n", lifting.matrices(X), matrix), atol=1e-10
    )
    assert lifting.matrices(X).shape[1] == lifting.n_lifted(3)


@pytest.mark.parametrize("lifting", LIFTINGS, ids=repr)
def test_monomials_span_every_neurons_outputs(lifting):
    # The refit's range basis (second_layer, span=): every u^T L(x) v is a
    # combination of the monomials, with k (k + 1) / 2 columns for the k
    # distinct coordinates whatever the replicas.
    rng = np.random.RandomState(4)
    X = rng.standard_normal((40, 3))
    U, V, _ = _random_network(lifting, 3, 12, 1, seed=5)
    span = lifting.monomials(X)
    k = 3 + int(lifting.fit_intercept) + int(lifting.polynomial)
    assert span.shape == (40, k * (k + 1) // 2)
    outputs = lifting.bilinear(X, U, V)
    coefficients = np.linalg.lstsq(span, outputs, rcond=None)[0]
    np.testing.assert_allclose(span @ coefficients, outputs, atol=1e-9)


def test_polynomial_lifting_gives_the_polynomial_activation():
    """u^T L(x) u with u = [w; 1] is sigma(x^T w) (sections 2.3-2.4)."""
    a, b, c = 0.3, -1.2, 0.7
    lifting = InputLifting(fit_intercept=False, activation=(a, b, c))
    rng = np.random.RandomState(3)
    X = rng.standard_normal((25, 5))
    w = rng.choice([-1, 1], size=(4, 5))
    lifted_w = np.hstack([w, np.ones((4, 1))])
    t = X @ w.T
    np.testing.assert_allclose(lifting.quadratic(X, lifted_w), a * t**2 + b * t + c, atol=1e-10)
    # the sign symmetry of section 2.3: -[w; 1] gives the same neuron
    np.testing.assert_allclose(lifting.quadratic(X, -lifted_w), a * t**2 + b * t + c, atol=1e-10)


@pytest.mark.parametrize("lifting", LIFTINGS, ids=repr)
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_export_to_quadratic_activation_network_is_exact(lifting, n_outputs):
    rng = np.random.RandomState(4)
    X = rng.standard_normal((30, 3))
    U, V, alpha = _random_network(lifting, 3, 7, n_outputs, seed=5)
    network = export_quadratic_network(U, V, alpha, lifting)
    assert network.weights.shape == (21, lifting.n_lifted(3))
    assert set(np.unique(network.weights)) <= {-1, 0, 1}
    expected = bilinear_network_scores(lifting, X, U, V, alpha)
    np.testing.assert_allclose(network.scores(X), expected, rtol=1e-10, atol=1e-10)

    # The same network from integer weights on the original features.
    weights, bias, lifting_sign = network.integer_weights()
    assert np.abs(weights).max() <= lifting.levels
    t = X @ weights.T + (0 if bias is None else bias)
    if lifting_sign is None:
        activations = t**2
    else:
        a, b, c = lifting.activation
        activations = a * t**2 + b * lifting_sign * t + c * lifting_sign**2
    np.testing.assert_allclose(activations @ network.output_weights, expected, rtol=1e-10, atol=1e-10)


def test_exported_network_scores_in_bounded_row_batches(monkeypatch):
    # Issue 19: QuadraticNetwork.scores formed the whole (n, 3 m) activation
    # matrix (300k rows x 500 neurons: 3.35 GiB) where predict batches.
    import skquad.convex.lifting as lifting_module

    lifting = InputLifting(fit_intercept=True)
    rng = np.random.RandomState(6)
    X = rng.standard_normal((50, 3))
    U, V, alpha = _random_network(lifting, 3, 4, 2, seed=7)
    network = export_quadratic_network(U, V, alpha, lifting)
    whole = network.scores(X)
    seen = []
    quadratic = InputLifting.quadratic
    monkeypatch.setattr(InputLifting, "quadratic",
                        lambda self, X, W: seen.append(len(X)) or quadratic(self, X, W))
    # 3 rows per batch: 3 * 8 bytes * 12 neurons * 3 rows
    monkeypatch.setattr(lifting_module, "PREDICT_BATCH_BYTES", 3 * 8 * 12 * 3)
    batched = network.scores(X)
    assert max(seen) == 3 and sum(seen) == 50
    # the same arithmetic on each row: equal to rounding of the final product
    np.testing.assert_allclose(batched, whole, rtol=1e-12, atol=1e-12)


def test_the_hidden_outputs_ask_the_separate_calls_thread_rule_with_their_products_flops(monkeypatch):
    # A small product runs on one BLAS thread (a second one would spin on after it, burning a
    # core); the rule itself is tested in test_runtime.py.
    import skquad._foundation._runtime as runtime
    import skquad.convex.lifting as lifting_module
    from threadpoolctl import threadpool_info

    asked, inside = [], []

    def thread_count(n_threads, device, flops, *, separate_calls=False):
        asked.append((n_threads, device, flops, separate_calls))
        return 1

    real_bilinear = lifting_module.InputLifting._bilinear

    def bilinear(self, Z, U, V):
        inside.append(min(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"))
        return real_bilinear(self, Z, U, V)

    rng = np.random.default_rng(0)
    X, U = rng.standard_normal((20, 3)), rng.choice([-1.0, 1.0], size=(5, 4))
    expected = InputLifting().bilinear(X, U, U)
    monkeypatch.setattr(runtime, "thread_count", thread_count)  # what separate_calls_blas asks
    monkeypatch.setattr(lifting_module.InputLifting, "_bilinear", bilinear)
    np.testing.assert_array_equal(InputLifting().bilinear(X, U, U), expected)
    assert asked == [("auto", "cpu", 4.0 * 20 * 4 * 5, True)]  # 4 n p m: two products
    assert inside == [1]
