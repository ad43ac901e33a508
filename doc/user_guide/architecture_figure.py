"""Draw doc/_static/architecture.svg: skquad's rooms, what each may import, and one fit's path.

The grey arrows are read from the table that ``tests/test_architecture.py``
enforces (``ALLOWED``), so the picture cannot drift from the rule: re-run this
script after changing the table::

    python doc/user_guide/architecture_figure.py
"""

import importlib.util
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[2]
OUTPUT = REPOSITORY / "doc" / "_static" / "architecture.svg"

# Room -> (x, y) of the box centre, label. Rows from the top: what users
# import, the estimators, the base and the engine, the math, the foundation.
BOXES = {
    "research": ((15.0, 9.2), "benchmarks/research/\npaper reproductions,\nspeed runs"),
    "benchmarks": ((11.55, 9.2), "benchmarks/\nrun_benchmark, the CLI"),
    "inspection": ((1.7, 7.2), "inspection/\nquadrics, interactions"),
    "export": ((4.9, 7.2), "export/\nto_torch, ONNX"),
    "estimators": ((9.0, 7.2), "linear_model/  neural_network/\nquantized/"),
    "datasets": ((15.0, 7.2), "datasets/\nUCI, generators"),
    "base": ((6.6, 5.0), "_base.py  _array_api.py\n_dask_dispatch.py  _dask.py\nvalidation, dispatch, predict"),
    "training": ((11.4, 5.0), "_training/\nthe engine: loop,\noptimizers, L-BFGS"),
    "nn": ((6.6, 2.8), "nn/\ntorch layers, fused pass,\nquadratic forms"),
    "convex": ((11.4, 2.8), "convex/\nSDP: lifting, solvers,\ncertificate, sampling"),
    "foundation": ((9.0, 0.9), "_foundation/:  runtime policy   threads   memory   reporting   rows   atomic fit   torch   BLAS"),
}
WIDTH = {
    "estimators": 3.9, "foundation": 12.6, "base": 3.6, "research": 3.7, "benchmarks": 3.1, "inspection": 2.9,
    "export": 2.7, "training": 3.5, "convex": 3.1,
}
HEIGHT = 1.3


def _allowed_table():
    spec = importlib.util.spec_from_file_location("test_architecture", REPOSITORY / "tests" / "test_architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ALLOWED


def _box(ax, room, colour):
    (x, y), label = BOXES[room]
    width = WIDTH.get(room, 3.0)
    ax.add_patch(FancyBboxPatch(
        (x - width / 2, y - HEIGHT / 2), width, HEIGHT, boxstyle="round,pad=0.05,rounding_size=0.15",
        facecolor=colour, edgecolor="#333333", linewidth=1.0, zorder=2,
    ))
    ax.text(x, y, label, ha="center", va="center", fontsize=10, zorder=3, linespacing=1.25)


def _edge_point(room, toward):
    """Where a line from ``room``'s centre to ``toward`` leaves the box."""
    (x, y), _ = BOXES[room]
    dx, dy = toward[0] - x, toward[1] - y
    half_w, half_h = WIDTH.get(room, 3.0) / 2 + 0.05, HEIGHT / 2 + 0.05
    scale = min(half_w / abs(dx) if dx else float("inf"), half_h / abs(dy) if dy else float("inf"))
    return x + dx * scale, y + dy * scale


def _arrow(ax, start, end, *, colour, width, style="-|>", dashed=False, rad=0.0, zorder=1):
    ax.add_patch(FancyArrowPatch(
        start, end, arrowstyle=style, mutation_scale=11, color=colour, linewidth=width,
        linestyle=(0, (4, 3)) if dashed else "-", connectionstyle=f"arc3,rad={rad}", zorder=zorder,
    ))


def _room_arrow(ax, source, target, **kwargs):
    start = _edge_point(source, BOXES[target][0])
    end = _edge_point(target, BOXES[source][0])
    _arrow(ax, start, end, **kwargs)


def draw():
    allowed = _allowed_table()
    fig, ax = plt.subplots(figsize=(10.5, 6.6))
    ax.set_xlim(0, 17.2)
    ax.set_ylim(0.15, 10.7)
    ax.axis("off")
    colours = {
        "research": "#f3e6c8", "benchmarks": "#f3e6c8", "inspection": "#dcead5", "export": "#dcead5",
        "datasets": "#e8e8e8", "estimators": "#cfe0f3", "base": "#e3dbf0", "training": "#e3dbf0",
        "nn": "#f6d8d2", "convex": "#f6d8d2", "foundation": "#eeeeee",
    }
    for room, colour in colours.items():
        _box(ax, room, colour)

    # What each room may import (the enforced table), the foundation left out:
    # every room may import it.
    for source, targets in allowed.items():
        for target in targets:
            if source == target or "foundation" in (source, target) or source == "package":
                continue
            target = "estimators" if target == "package" else target
            if target == source:
                continue
            # the command's rooms in their own colour: they reach many others
            colour = "#c9a66b" if source in ("benchmarks", "research") else "#8a8a8a"
            _room_arrow(ax, source, target, colour=colour, width=0.8)

    # One fit's path (QNNClassifier; the SDP takes the dashed branch).
    red = "#c0392b"
    user = (9.0, 10.25)
    ax.text(*user, "your code:  QNNClassifier(...).fit(X, y)", ha="center", va="center", fontsize=9.5,
            bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor=red), zorder=3)
    est = BOXES["estimators"][0]
    _arrow(ax, (8.5, 9.95), (8.5, est[1] + HEIGHT / 2 + 0.05), colour=red, width=1.8, zorder=4)
    _arrow(ax, (9.4, est[1] + HEIGHT / 2 + 0.05), (9.4, 9.95), colour=red, width=1.8, zorder=4)
    steps = [
        ((8.1, 8.9), "1"), ((9.72, 8.9), "5"),
    ]
    _arrow(ax, (7.7, est[1] - HEIGHT / 2 - 0.05), (6.9, BOXES["base"][0][1] + HEIGHT / 2 + 0.05),
           colour=red, width=1.8, zorder=4)
    steps.append(((6.95, 6.15), "2"))
    _arrow(ax, (10.3, est[1] - HEIGHT / 2 - 0.05), (11.2, BOXES["training"][0][1] + HEIGHT / 2 + 0.05),
           colour=red, width=1.8, zorder=4)
    steps.append(((11.15, 6.15), "3"))
    _arrow(ax, (9.95, BOXES["training"][0][1] - 0.25), (7.6, BOXES["nn"][0][1] + HEIGHT / 2 + 0.05),
           colour=red, width=1.8, zorder=4)
    steps.append(((8.7, 3.95), "4"))
    _arrow(ax, (10.8, est[1] - HEIGHT / 2 - 0.05), (12.6, BOXES["convex"][0][1] + HEIGHT / 2 + 0.05),
           colour=red, width=1.4, dashed=True, rad=-0.25, zorder=4)
    steps.append(((13.0, 4.15), "4'"))
    for (x, y), label in steps:
        ax.text(x, y, label, ha="center", va="center", fontsize=8.5, color="white", fontweight="bold",
                bbox=dict(boxstyle="circle,pad=0.25", facecolor=red, edgecolor=red), zorder=5)

    fig.tight_layout()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUTPUT, format="svg", metadata={"Date": None}, bbox_inches="tight", pad_inches=0.05)
    plt.close(fig)
    return OUTPUT


if __name__ == "__main__":
    print(draw())
