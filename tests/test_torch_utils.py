"""skquad._foundation._torch_utils: generators, devices, dtypes and numpy <-> torch conversion."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from skquad._foundation._torch_utils import (
    as_tensor,
    make_generator,
    prediction_device,
    resolve_device,
    resolve_dtype,
    seed_from,
    to_numpy,
)

from _estimator_cases import (
    _TORCH_ESTIMATORS,
    DEFAULTS,
    ESTIMATORS,
    data,
    fit_allowing_convergence_warning,
)


# ------------------------------------------------------------------ random state
def test_generator_is_seeded_from_random_state_and_leaves_the_global_one_alone():
    torch.manual_seed(123)
    expected_global = torch.rand(3)
    torch.manual_seed(123)
    first = torch.rand(4, generator=make_generator(0))
    second = torch.rand(4, generator=make_generator(0))
    assert torch.equal(first, second)
    assert not torch.equal(first, torch.rand(4, generator=make_generator(1)))
    assert torch.equal(torch.rand(3), expected_global)


def test_seed_from_follows_the_random_state():
    assert seed_from(7) == seed_from(np.random.RandomState(7))
    assert 0 <= seed_from(None) < np.iinfo(np.int32).max
    rng = np.random.RandomState(0)
    assert seed_from(rng) != seed_from(rng)  # a RandomState instance advances


# ------------------------------------------------------------------ devices
@pytest.mark.parametrize(
    "device", ["cpu", "CPU", " Cpu ", torch.device("cpu"), "auto", "AUTO", None]
)
def test_cpu_spellings_resolve_to_the_cpu(device):
    assert resolve_device(device) == torch.device("cpu")


@pytest.mark.parametrize(
    "device", ["tpu", "mps", "gpu", "cuda:x", torch.device("meta")]
)
def test_unknown_devices_are_a_clear_error(device):
    with pytest.raises(ValueError, match="device must be"):
        resolve_device(device)


def test_a_device_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="device must be .* got 3 of type int"):
        resolve_device(3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "CUDA", "cuda:0", torch.device("cuda", 0)])
def test_cuda_without_cuda_is_a_clear_error_at_fit_but_predicts_on_the_cpu(device):
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device(device)
    assert prediction_device(device) == torch.device("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_devices_resolve_when_present():  # pragma: no cover - GPU machines only
    assert resolve_device("CUDA:0") == torch.device("cuda", 0)
    assert prediction_device("cuda") == torch.device("cuda")
    with pytest.raises(ValueError, match="CUDA device"):
        resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_auto_is_the_cpu_even_where_cuda_exists(monkeypatch):
    """No measurement says when a GPU pays off (issue 14): "auto" never guesses."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cpu")


def test_prediction_device_never_raises_for_a_device_accepted_at_fit():
    for device in ["auto", "cpu", "CPU", torch.device("cpu"), None]:
        assert prediction_device(device) == torch.device("cpu")


# ------------------------------------------------------------------ dtypes
@pytest.mark.parametrize(
    "dtype, expected",
    [
        ("float32", torch.float32),
        ("float64", torch.float64),
        (np.float32, torch.float32),
        (np.dtype("float64"), torch.float64),
        (torch.float32, torch.float32),
    ],
)
def test_resolve_dtype(dtype, expected):
    assert resolve_dtype(dtype) is expected


@pytest.mark.parametrize("dtype", ["float16", "int64", torch.int32, "double precision"])
def test_resolve_dtype_rejects_other_dtypes(dtype):
    with pytest.raises((ValueError, TypeError), match="dtype"):
        resolve_dtype(dtype)


# ------------------------------------------------------------------ numpy <-> torch
def test_as_tensor_shares_writable_arrays():
    array = np.arange(12.0).reshape(3, 4)
    tensor = as_tensor(array)
    assert tensor.dtype == torch.float64
    assert tensor.data_ptr() == array.ctypes.data  # no copy


def test_as_tensor_copies_read_only_arrays_without_warning(tmp_path):
    array = np.arange(12.0).reshape(3, 4)
    read_only = array.copy()
    read_only.flags.writeable = False
    path = tmp_path / "X.dat"
    np.memmap(path, dtype=np.float64, mode="w+", shape=(3, 4))[:] = array
    memmap = np.memmap(path, dtype=np.float64, mode="r", shape=(3, 4))
    frame_values = pd.DataFrame(
        array
    ).to_numpy()  # read-only under pandas 3 copy-on-write
    broadcast = np.broadcast_to(array[0], (3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for source in (read_only, memmap, frame_values, broadcast):
            tensor = as_tensor(source)
            np.testing.assert_array_equal(tensor.numpy(), source)
            tensor.add_(1.0)  # the copy is ours to change
            np.testing.assert_array_equal(
                np.asarray(source), np.broadcast_to(source, (3, 4))
            )
        np.testing.assert_array_equal(memmap, array)


def test_as_tensor_converts_dtype_and_reversed_strides():
    array = np.arange(6.0).reshape(2, 3)
    array.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tensor = as_tensor(array[:, ::-1], dtype="float32")
    assert tensor.dtype == torch.float32
    np.testing.assert_array_equal(tensor.numpy(), array[:, ::-1].astype(np.float32))
    assert as_tensor(array, dtype=torch.float64).dtype == torch.float64
    assert as_tensor(array, dtype=np.float32).dtype == torch.float32


def test_as_tensor_accepts_lists_and_a_device():
    tensor = as_tensor([[1, 2], [3, 4]], dtype=torch.float64, device="cpu")
    assert tensor.device == torch.device("cpu")
    assert tensor.dtype == torch.float64


def test_to_numpy_detaches_and_copies():
    tensor = torch.ones(3, requires_grad=True)
    array = to_numpy(tensor * 2)
    assert isinstance(array, np.ndarray) and array.flags.writeable
    np.testing.assert_array_equal(array, [2.0, 2.0, 2.0])
    leaf = torch.zeros(2)
    copied = to_numpy(leaf)
    leaf.add_(1.0)
    np.testing.assert_array_equal(copied, [0.0, 0.0])
    assert pickle.loads(pickle.dumps(copied)).tolist() == [0.0, 0.0]


# ------------------------------------------------------------------ devices and read-only input, on every estimator
@pytest.mark.parametrize("name", ESTIMATORS)
def test_predicting_on_read_only_data_emits_no_warning(
    name, data, tmp_path, monkeypatch
):
    X, y = data
    estimator = fit_allowing_convergence_warning(ESTIMATORS[name](), X, y)
    expected = estimator.predict_proba(X)
    memmap = np.memmap(tmp_path / "X.dat", dtype=X.dtype, mode="w+", shape=X.shape)
    memmap[:] = X
    memmap.flush()
    read_only = np.memmap(tmp_path / "X.dat", dtype=X.dtype, mode="r", shape=X.shape)
    frame = pd.DataFrame(X)
    # torch warns about a non-writable array only once per process, so the
    # entry points that make tensors from numpy arrays are watched as well.
    for function in ("as_tensor", "from_numpy", "tensor"):
        monkeypatch.setattr(
            torch, function, _refusing_read_only(getattr(torch, function))
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for inputs in (read_only, frame):
            np.testing.assert_array_equal(estimator.predict_proba(inputs), expected)


def _refusing_read_only(function):
    def watched(data, *args, **kwargs):
        if isinstance(data, np.ndarray) and not data.flags.writeable:
            raise AssertionError(f"torch.{function.__name__} got a read-only array")
        return function(data, *args, **kwargs)

    return watched


@pytest.mark.parametrize(
    "name",
    [
        name
        for name in ESTIMATORS
        if "device" in DEFAULTS[name]().get_params()
    ],
)
def test_a_model_fitted_on_a_gpu_predicts_after_unpickling_on_a_cpu_machine(name, data):
    X, y = data
    estimator = fit_allowing_convergence_warning(ESTIMATORS[name](), X, y)
    expected = estimator.predict_proba(X)
    estimator.device = "cuda"  # as if fitted on a GPU
    restored = pickle.loads(pickle.dumps(estimator))
    if not torch.cuda.is_available():
        np.testing.assert_allclose(
            restored.predict_proba(X), expected, rtol=1e-6, atol=1e-9
        )
    else:  # pragma: no cover - GPU machines compute in another order
        np.testing.assert_allclose(
            restored.predict_proba(X), expected, rtol=1e-4, atol=1e-5
        )




@pytest.mark.parametrize("device", ["CPU", "auto", "cpu"])
@pytest.mark.parametrize("name", _TORCH_ESTIMATORS)
def test_device_spellings_are_accepted_at_fit(name, device, data):
    X, y = data
    reference = fit_allowing_convergence_warning(
        ESTIMATORS[name]().set_params(device="cpu"), X, y
    ).predict_proba(X)
    fitted = fit_allowing_convergence_warning(ESTIMATORS[name]().set_params(device=device), X, y)
    np.testing.assert_array_equal(fitted.predict_proba(X), reference)


@pytest.mark.parametrize(
    "name", _TORCH_ESTIMATORS
)
def test_a_torch_device_is_accepted_at_fit(name, data):
    X, y = data
    reference = fit_allowing_convergence_warning(
        ESTIMATORS[name]().set_params(device="cpu"), X, y
    ).predict_proba(X)
    fitted = fit_allowing_convergence_warning(ESTIMATORS[name]().set_params(device=torch.device("cpu")), X, y)
    np.testing.assert_array_equal(fitted.predict_proba(X), reference)




@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("bad", [None, float("nan"), float("inf"), -float("inf")])
def test_all_finite_is_torchs_isfinite_all(dtype, bad):
    from skquad._foundation._torch_utils import all_finite

    values = torch.linspace(-3.0, 3.0, 11, dtype=dtype)
    if bad is not None:
        values[4] = bad
    assert all_finite(values) is (bad is None) is bool(torch.isfinite(values).all())
    assert all_finite(values.requires_grad_(dtype is not torch.bfloat16)) is (bad is None)


def test_lbfgs_optimizer_steps_as_torchs_own():
    from skquad._foundation._torch_utils import lbfgs_optimizer

    target = torch.linspace(-1.0, 2.0, 5, dtype=torch.float64)
    results = []
    for make in (torch.optim.LBFGS, lbfgs_optimizer):
        variable = torch.zeros(5, dtype=torch.float64, requires_grad=True)
        optimizer = make([variable], max_iter=7, history_size=3, line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            value = ((variable - target) ** 4).sum() + (variable**2).sum()
            value.backward()
            return value

        optimizer.step(closure)
        results.append((variable.detach().clone(), optimizer.state[variable]["n_iter"]))
    # the same class's step on the same problem: the same iterates, bit for bit
    torch.testing.assert_close(results[1][0], results[0][0], rtol=0, atol=0)
    assert results[0][1] == results[1][1] == 7


def test_sdp_fit_by_torch_lbfgs_does_not_import_dynamo():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from sklearn.datasets import make_classification\n"
        "from skquad import SDPQuantizedClassifier\n"
        "X, y = make_classification(n_samples=80, n_features=4, random_state=0)\n"
        "model = SDPQuantizedClassifier(loss='logistic', n_neurons=20, random_state=0).fit(X, y)\n"
        "assert model.solver_path_ == ('native',), model.solver_path_\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "False"
