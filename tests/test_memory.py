"""skquad._memory: the one memory check (refuse before allocating, name the parameter)."""

import builtins
import os

import numpy as np
import pytest

from skquad import _memory
from skquad._memory import available_memory, check_memory

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
    import skquad._memory

    monkeypatch.setattr(skquad._memory, "available_memory", lambda: n_bytes)


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
