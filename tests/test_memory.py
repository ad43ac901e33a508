"""skquad._foundation._memory: the one memory check (refuse before allocating, name the parameter)."""

import builtins
import os
import re

import numpy as np
import pytest

from skquad._foundation import _memory
from skquad._foundation._memory import available_memory, check_memory

GiB = 2**30


def test_refuses_an_estimate_above_what_is_available(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 2 * GiB)
    with pytest.raises(MemoryError) as caught:
        check_memory(3.5 * GiB, "n_neurons", 4096, "sampling the network")
    message = str(caught.value)
    # the parameter and its value, what needs the memory, both sizes, and the default advice
    assert "n_neurons=4096" in message
    assert "3.5 GiB for sampling the network" in message
    assert "the 2.0 GiB of memory available" in message
    assert message.endswith("reduce n_neurons.")


def test_the_advice_replaces_the_default(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: GiB)
    with pytest.raises(MemoryError, match=r"rank=50 .*use a smaller batch\.$"):
        check_memory(2 * GiB, "rank", 50, "the lifted batch", advice="use a smaller batch.")


@pytest.mark.parametrize("required", [0, GiB - 1, GiB])
def test_passes_at_or_under_what_is_available(monkeypatch, required):
    # the boundary is inclusive: an estimate equal to the available memory is accepted
    monkeypatch.setattr(_memory, "available_memory", lambda: GiB)
    assert check_memory(required, "n_neurons", 1, "x") is None


def test_no_refusal_when_the_available_memory_is_unknown(monkeypatch):
    # neither psutil nor sysconf can tell: the check cannot judge, so it lets the fit try
    monkeypatch.setattr(_memory, "available_memory", lambda: None)
    assert check_memory(1e30, "n_neurons", 1, "x") is None


def test_available_memory_is_psutils_estimate():
    psutil = pytest.importorskip("psutil")
    # psutil's 'available' moves between two reads; the two agree to a few percent
    # on a machine doing anything (here: a slack of 5 % of the total memory).
    total = psutil.virtual_memory().total
    assert available_memory() == pytest.approx(psutil.virtual_memory().available, abs=0.05 * total)


def test_without_psutil_it_reads_the_free_physical_pages(monkeypatch):
    real_import = builtins.__import__

    def no_psutil(name, *args, **kwargs):
        if name == "psutil":
            raise ImportError("No module named 'psutil'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psutil)
    values = {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(os, "sysconf", lambda key: values[key])
    assert available_memory() == 1000 * 4096


def test_without_psutil_or_sysconf_it_is_unknown(monkeypatch):
    real_import = builtins.__import__

    def no_psutil(name, *args, **kwargs):
        if name == "psutil":
            raise ImportError("No module named 'psutil'")
        return real_import(name, *args, **kwargs)

    def unsupported(key):
        raise ValueError(f"unrecognized configuration name {key!r}")  # as on platforms without it

    monkeypatch.setattr(builtins, "__import__", no_psutil)
    monkeypatch.setattr(os, "sysconf", unsupported)
    assert available_memory() is None
    # ... and the check then lets the work through
    check_memory(1e30, "n_neurons", 1, "x")


def test_the_estimators_refuse_through_this_check(monkeypatch):
    # The runtime policy's budget is this check: an estimator whose estimate exceeds
    # the (patched) available memory refuses before allocating, naming its parameter.
    import numpy as np

    from skquad import BackpropQuantizedClassifier

    monkeypatch.setattr(_memory, "available_memory", lambda: 1024)
    X = np.random.RandomState(0).normal(size=(20, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(MemoryError, match="n_neurons=8 needs about"):
        BackpropQuantizedClassifier(n_neurons=8, max_iter=2, random_state=0).fit(X, y)


def _small_budget(monkeypatch, n_bytes=8 * 2**20):
    """Pretend only ``n_bytes`` are available, so the refusals are cheap to reach."""
    import skquad._foundation._memory

    monkeypatch.setattr(skquad._foundation._memory, "available_memory", lambda: n_bytes)


def _wide_data(n=30, d=60):
    rng = np.random.RandomState(0)
    return rng.randn(n, d), rng.randn(n)


def test_the_normal_equations_are_checked_against_the_memory_budget(monkeypatch):
    """QuadraticRegression(solver="cholesky") at d=2000 raised numpy's
    MemoryError (29 TiB) instead of skquad's refusal (issue 38, item 7):
    its D x D normal equations are estimated first (D = 1890 here: 28 MiB
    each, against an 8 MiB budget)."""
    from skquad import QuadraticRegression

    _small_budget(monkeypatch)
    X, y = _wide_data()
    with pytest.raises(MemoryError, match="solver='cholesky'.*normal equations"):
        QuadraticRegression(solver="cholesky").fit(X, y)
    QuadraticRegression().fit(X, y)  # "auto" takes the kernel path, which fits


def test_dask_quadratic_regression_on_wide_data_takes_a_path_that_fits(monkeypatch):
    """On a Dask collection every block built the D x D normal equations: a
    200 x 150 array reached 7.7 GB (issue 38, item 7). Data that fit in memory
    take the in-memory path (the kernel one here, as numpy input does); a
    collection too large for that is refused before any block is computed."""
    da = pytest.importorskip("dask.array")
    from skquad import QuadraticRegression

    _small_budget(monkeypatch)
    X, y = _wide_data()
    model = QuadraticRegression().fit(da.from_array(X, chunks=(10, 60)), da.from_array(y, chunks=10))
    reference = QuadraticRegression().fit(X, y)
    np.testing.assert_allclose(model.predict(X), reference.predict(X), rtol=1e-6, atol=1e-8)
    # more rows than quadratic features (D = 230): the blockwise normal equations
    _small_budget(monkeypatch, 2**20)
    X, y = _wide_data(n=300, d=20)
    with pytest.raises(MemoryError, match="normal equations"):
        QuadraticRegression().fit(da.from_array(X, chunks=(100, 20)), da.from_array(y, chunks=100))


# ------------------------------------------------------------------ every d², m, levels path
# Each path whose memory grows with d² (quadratic features, the SDP's lifted
# p x p matrices), m (neurons) or the weight levels, reached with tiny shapes
# under a tiny budget: (id, budget in bytes, the call, the refusal's start).
def _cases():
    import skquad as sq
    from skquad.inspection import local_contributions, quadratic_neurons

    da = pytest.importorskip("dask.array")
    rng = np.random.RandomState(0)
    X, y = rng.randn(30, 60), rng.randn(30)  # D = 1890 > n: the kernel path
    tall, small = rng.randn(300, 20), rng.randn(20, 3)  # D = 230 < n; p small
    labels = (small[:, 0] > 0).astype(int)
    blocks = (da.from_array(tall, chunks=(100, 20)), da.from_array(tall[:, 0], chunks=100))
    fitted = sq.QuadraticRegression(alpha=1.0).fit(small, small[:, 0])
    sdp = sq.SDPQuantizedClassifier(n_neurons=200, random_state=0).fit(small, labels)
    levels = dict(n_neurons=2, weight_levels=50)  # p = 200: the network fits, the SDP does not
    # a stream's first block counted the refit of its own 20 rows, not of a later block's 300
    streamed = sq.BackpropQuantizedRegressor(n_neurons=40, batch_size=20).partial_fit(tall[:20], tall[:20, 0])
    return [
        ("QR cholesky", 1024, lambda: sq.QuadraticRegression(solver="cholesky", alpha=1.0).fit(X, y),
         "solver='cholesky'"),
        ("QR cg", 1024, lambda: sq.QuadraticRegression(solver="cg", alpha=1.0).fit(X, y), "solver='cg'"),
        ("QR kernel", 1024, lambda: sq.QuadraticRegression().fit(X, y), "solver='kernel'"),
        ("QR dask blocks", 1024, lambda: sq.QuadraticRegression(alpha=1.0).fit(*blocks), "solver='cholesky'"),
        ("QR dask gathered", 1024, lambda: sq.QuadraticRegression().fit(da.from_array(X, chunks=10), y), "X="),
        ("QRCV leave-one-out", 1024, lambda: sq.QuadraticRegressionCV().fit(X, y), "cv=None"),
        ("QLR", 1024, lambda: sq.QuadraticLogisticRegression().fit(small, labels), "rank=None"),
        ("QLR dask", 1024, lambda: sq.QuadraticLogisticRegression().fit(
            da.from_array(small, chunks=10), da.from_array(labels, chunks=10)), "rank=None"),
        ("QLRCV", 1024, lambda: sq.QuadraticLogisticRegressionCV(cv=2).fit(small, labels), "rank=None"),
        ("QNN", 1024, lambda: sq.QNNClassifier(hidden_layer_sizes=(4,)).fit(small, labels),
         "hidden_layer_sizes=(4,)"),
        ("RPQNN dask", 1024, lambda: sq.RPQNNRegressor(hidden_layer_sizes=(4,), solver="lbfgs").fit(
            da.from_array(small, chunks=10), da.from_array(labels * 1.0, chunks=10)), "hidden_layer_sizes=(4,)"),
        ("Backprop", 1024, lambda: sq.BackpropQuantizedRegressor(n_neurons=2).fit(small, labels * 1.0),
         "n_neurons=2"),
        # training fits the budget (batches of 20 rows); the refit's 300 x 40 outputs do not:
        # refused before the first epoch, or for a later partial_fit block, before its refit
        ("Backprop refit", 200_000, lambda: sq.BackpropQuantizedRegressor(
            n_neurons=40, batch_size=20, max_iter=1, tol=0.0).fit(tall, tall[:, 0]), "n_neurons=40"),
        ("Backprop refit, a later block", 200_000, lambda: streamed.partial_fit(tall, tall[:, 0]),
         "n_neurons=40"),
        ("SDP network", 1024, lambda: sq.SDPQuantizedClassifier(n_neurons=100).fit(small, labels), "n_neurons=100"),
        ("SDP resample", 1024, lambda: sdp.resample(1000), "n_neurons=1000"),
        ("SDP levels", 2**20, lambda: sq.SDPQuantizedClassifier(**levels).fit(small, labels), "weight_levels=50"),
        ("SDP features", 2**16, lambda: sq.SDPQuantizedRegressor(n_neurons=2).fit(X[:, :40], y),
         "n_features=40"),
        ("SDPRegressorCV levels", 2**20, lambda: sq.SDPQuantizedRegressorCV(**levels, cv=2).fit(small, y[:20]),
         "weight_levels=50"),
        ("local contributions", 512, lambda: local_contributions(fitted, small), "max_pairs=None"),
        ("quantized network's neurons", 128, lambda: quadratic_neurons(sdp), "n_features=3"),
    ]


def _memory_check_sites():
    """(file, innermost function) of every call of the memory check in skquad, the check itself excepted."""
    import ast
    from pathlib import Path

    import skquad

    root, sites = Path(skquad.__file__).parent, set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        if "benchmarks" in path.parts or path.name == "_memory.py" or "_memory(" not in text:
            continue
        innermost = {}
        for function in ast.walk(ast.parse(text)):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    called = getattr(node, "func", None)
                    # check_memory (or its alias _check_memory), or the runtime policy's require_memory
                    if isinstance(called, ast.Name) and called.id in ("check_memory", "_check_memory") or \
                            isinstance(called, ast.Attribute) and called.attr == "require_memory":
                        innermost[id(node)] = max(innermost.get(id(node), (0, "")), (function.lineno, function.name))
        sites |= {(path.relative_to(root.parent).as_posix(), name)
                  for _, name in innermost.values() if name != "require_memory"}
    return sites


def test_every_d2_m_and_levels_path_refuses_clearly_before_allocating(monkeypatch):
    """Memory used without a check (issue 38, item 7): SDPQuantizedClassifier
    (weight_levels=1000) on 50 x 5 allocated an 11 GiB L-BFGS history, Dask QR
    and QR(solver="cholesky") numpy's D x D arrays. Every path refuses with
    skquad's MemoryError naming its parameter, raised by the check itself, and
    every call of the check in skquad is one of these paths (a new one fails here)."""
    import sys
    from pathlib import Path

    import skquad

    cases, refused_at, root = _cases(), set(), Path(skquad.__file__).parent.parent
    for name, budget, call, parameter in cases:
        def available(budget=budget):
            check = sys._getframe(1)
            caller = check.f_back.f_back if check.f_back.f_code.co_name == "require_memory" else check.f_back
            if check.f_code.co_name == "check_memory" and check.f_locals["required_bytes"] > budget:
                refused_at.add((Path(caller.f_code.co_filename).relative_to(root).as_posix(), caller.f_code.co_name))
            return budget

        monkeypatch.setattr(_memory, "available_memory", available)
        with pytest.raises(MemoryError, match="^" + re.escape(parameter) + ".* needs about") as caught:
            call()
        assert caught.traceback[-1].path.name == "_memory.py", name  # skquad's refusal, not numpy's
    assert refused_at == _memory_check_sites()
