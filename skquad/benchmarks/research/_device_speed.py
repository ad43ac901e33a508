"""Fit times on the CPU against a GPU (``--suite device --device cuda``).

Every estimator that takes ``device`` is fitted on synthetic data twice in one
process, with ``device="cpu"`` (the libraries' default threads) and with the
requested device: QuadraticLogisticRegression (n = 10^6, d = 200, float32, 10
L-BFGS iterations) per iteration, the networks and the BackpropQuantized
estimators per epoch at a GPU-sized batch (MLPClassifier on the CPU beside
them), the SDP on the planted problems (n = 2000; d = 200 and 784) per fit.
The report gives both wall times, their ratio and the device fit's peak GPU
memory; device timings include moving the data there. No dataset files needed.
"""

import time

import numpy as np
import pandas as pd
import torch
from sklearn.datasets import make_classification, make_regression
from sklearn.neural_network import MLPClassifier

from skquad.datasets import make_planted_quantized

from .._report import fit_at_budget, markdown_table

__all__ = ["run"]


def _cases(quick):
    """(label, make_data, make_model(device) or None for the CPU-only MLP, unit), and the MLP's parameters."""
    from skquad import (
        BackpropQuantizedClassifier,
        BackpropQuantizedRegressor,
        QNNClassifier,
        QNNRegressor,
        QuadraticLogisticRegression,
        RPQNNClassifier,
        SDPQuantizedClassifier,
    )

    n_qlr, n_net, epochs = (20_000, 10_000, 2) if quick else (1_000_000, 100_000, 2)
    batch = 4096

    def qlr_data():
        X, y = make_classification(n_samples=n_qlr, n_features=200, n_informative=20, random_state=0)
        return X.astype(np.float32), y

    def net_data():
        X, y = make_classification(n_samples=n_net, n_features=64, n_informative=32, n_classes=10,
                                   random_state=0)
        return X.astype(np.float32), y

    def reg_data():
        X, y = make_regression(n_samples=n_net, n_features=64, noise=1.0, random_state=0)
        return X.astype(np.float32), (y / y.std()).astype(np.float32)

    def planted(d):
        return lambda: make_planted_quantized(n_samples=2000, n_features=d, n_planted=10, random_state=0)

    network = dict(hidden_layer_sizes=(256,), batch_size=batch, max_iter=epochs, tol=0.0,
                   n_iter_no_change=epochs + 1, random_state=0)
    quantized = dict(n_neurons=1000, batch_size=batch, max_iter=epochs, tol=0.0,
                     n_iter_no_change=epochs + 1, random_state=0)
    cases = [
        (f"QuadraticLogisticRegression n={n_qlr} d=200 float32", qlr_data,
         lambda device: QuadraticLogisticRegression(C=100.0, max_iter=10, tol=0.0, device=device),
         "s / iteration"),
        (f"QNNClassifier n={n_net} d=64 K=10 (256,) float32", net_data,
         lambda device: QNNClassifier(**network, device=device), "s / epoch"),
        (f"MLPClassifier (CPU reference) n={n_net} d=64 K=10 (256,) float32", net_data,
         None, "s / epoch"),
        (f"RPQNNClassifier n={n_net} d=64 K=10 (256,) float32", net_data,
         lambda device: RPQNNClassifier(**network, device=device), "s / epoch"),
        (f"QNNRegressor n={n_net} d=64 (256,) float32", reg_data,
         lambda device: QNNRegressor(**network, device=device), "s / epoch"),
        (f"BackpropQuantizedClassifier n={n_net} d=64 K=10 1000 neurons float32", net_data,
         lambda device: BackpropQuantizedClassifier(**quantized, device=device), "s / epoch"),
        (f"BackpropQuantizedRegressor n={n_net} d=64 1000 neurons float32", reg_data,
         lambda device: BackpropQuantizedRegressor(**quantized, device=device), "s / epoch"),
        ("SDPQuantizedClassifier planted n=2000 d=200, logistic", planted(200),
         lambda device: SDPQuantizedClassifier(loss="logistic", random_state=0, device=device), "s / fit"),
    ]
    if not quick:
        cases.append(("SDPQuantizedClassifier planted n=2000 d=784, logistic", planted(784),
                      lambda device: SDPQuantizedClassifier(loss="logistic", random_state=0, device=device),
                      "s / fit"))
    return cases, network


def _units(model, unit):
    if unit == "s / fit":
        return 1
    return max(int(np.max(model.n_iter_)), 1)


def _timed_fit(model, X, y, device):
    on_gpu = device.type == "cuda"
    if on_gpu:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    fit_at_budget(model, X, y)
    if on_gpu:
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if on_gpu else np.nan
    return elapsed, peak


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """CPU against ``device`` fit times; ``repeats`` and ``datasets`` are not used."""
    target = torch.device("cuda" if str(device).lower() == "auto" else str(device).lower())
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("the device suite compares the CPU with a GPU, and torch sees no CUDA device: "
                         "run it on a GPU machine, or pass --device cpu")
    if target.type == "cuda" and target.index is None:
        target = torch.device("cuda", torch.cuda.current_device())
    cases, mlp_params = _cases(quick)
    rows = []
    for label, make_data, make_model, unit in cases:
        X, y = make_data()
        progress(f"device: {label}")
        if make_model is None:
            model = MLPClassifier(**mlp_params)
            cpu_time, _ = _timed_fit(model, X, y, torch.device("cpu"))
            rows.append({"case": label, "unit": unit, "cpu": cpu_time / _units(model, unit),
                         "device": np.nan, "cpu / device": np.nan, "device peak GiB": np.nan})
            continue
        times, peak = [], np.nan
        for where in (torch.device("cpu"), target):
            model = make_model(str(where))
            if where.type == "cuda":  # load the CUDA kernels before the timed fit
                _timed_fit(make_model(str(where)).set_params(max_iter=1), X[:512], y[:512], where)
            elapsed, peak_here = _timed_fit(model, X, y, where)
            times.append(elapsed / _units(model, unit))
            peak = peak_here
        rows.append({"case": label, "unit": unit, "cpu": times[0], "device": times[1],
                     "cpu / device": times[0] / times[1], "device peak GiB": peak})
    table = pd.DataFrame(rows)
    name = torch.cuda.get_device_name(target) if target.type == "cuda" else str(target)
    markdown = (
        f"CPU ({torch.get_num_threads()} torch threads) against the device {target} ({name}); wall "
        "seconds per unit, one fit each, in one process.\n\n" + markdown_table(table, floatfmt=".3g")
    )
    return {"title": "Fit times: CPU against GPU", "markdown": markdown, "tables": {"device_speed": table},
            "figures": []}

