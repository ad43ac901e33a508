"""The closed-form quadratic-form math against torch autograd and finite differences."""

import threading

import numpy as np
import pytest
import torch

from skquad.nn.quadratic_form import (
    chunked_quadratic_form_scores,
    log_loss,
    log_loss_residuals,
    low_rank_frobenius_sq,
    log_loss_per_sample,
    low_rank_log_loss,
    low_rank_quadratic_scores,
    low_rank_to_dense,
    quadratic_form_scores,
    quadratic_log_loss_gradient,
    quadratic_penalty,
    weighted_gram,
)


def _problem(n_scores, n_classes, n_samples=40, n_features=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    randn = lambda *s: torch.randn(*s, generator=generator, dtype=torch.float64)
    X = randn(n_samples, n_features)
    y = torch.randint(0, n_classes, (n_samples,), generator=generator)
    weight = torch.rand(n_samples, generator=generator, dtype=torch.float64)
    A = randn(n_scores, n_features, n_features)
    Q = 0.3 * (A + A.transpose(1, 2))
    coef = randn(n_scores, n_features)
    intercept = randn(n_scores)
    return X, y, weight, Q, coef, intercept


def _naive_objective(X, y, weight, Q, coef, intercept, l2, cross_weight=1.0):
    """The objective written directly, as autograd's reference."""
    scores = torch.einsum("ni,kij,nj->nk", X, Q, X) + X @ coef.T + intercept
    if scores.shape[1] == 1:
        p1 = torch.sigmoid(scores[:, 0])
        per_sample = -torch.where(y == 1, torch.log(p1), torch.log1p(-p1))
    else:
        per_sample = -torch.log_softmax(scores, 1)[torch.arange(len(y)), y]
    # the penalty entry by entry: weight 1 on the diagonal, cross_weight off it
    entry_weight = torch.full(Q.shape[1:], cross_weight, dtype=Q.dtype).fill_diagonal_(1.0)
    penalty = 0.5 * l2 * ((entry_weight * Q.square()).sum() + coef.square().sum())
    return (weight * per_sample).sum() + penalty


def _sorted_blocks(X, y, weight, n_classes):
    order = torch.argsort(y, stable=True)
    counts = torch.bincount(y, minlength=n_classes).tolist()
    bounds = np.concatenate([[0], np.cumsum(counts)])
    blocks = [(int(bounds[k]), int(bounds[k + 1])) for k in range(n_classes)]
    return X[order], y[order], weight[order], blocks


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (3, 3)])
@pytest.mark.parametrize("use_blocks", [False, True])
@pytest.mark.parametrize("cross_weight", [1.0, 2.0])
def test_closed_form_gradient_matches_autograd(n_scores, n_classes, use_blocks, cross_weight, thread_counts):
    X, y, weight, Q, coef, intercept = _problem(n_scores, n_classes)
    blocks = None
    if use_blocks:
        X, y, weight, blocks = _sorted_blocks(X, y, weight, n_classes)
    l2 = 0.7
    loss, gQ, gcoef, gintercept = quadratic_log_loss_gradient(
        X, y, weight, Q, coef, intercept, l2, cross_weight=cross_weight, class_blocks=blocks,
        scratch=torch.empty_like(X),
    )
    leaves = [t.clone().requires_grad_(True) for t in (Q, coef, intercept)]
    reference = _naive_objective(X, y, weight, *leaves, l2, cross_weight)
    rQ, rcoef, rintercept = torch.autograd.grad(reference, leaves)
    torch.testing.assert_close(loss, reference.detach(), rtol=1e-12, atol=0)
    # autograd differentiates Q entrywise: its gradient is symmetric as well
    torch.testing.assert_close(gQ, rQ, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gcoef, rcoef, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gintercept, rintercept, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_scores, n_classes, cross_weight", [(1, 2, 1.0), (4, 4, 2.0)])
def test_closed_form_gradient_matches_finite_differences(n_scores, n_classes, cross_weight):
    X, y, weight, Q, coef, intercept = _problem(n_scores, n_classes, seed=3)
    X, y, weight, blocks = _sorted_blocks(X, y, weight, n_classes)
    l2 = 0.1

    def value(Q_, coef_, intercept_):
        return float(
            quadratic_log_loss_gradient(
                X, y, weight, Q_, coef_, intercept_, l2, cross_weight=cross_weight,
                class_blocks=blocks,
            )[0]
        )

    _, gQ, gcoef, gintercept = quadratic_log_loss_gradient(
        X, y, weight, Q, coef, intercept, l2, cross_weight=cross_weight, class_blocks=blocks
    )
    rng = np.random.RandomState(0)
    step = 1e-6
    for _ in range(5):
        # random symmetric direction: the directional derivative is <G, D>
        D = torch.as_tensor(rng.randn(*Q.shape))
        D = D + D.transpose(1, 2)
        d_coef = torch.as_tensor(rng.randn(*coef.shape))
        d_intercept = torch.as_tensor(rng.randn(*intercept.shape))
        numeric = (
            value(Q + step * D, coef + step * d_coef, intercept + step * d_intercept)
            - value(Q - step * D, coef - step * d_coef, intercept - step * d_intercept)
        ) / (2 * step)
        analytic = float((gQ * D).sum() + (gcoef * d_coef).sum() + (gintercept * d_intercept).sum())
        assert numeric == pytest.approx(analytic, rel=1e-6, abs=1e-8)


def test_weighted_gram_signed_blocks_equal_plain_product():
    generator = torch.Generator().manual_seed(1)
    X = torch.randn(30, 6, generator=generator, dtype=torch.float64)
    weights = torch.rand(30, generator=generator, dtype=torch.float64)
    weights[10:22] *= -1.0
    expected = X.T @ (weights[:, None] * X)
    torch.testing.assert_close(weighted_gram(X, weights), expected)
    torch.testing.assert_close(weighted_gram(X, weights, negative_rows=(10, 22)), expected)
    # empty blocks at either end
    torch.testing.assert_close(
        weighted_gram(X, -weights.abs(), negative_rows=(0, 30)), X.T @ (-weights.abs()[:, None] * X)
    )
    torch.testing.assert_close(
        weighted_gram(X, weights.abs(), negative_rows=(30, 30)), X.T @ (weights.abs()[:, None] * X)
    )


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (3, 3)])
def test_loss_residuals_are_the_score_gradient(n_scores, n_classes):
    generator = torch.Generator().manual_seed(2)
    scores = torch.randn(25, n_scores, generator=generator, dtype=torch.float64) * 4
    y = torch.randint(0, n_classes, (25,), generator=generator)
    weight = torch.rand(25, generator=generator, dtype=torch.float64)
    loss, residuals = log_loss_residuals(scores, y, weight)
    leaf = scores.clone().requires_grad_(True)
    reference = log_loss(leaf, y, weight)
    (grad,) = torch.autograd.grad(reference, leaf)
    torch.testing.assert_close(loss, reference.detach())
    torch.testing.assert_close(residuals, grad)


def test_binary_loss_is_stable_for_large_scores():
    scores = torch.tensor([[800.0], [-800.0]], dtype=torch.float64)
    y = torch.tensor([0, 1])
    loss, residuals = log_loss_residuals(scores, y, torch.ones(2, dtype=torch.float64))
    assert float(loss) == pytest.approx(1600.0)
    torch.testing.assert_close(residuals[:, 0], torch.tensor([1.0, -1.0], dtype=torch.float64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_binary_loss_and_residuals_match_scipy_at_any_score(dtype):
    """The CPU engine's logistic loss and residuals (one exp for both): logaddexp's and
    expit's numbers, finite at scores far past exp's range, to the dtype's rounding."""
    import scipy.special

    from skquad.nn.quadratic_form import _residuals_by_score

    z = np.array([-1e4, -800.0, -90.0, -30.0, -1e-3, 0.0, 2e-8, 0.7, 17.0, 120.0, 1e4])
    y = np.array([0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1])
    weight = np.linspace(0.5, 1.5, z.size)
    positive = (y == 1).astype(dtype)
    loss, residuals = _residuals_by_score(
        z[None, :].astype(dtype), y, weight.astype(dtype), np.arange(z.size), positive
    )
    expected_loss = weight @ np.logaddexp(0.0, np.where(y == 1, -z, z))
    expected_residuals = weight * (scipy.special.expit(z) - (y == 1))
    rtol = 10 * float(np.finfo(dtype).eps)
    assert residuals.dtype == dtype and np.isfinite(float(loss))
    assert float(loss) == pytest.approx(expected_loss, rel=rtol)
    # (absolute: p - 1 near p = 1 keeps the rounding of p, as expit's does in the dtype)
    np.testing.assert_allclose(residuals[0], expected_residuals, rtol=rtol, atol=rtol)


def test_low_rank_scores_and_penalty_match_dense(thread_counts):
    generator = torch.Generator().manual_seed(4)
    randn = lambda *s: torch.randn(*s, generator=generator, dtype=torch.float64)
    X, vectors, scales = randn(20, 7), randn(3, 7, 2), randn(3, 2)
    coef, intercept = randn(3, 7), randn(3)
    dense = low_rank_to_dense(vectors, scales)
    assert torch.linalg.matrix_rank(dense[0]) == 2
    torch.testing.assert_close(dense, dense.transpose(1, 2))
    torch.testing.assert_close(
        low_rank_quadratic_scores(X, vectors, scales, coef, intercept),
        quadratic_form_scores(X, dense, coef, intercept),
    )
    torch.testing.assert_close(low_rank_frobenius_sq(vectors, scales), dense.square().sum())
    # the low-rank objective's penalty equals the dense one for both weightings
    y, weight = torch.zeros(20, dtype=torch.long), torch.zeros(20, dtype=torch.float64)
    for cross_weight in (1.0, 2.0):
        torch.testing.assert_close(
            low_rank_log_loss(X, y, weight, vectors, scales, coef, intercept, 2.0,
                              cross_weight=cross_weight),
            quadratic_penalty(dense, cross_weight) + coef.square().sum(),
        )
        torch.testing.assert_close(
            quadratic_penalty(dense, cross_weight),
            _naive_objective(X, y, weight, dense, coef * 0, intercept, 2.0, cross_weight),
        )


def test_low_rank_loss_gradcheck():
    generator = torch.Generator().manual_seed(5)
    randn = lambda *s: torch.randn(*s, generator=generator, dtype=torch.float64)
    X, y, weight = randn(15, 4), torch.randint(0, 3, (15,), generator=generator), torch.rand(
        15, generator=generator, dtype=torch.float64
    )
    params = [randn(3, 4, 2), randn(3, 2), randn(3, 4), randn(3)]
    params = [p.requires_grad_(True) for p in params]
    assert torch.autograd.gradcheck(
        lambda *p: low_rank_log_loss(X, y, weight, *p, 0.3, cross_weight=2.0), params
    )


def test_chunked_scores_equal_unchunked(monkeypatch, thread_counts):
    import skquad.nn.quadratic_form as qf

    X, _, _, Q, coef, intercept = _problem(2, 2, n_samples=50)
    expected = quadratic_form_scores(X, Q, coef, intercept)
    monkeypatch.setattr(qf, "_SCRATCH_ELEMENTS", 5 * 7)  # chunks of 7 rows
    torch.testing.assert_close(chunked_quadratic_form_scores(X, Q, coef, intercept), expected)


def _sparsify(X, max_elements):
    """Half the entries zeroed; rows in chunks of ``max_elements`` dense values."""
    import scipy.sparse

    from skquad._training import SparseRows

    X = X.clone()
    X[torch.rand(X.shape, generator=torch.Generator().manual_seed(1)) < 0.5] = 0.0
    rows = SparseRows(scipy.sparse.csr_matrix(X.numpy()))
    rows.dense_chunks = lambda chunk=max_elements, original=rows.dense_chunks: original(chunk)
    return X, rows


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (3, 3)])
def test_sparse_rows_give_the_dense_loss_gradient_and_scores(n_scores, n_classes, thread_counts):
    X, y, weight, Q, coef, intercept = _problem(n_scores, n_classes)
    # 7 rows of 5 features per chunk: the streamed path sums several chunks
    X, sparse = _sparsify(X, max_elements=35)
    assert len(list(sparse.dense_chunks())) > 1
    dense = quadratic_log_loss_gradient(X, y, weight, Q, coef, intercept, 0.3, cross_weight=2.0)
    streamed = quadratic_log_loss_gradient(
        sparse, y, weight, Q, coef, intercept, 0.3, cross_weight=2.0
    )
    for a, b in zip(dense, streamed):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(
        chunked_quadratic_form_scores(sparse, Q, coef, intercept),
        quadratic_form_scores(X, Q, coef, intercept), rtol=1e-12, atol=1e-12,
    )
    vectors = torch.randn(n_scores, X.shape[1], 2, dtype=torch.float64)
    scales = torch.randn(n_scores, 2, dtype=torch.float64)
    torch.testing.assert_close(
        low_rank_quadratic_scores(sparse, vectors, scales, coef, intercept),
        low_rank_quadratic_scores(X, vectors, scales, coef, intercept), rtol=1e-12, atol=1e-12,
    )


@pytest.mark.parametrize("low_rank", [False, True])
@pytest.mark.parametrize("free_entry", [False, True])
def test_engine_loss_and_gradient_writes_the_autograd_gradient(low_rank, free_entry, thread_counts):
    """The callable the training engine calls: loss and .grad against autograd."""
    from skquad.nn.quadratic_form import QuadraticScores, quadratic_logistic_loss_and_gradient

    X, y, weight, Q, coef, intercept = _problem(3, 3)
    if low_rank:
        vectors = torch.randn(3, X.shape[1], 2, dtype=torch.float64)
        scales = torch.randn(3, 2, dtype=torch.float64)
        tensors = [vectors, scales, coef, intercept]
    else:
        tensors = [Q, coef, intercept]
    module = QuadraticScores(tensors, fit_intercept=True)
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter)
    fn = quadratic_logistic_loss_and_gradient(
        module, 0.2, cross_weight=2.0, free_entry_gradient=free_entry and not low_rank
    )
    with torch.no_grad():  # as the engine calls it
        loss = fn(X, y, weight)
    leaves = [t.clone().requires_grad_(True) for t in tensors]
    if low_rank:
        reference = low_rank_log_loss(X, y, weight, *leaves, 0.2, cross_weight=2.0)
    else:
        reference = _naive_objective(X, y, weight, *leaves, 0.2, cross_weight=2.0)
    expected = torch.autograd.grad(reference, leaves)
    torch.testing.assert_close(loss, reference.detach())
    for name, grad in zip(module.names, expected):
        if free_entry and name == "Q" and not low_rank:
            grad = 2.0 * grad - torch.diag_embed(torch.diagonal(grad, dim1=1, dim2=2))
        torch.testing.assert_close(getattr(module, name).grad, grad)
    # the module's scores and per-sample losses (validation, divergence recovery)
    # give the same data loss as the unpenalised objective
    unpenalised = quadratic_logistic_loss_and_gradient(module, 0.0)
    with torch.no_grad():
        fn_data = unpenalised(X, y, weight)
        per_sample = log_loss_per_sample(module(X), y)
    torch.testing.assert_close((weight * per_sample).sum(), fn_data)


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (3, 3), (4, 4)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("path", ["chunks", "chunks-syrk", "chunks-unsorted", "small"])
def test_cpu_engine_gives_the_autograd_gradient(monkeypatch, n_scores, n_classes, dtype, path):
    """The CPU engine: TRMM scores and SYRK grams in chunks that cut through the class
    blocks (GEMM grams without them, or on narrow rows), or the small problems' two GEMMs.
    Softmax: the chunks compute K - 1 centred scores and grams, the last from their sum;
    the parameters are far from centred (an offset shared by every class), which the loss
    ignores and the penalty does not."""
    import skquad.nn.quadratic_form as quadratic_form

    X, y, weight, Q, coef, intercept = _problem(n_scores, n_classes, n_samples=97)
    if n_scores > 1:
        Q, coef, intercept = Q + 0.5 * Q[0], coef + 2.0, intercept - 3.0
    X, y, weight, blocks = _sorted_blocks(X, y, weight, n_classes)
    if path == "chunks-unsorted":
        order = torch.randperm(97, generator=torch.Generator().manual_seed(1))
        X, y, weight, blocks = X[order], y[order], weight[order], None
    if path.startswith("chunks"):
        # 5 features: chunks of 7 rows, 14 of them, most straddling a class boundary
        monkeypatch.setattr(quadratic_form, "_CPU_CHUNK_ELEMENTS", 35)
        monkeypatch.setattr(quadratic_form, "_SMALL_PROBLEM_PRODUCT", 0)
        if path == "chunks-syrk":  # the wide rows' grams on 5 features
            monkeypatch.setattr(quadratic_form, "_GEMM_GRAM_MAX_FEATURES", 0)
    else:
        monkeypatch.setattr(quadratic_form, "_SMALL_PROBLEM_PRODUCT", 1 << 30)
    cast = lambda t: t.to(dtype)
    loss, gQ, gcoef, gintercept = quadratic_log_loss_gradient(
        cast(X), y, cast(weight), cast(Q), cast(coef), cast(intercept), 0.7, cross_weight=2.0,
        class_blocks=blocks,
    )
    leaves = [t.clone().requires_grad_(True) for t in (Q, coef, intercept)]
    reference = _naive_objective(X, y, weight, *leaves, 0.7, 2.0)
    rQ, rcoef, rintercept = torch.autograd.grad(reference, leaves)
    rtol = 1e-10 if dtype == torch.float64 else 2e-5
    for value, expected in ((loss, reference.detach()), (gQ, rQ), (gcoef, rcoef),
                            (gintercept, rintercept)):
        assert value.dtype == dtype
        torch.testing.assert_close(value.double(), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (4, 4)])
def test_stacked_grams_in_row_blocks_give_the_data_gradient(monkeypatch, n_scores, n_classes):
    """The GEMM grams of all scores at once, in blocks of a few rows that cut through
    the chunks: with the rows' transposed copy kept in the caller's scratch, without
    a scratch (each chunk transposed in place), and where memory is too short for the
    copy or the copy is over its size limit, the very same numbers, and autograd's
    gradient."""
    import skquad.nn.quadratic_form as quadratic_form

    X, y, weight, Q, coef, intercept = _problem(n_scores, n_classes, n_samples=97)
    X, y, weight, _ = _sorted_blocks(X, y, weight, n_classes)
    # chunks of 7 rows on 5 features; factors of 2 rows (3 scores computed: 3 x 5 x 2)
    monkeypatch.setattr(quadratic_form, "_CPU_CHUNK_ELEMENTS", 35)
    monkeypatch.setattr(quadratic_form, "_SMALL_PROBLEM_PRODUCT", 0)
    monkeypatch.setattr(quadratic_form, "_GRAM_BLOCK_ELEMENTS", 2 * 5 * max(1, n_scores - 1))
    arrays = [t.numpy() for t in (X, y, weight, Q, coef, intercept)]
    run = lambda scratch: quadratic_form._numpy_log_loss_gradient(*arrays, None, scratch)
    kept = {}
    results = [run(kept), run(kept), run(None)]
    assert kept["columns"][0] is arrays[0]
    np.testing.assert_array_equal(kept["columns"][1], arrays[0].T)
    for name, value in (("_copy_fits_in_memory", lambda n_bytes: False),
                        ("_TRANSPOSED_COPY_BYTES", arrays[0].nbytes - 1)):
        with monkeypatch.context() as patch:
            patch.setattr(quadratic_form, name, value)
            short = {}
            results.append(run(short))
            assert short["columns"][1] is None
    for other in results[1:]:
        for value, expected in zip(other, results[0]):
            np.testing.assert_array_equal(value, expected)
    leaves = [t.clone().requires_grad_(True) for t in (Q, coef, intercept)]
    reference = _naive_objective(X, y, weight, *leaves, 0.0)
    expected = torch.autograd.grad(reference, leaves)
    np.testing.assert_allclose(results[0][0], reference.item(), rtol=1e-12)
    for value, gradient in zip(results[0][1:], expected):
        np.testing.assert_allclose(value, gradient.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (4, 4)])
def test_cpu_engine_skips_the_products_of_a_zero_Q_with_the_same_result(monkeypatch, n_scores,
                                                                         n_classes):
    """A score whose (centred) Q_k is zero needs no TRMM (every fit starts there): its
    quadratic part is exactly 0, so the loss and gradient are autograd's, in chunks."""
    import skquad.nn.quadratic_form as quadratic_form

    X, y, weight, Q, coef, intercept = _problem(n_scores, n_classes, n_samples=97)
    X, y, weight, blocks = _sorted_blocks(X, y, weight, n_classes)
    # binary: Q = 0; softmax: [A, A, A + D, A - D], whose mean is A, so that the first
    # two centred scores (of the K - 1 computed) have Q zero and the third does not
    if n_scores == 1:
        Q = torch.zeros_like(Q)
    else:
        # (eighths: the mean and the centring are exact)
        A, D = torch.round(8 * Q[0]) / 8, torch.round(8 * Q[1]) / 8
        Q = torch.stack([A, A, A + D, A - D])
    monkeypatch.setattr(quadratic_form, "_CPU_CHUNK_ELEMENTS", 35)
    monkeypatch.setattr(quadratic_form, "_SMALL_PROBLEM_PRODUCT", 0)
    skipped = []
    original = quadratic_form.upper_product_in_place
    monkeypatch.setattr(quadratic_form, "upper_product_in_place",
                        lambda upper, rows: skipped.append(upper.any()) or original(upper, rows))
    loss, gQ, gcoef, gintercept = quadratic_log_loss_gradient(
        X, y, weight, Q, coef, intercept, 0.7, cross_weight=2.0, class_blocks=blocks
    )
    # 14 chunks: no product for the binary score, one per chunk for the softmax's third
    assert all(skipped) and len(skipped) == (0 if n_scores == 1 else 14)
    leaves = [t.clone().requires_grad_(True) for t in (Q, coef, intercept)]
    reference = _naive_objective(X, y, weight, *leaves, 0.7, 2.0)
    expected = torch.autograd.grad(reference, leaves)
    torch.testing.assert_close(loss, reference.detach(), rtol=1e-10, atol=1e-10)
    for value, gradient in zip((gQ, gcoef, gintercept), expected):
        torch.testing.assert_close(value, gradient, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (3, 3)])
@pytest.mark.parametrize("sorted_rows", [True, False])
def test_cpu_engine_gives_the_same_bits_on_any_thread_count(monkeypatch, n_scores, n_classes,
                                                           sorted_rows):
    """The chunked CPU engine's threads take parts of the rows in turn; the parts (at most
    _CPU_PARTS, here 14 chunks in 4 parts) are summed each into its own gradient and added
    in a fixed order, so one, two or three threads give the very same float32 numbers."""
    import skquad.nn.quadratic_form as quadratic_form

    monkeypatch.setattr(quadratic_form, "_CPU_CHUNK_ELEMENTS", 35)
    monkeypatch.setattr(quadratic_form, "_CPU_PARTS", 4)
    monkeypatch.setattr(quadratic_form, "_SMALL_PROBLEM_PRODUCT", 0)
    X, y, weight, Q, coef, intercept = (
        t.float() if t.is_floating_point() else t
        for t in _problem(n_scores, n_classes, n_samples=97, seed=5)
    )
    blocks = None
    if sorted_rows:
        X, y, weight, blocks = _sorted_blocks(X, y, weight, n_classes)
    seen = set()
    original = quadratic_form._add_chunk_terms

    def recording(*args):
        seen.add(threading.get_ident())
        return original(*args)

    monkeypatch.setattr(quadratic_form, "_add_chunk_terms", recording)
    previous = torch.get_num_threads()
    results = []
    try:
        for n_threads in (1, 2, 3):
            torch.set_num_threads(n_threads)
            seen.clear()
            results.append(quadratic_log_loss_gradient(
                X, y, weight, Q, coef, intercept, 0.3, class_blocks=blocks
            ))
            # one thread sums in the caller's thread, more in a pool
            assert len(seen) <= n_threads and (threading.get_ident() in seen) == (n_threads == 1)
    finally:
        torch.set_num_threads(previous)
    for other in results[1:]:
        for value, expected in zip(other, results[0]):
            assert torch.equal(value, expected)
    gQ = results[0][1]
    assert torch.equal(gQ, gQ.transpose(1, 2))


@pytest.mark.parametrize("n_scores, n_classes", [(1, 2), (3, 3)])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("flat_path", ["design", "small", "chunks-gemm", "chunks-syrk"])
def test_packed_module_and_flat_objective_give_the_autograd_gradient(
    monkeypatch, n_scores, n_classes, fit_intercept, dtype, flat_path
):
    """Packed Q (upper triangle, sqrt(2) off the diagonal): the module's .grad and the
    numpy flat objective (on the degree-2 design matrix, or on the matrix products)
    both equal autograd's gradient of the naive objective with respect to the packed
    vector, and the packing is an isometry of symmetric Q."""
    import skquad.nn.quadratic_form as quadratic_form
    from skquad.nn.quadratic_form import (
        QuadraticScores,
        SymmetricPacking,
        quadratic_logistic_loss_and_gradient,
    )

    X, y, weight, Q, coef, intercept = _problem(n_scores, n_classes, n_samples=37)
    X, y, weight, blocks = _sorted_blocks(X, y, weight, n_classes)
    if not fit_intercept:
        intercept = torch.zeros_like(intercept)
    d = X.shape[1]
    packing = SymmetricPacking(d)
    v = packing.pack(Q)
    assert v.shape == (n_scores, d * (d + 1) // 2)
    torch.testing.assert_close(packing.unpack(v), Q)
    torch.testing.assert_close(v.square().sum(), Q.square().sum())

    # autograd through the unpacking, written independently of SymmetricPacking
    rows, cols = torch.triu_indices(d, d)
    scale = torch.where(rows == cols, 1.0, 2.0**0.5).double()
    leaves = [t.clone().requires_grad_(True) for t in (v, coef, intercept)]
    entries = leaves[0] / scale
    # Q = sum over packed entries of v_p / scale_p (E_ij + E_ji), E_ii once
    basis = torch.zeros(rows.shape[0], d, d, dtype=torch.float64)
    basis[torch.arange(rows.shape[0]), rows, cols] = 1.0
    basis[torch.arange(rows.shape[0]), cols, rows] = 1.0
    Q_of_v = torch.einsum("kp,pij->kij", entries, basis)
    reference = _naive_objective(X, y, weight, Q_of_v, *leaves[1:], 0.2, cross_weight=2.0)
    expected = torch.autograd.grad(reference, leaves)

    module = QuadraticScores([Q, coef, intercept], fit_intercept=fit_intercept, packed=True)
    module = module.to(dtype)
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter)
    fn = quadratic_logistic_loss_and_gradient(module, 0.2, cross_weight=2.0, class_blocks=blocks)
    tolerance = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else {}
    with torch.no_grad():
        loss = fn(X.to(dtype), y, weight.to(dtype))
    torch.testing.assert_close(loss.double(), reference.detach(), **tolerance)
    torch.testing.assert_close(module.Q_packed.grad.double(), expected[0], **tolerance)
    torch.testing.assert_close(module.coef.grad.double(), expected[1], **tolerance)
    torch.testing.assert_close(module.tensors()[0].double(), Q, **tolerance)
    # the stopping test's scales turn the packed gradient back into the full matrix's
    # gradient entries (what the unpacked fit's test reads)
    full = Q.clone().requires_grad_(True)
    (full_gradient,) = torch.autograd.grad(
        _naive_objective(X, y, weight, full, coef, intercept, 0.2, cross_weight=2.0), [full]
    )
    scales = module.lbfgs_gradient_scales()["Q_packed"]
    torch.testing.assert_close(
        module.Q_packed.grad.double() / scales, full_gradient[:, rows, cols], **tolerance
    )

    monkeypatch.setattr(quadratic_form, "_DESIGN_MATRIX_ELEMENTS", 1 << 30 if flat_path == "design" else 0)
    if flat_path.startswith("chunks"):
        # the chunked engine's grams (SYRK: upper triangles only) through the packing
        monkeypatch.setattr(quadratic_form, "_SMALL_PROBLEM_PRODUCT", 0)
        monkeypatch.setattr(quadratic_form, "_GEMM_GRAM_MAX_FEATURES",
                            0 if flat_path == "chunks-syrk" else 1 << 30)
    flat = fn.flat_objective(X.to(dtype), y, weight.to(dtype))
    theta = torch.cat([p.detach().double().ravel() for p in module.parameters() if p.requires_grad])
    value, gradient = flat(theta.numpy())
    assert gradient.dtype == np.float64 and gradient.shape == theta.shape
    np.testing.assert_allclose(value, float(reference.detach()), rtol=1e-4 if tolerance else 1e-7)
    expected_flat = torch.cat([g.ravel() for g in expected[: 3 if fit_intercept else 2]]).numpy()
    close = {"rtol": 1e-3, "atol": 1e-4} if tolerance else {"rtol": 1e-7, "atol": 1e-7}
    np.testing.assert_allclose(gradient, expected_flat, **close)


def test_symmetric_packing_torch_branches_match_numpy():
    """The other devices' (torch indexing) pack, unpack and gradient, run on CPU tensors,
    equal the CPU (numpy) ones: the CUDA fit's arithmetic, checked without CUDA."""
    from skquad.nn.quadratic_form import SymmetricPacking

    _, _, _, Q, _, _ = _problem(3, 3, n_features=6)
    packing = SymmetricPacking(6)
    G = torch.randn(3, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    v = packing.pack(Q)
    torch.testing.assert_close(packing._pack_torch(Q.reshape(3, -1)), v, rtol=0, atol=0)
    torch.testing.assert_close(packing._unpack_torch(v), packing.unpack(v), rtol=0, atol=0)
    torch.testing.assert_close(
        packing._gradient_torch(G.reshape(3, -1)), packing.gradient(G), rtol=0, atol=0
    )
    # the gradient of v -> <G, unpack(v)> is what .gradient returns (G need not be symmetric)
    leaf = v.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad((G * packing._unpack_torch(leaf)).sum(), [leaf])
    torch.testing.assert_close(packing.gradient(G), expected)
