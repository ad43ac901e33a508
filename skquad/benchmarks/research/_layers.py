"""Speed of the quadratic layers (issue 3, "Layers" and the wide-layer target).

``speed()`` measures, in one process with interleaved repeats: the float32
``torch.matmul`` rate; a wide quadratic layer (batch 512, 256 -> 256) as a
fraction of it, per storage of ``Q`` and backward; the cached backward passes
against autograd over several shapes; full against packed storage of ``Q``.
The flop counting is stated in the report; the packed variants exploit
symmetry and do about half the counted multiplications, so they can pass 100 %.
"""

import statistics
import time

import numpy as np
import pandas as pd
import torch

from skquad.nn import QuadraticLayer, ReducedQuadraticLayer

from .._report import markdown_table, pyplot, save_figure

__all__ = ["speed"]

WIDE_SHAPE = (512, 256, 256)
QUICK_WIDE_SHAPE = (256, 128, 128)
# (batch, n_in, n_out): tiny, the paper's optdigits output layer (64-30-10) and
# mid-sized; the wide layer's backward passes are in the wide table.
SHAPES = [
    (32, 1, 1),
    (32, 8, 4),
    (200, 30, 10),
    (128, 64, 64),
    (512, 128, 64),
]
QUICK_SHAPES = [(32, 8, 4), (200, 30, 10), (128, 64, 64)]
MIN_SECONDS_PER_TIMING = 0.05


def _quadratic_variants(n_in, n_out, dtype):
    return {(f"QuadraticLayer[{storage}]", backward): QuadraticLayer(
        n_in, n_out, backward=backward, quadratic_storage=storage, dtype=dtype)
        for storage in ("full", "packed") for backward in ("cached", "autograd")}


def _reduced_variants(n_in, n_out, dtype):
    return {("ReducedQuadraticLayer" + ("[power_term]" if power else ""), backward): ReducedQuadraticLayer(
        n_in, n_out, power_term=power, backward=backward, dtype=dtype)
        for power in (False, True) for backward in ("cached", "autograd")}


def _make_step(layer, batch, with_backward, generator):
    a = torch.randn(batch, layer.in_features, generator=generator)
    upstream = torch.randn(batch, layer.out_features, generator=generator)
    layer.reset_parameters(generator, relinear=False)
    if not with_backward:

        def forward_only():
            with torch.no_grad():
                layer(a)

        return forward_only
    # The input needs its gradient too, as in any layer but the first.
    a.requires_grad_(True)

    def forward_backward():
        layer.zero_grad(set_to_none=True)
        a.grad = None
        layer(a).backward(upstream)

    return forward_backward


def _time_interleaved(steps, repeats, progress=None):
    """Median seconds per call of each step, repeats interleaved; each timing lasts at least
    ``MIN_SECONDS_PER_TIMING`` (calibrated once), so that small layers are not timer noise."""
    calls = {}
    for key, step in steps.items():
        step()  # warm-up: allocations, first-call dispatch
        start = time.perf_counter()
        step()
        once = max(time.perf_counter() - start, 1e-7)
        calls[key] = max(1, int(MIN_SECONDS_PER_TIMING / once))
    timings = {key: [] for key in steps}
    for repeat in range(repeats):
        for key, step in steps.items():
            number = calls[key]
            start = time.perf_counter()
            for _ in range(number):
                step()
            timings[key].append((time.perf_counter() - start) / number)
        if progress is not None:
            progress(f"  repeat {repeat + 1}/{repeats}")
    return {key: statistics.median(values) for key, values in timings.items()}


def measure_matmul_rate(size=2048, repeats=5):
    """Median float32 ``torch.matmul`` rate (flop/s) of ``size x size`` products."""
    generator = torch.Generator().manual_seed(0)
    left = torch.randn(size, size, generator=generator)
    right = torch.randn(size, size, generator=generator)
    seconds = _time_interleaved({"matmul": lambda: torch.matmul(left, right)}, repeats)
    return 2.0 * size**3 / seconds["matmul"]


def _wide_layer_table(shape, repeats, matmul_rate, progress, threads):
    batch, n_in, n_out = shape
    generator = torch.Generator().manual_seed(0)
    layers = _quadratic_variants(n_in, n_out, torch.float32)
    steps = {}
    for key, layer in layers.items():
        steps[key + ("forward",)] = _make_step(layer, batch, False, generator)
        steps[key + ("forward+backward",)] = _make_step(layer, batch, True, generator)
    progress(f"wide layer {batch} x {n_in} -> {n_out}: {len(steps)} timings x {repeats}")
    seconds = _time_interleaved(steps, repeats, progress)
    forward_flops = 2.0 * batch * n_out * n_in**2
    rows = []
    for (layer_name, backward, work), value in seconds.items():
        flops = forward_flops * (1 if work == "forward" else 3)
        rows.append(
            {
                "threads": threads,
                "layer": layer_name,
                "backward": backward,
                "work": work,
                "ms": 1e3 * value,
                "counted GFLOP/s": flops / value / 1e9,
                "% of matmul rate": 100.0 * flops / value / matmul_rate,
                "matmul GFLOP/s": matmul_rate / 1e9,
            }
        )
    return pd.DataFrame(rows)


def _cached_vs_autograd_table(shapes, repeats, progress):
    rows = []
    generator = torch.Generator().manual_seed(1)
    for batch, n_in, n_out in shapes:
        layers = _quadratic_variants(n_in, n_out, torch.float32)
        layers.update(_reduced_variants(n_in, n_out, torch.float32))
        steps = {
            key: _make_step(layer, batch, True, generator) for key, layer in layers.items()
        }
        progress(f"cached vs autograd, batch {batch}, {n_in} -> {n_out}")
        seconds = _time_interleaved(steps, repeats)
        names = dict.fromkeys(name for name, _ in layers)
        for name in names:
            cached, plain = seconds[(name, "cached")], seconds[(name, "autograd")]
            rows.append(
                {
                    "layer": name,
                    "batch": batch,
                    "n_in": n_in,
                    "n_out": n_out,
                    "cached ms": 1e3 * cached,
                    "autograd ms": 1e3 * plain,
                    "autograd / cached": plain / cached,
                }
            )
    return pd.DataFrame(rows)


def _storage_table(shapes, repeats, progress):
    """Full vs packed ``Q`` (each with its cached backward), plus an Adam step."""
    rows = []
    generator = torch.Generator().manual_seed(2)
    for batch, n_in, n_out in shapes:
        steps, sizes = {}, {}
        for storage in ("full", "packed"):
            layer = QuadraticLayer(n_in, n_out, quadratic_storage=storage)
            steps[(storage, "forward+backward")] = _make_step(layer, batch, True, generator)
            parameter = layer.quadratic_weight
            parameter.grad = torch.randn(parameter.shape, generator=generator)
            optimizer = torch.optim.Adam([parameter], lr=1e-3, foreach=True)
            steps[(storage, "Adam step")] = optimizer.step
            sizes[storage] = parameter.numel()
        progress(f"full vs packed storage, batch {batch}, {n_in} -> {n_out}")
        seconds = _time_interleaved(steps, repeats)
        for storage in ("full", "packed"):
            rows.append(
                {
                    "batch": batch,
                    "n_in": n_in,
                    "n_out": n_out,
                    "storage": storage,
                    "quadratic parameters": sizes[storage],
                    "MiB (float32)": 4 * sizes[storage] / 2**20,
                    "forward+backward ms": 1e3 * seconds[(storage, "forward+backward")],
                    "Adam step ms": 1e3 * seconds[(storage, "Adam step")],
                }
            )
    return pd.DataFrame(rows)


def _plot_cached_vs_autograd(table, path):
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(8, 4.5))
    labels = [f"{b}x{i}->{o}" for b, i, o in table[["batch", "n_in", "n_out"]].drop_duplicates().values]
    positions = np.arange(len(labels))
    names = list(dict.fromkeys(table["layer"]))
    width = 0.8 / len(names)
    for offset, name in enumerate(names):
        values = table.loc[table["layer"] == name, "autograd / cached"].to_numpy()
        axis.bar(positions + offset * width, values, width, label=name)
    axis.axhline(1.0, color="black", linewidth=0.8)
    axis.set_xticks(positions + 0.4 - width / 2, labels, rotation=20)
    axis.set_ylabel("autograd time / cached time")
    axis.set_title("Forward + backward: >1 means the papers' cached backward is faster")
    axis.legend(fontsize=8)
    save_figure(figure, path)


def speed(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """Time the quadratic layers (module docstring); the suite contract.

    ``quick``: smaller shapes, well under a minute. ``repeats``: interleaved
    repeats per timing (default 5, quick 3), medians reported. ``datasets`` is
    not used (random data); only the CPU is timed, a CUDA ``device`` is noted
    in the report.
    """
    del datasets  # random data only
    if repeats is None:
        repeats = 3 if quick else 5
    wide_shape = QUICK_WIDE_SHAPE if quick else WIDE_SHAPE
    shapes = QUICK_SHAPES if quick else SHAPES
    threads = torch.get_num_threads()
    thread_counts = [threads] if threads == 1 else [1, threads]
    wide_tables = []
    try:
        for count in thread_counts:
            torch.set_num_threads(count)
            progress(f"layers: measuring the float32 matmul rate ({count} torch threads)")
            matmul_rate = measure_matmul_rate(size=1024 if quick else 2048, repeats=repeats)
            wide_tables.append(
                _wide_layer_table(wide_shape, repeats, matmul_rate, progress, count)
            )
        # Small layers are timed on one thread: at these sizes a second thread
        # mostly adds synchronisation, and on a loaded machine waiting for it
        # swamps the arithmetic (the training engine chooses threads itself).
        torch.set_num_threads(1)
        cached = _cached_vs_autograd_table(shapes, repeats, progress)
        storage = _storage_table([shape for shape in shapes if shape[1] >= 8], repeats, progress)
    finally:
        torch.set_num_threads(threads)
    wide = pd.concat(wide_tables, ignore_index=True)
    figure_name = "layers_cached_vs_autograd.png"
    _plot_cached_vs_autograd(cached, output_dir / figure_name)

    batch, n_in, n_out = wide_shape
    totals = wide[wide["work"] == "forward+backward"]
    default_rows = totals[
        (totals["layer"] == f"QuadraticLayer[{QuadraticLayer.default_storage}]")
        & (totals["backward"] == "cached")
    ]
    summary = []
    for _, row in default_rows.iterrows():
        percent = row["% of matmul rate"]
        verdict = "meets" if percent >= 40 else "does NOT meet"
        summary.append(
            f"with {row['threads']} thread(s): **{percent:.0f} %** of that setting's "
            f"matmul rate ({row['matmul GFLOP/s']:.1f} GFLOP/s), which {verdict} the "
            "40 % target"
        )
    best = totals.sort_values("ms").iloc[0]
    device_note = ""
    if device not in ("auto", "cpu"):
        device_note = f" (device={device!r} was requested; this suite times the CPU only)"
    markdown = f"""
Medians of {repeats} interleaved repeats{device_note}; the process had {threads} torch
thread(s). The wide layer is timed with {' and '.join(map(str, thread_counts))} thread(s),
each against the float32 `torch.matmul` rate measured with the same setting; the
smaller layers with one thread.

**Flop counting.** Forward: `2 B n_out n_in^2` (the dense quadratic forms). Backward:
twice the forward (gradients with respect to `Q` and to the input, each as large as the
forward product). So forward + backward counts `6 B n_out n_in^2`, for every variant alike.
The packed storage exploits the symmetry of `Q` and performs about half of these
multiplications, so its percentage can exceed 100 %.

### Wide quadratic layer (batch {batch}, {n_in} -> {n_out})

The default layer (`QuadraticLayer()`: storage `{QuadraticLayer.default_storage}`, cached
backward), forward + backward, {'; '.join(summary)}. Fastest variant:
{best['layer']} with the {best['backward']} backward and {best['threads']} thread(s),
{best['ms']:.0f} ms.

{markdown_table(wide, floatfmt=".3g")}

### The papers' cached backward passes against autograd (forward + backward)

"autograd / cached" above 1 means the papers' cached backward (Algorithm 1 caching `V`,
or caching the pair products `M(a)` for packed storage; Algorithm 2 caching `v1`, `v2`)
is faster. The input gradient is computed too, as for a hidden layer. The wide layer's
cached and autograd timings are in the table above.

{markdown_table(cached, floatfmt=".3g")}

![autograd / cached]({figure_name})

### Storage of `Q`: full symmetrized matrices against the packed upper triangle

Each with its cached backward; "Adam step" is one `torch.optim.Adam` step on the
quadratic parameter alone.

{markdown_table(storage, floatfmt=".3g")}
"""
    return {
        "title": "Quadratic layers: wide-layer throughput, cached backward, storage of Q",
        "markdown": markdown.strip() + "\n",
        "tables": {
            "layers_wide": wide,
            "layers_cached_vs_autograd": cached,
            "layers_storage": storage,
        },
        "figures": [figure_name],
    }
