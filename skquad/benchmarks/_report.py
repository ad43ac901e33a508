"""Writing a benchmark's results: Markdown report, CSV tables, plots, machine info."""

import datetime
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._fingerprint import FINGERPRINT_FILE, skquad_revision

__all__ = [
    "ACCURACY",
    "R2",
    "Score",
    "fit_at_budget",
    "format_mean_std",
    "machine_description",
    "markdown_table",
    "plot_accuracy",
    "plot_accuracy_vs_time",
    "prefix_figure_links",
    "prepare_output_dir",
    "pyplot",
    "run_child",
    "save_figure",
    "write_report",
]


@dataclass(frozen=True)
class Score:
    """How a benchmark's score is named, scaled and printed: one object per task.

    The tables, the narrative and the plots read every label, scale and bound
    from here, so classification (accuracy) and regression (R²) share them.

    Attributes
    ----------
    column : str
        The runs' column (the summary has ``column + "_mean"`` and ``"_std"``).
    name : str
        The score in words.
    label : str
        Axis and table title, with the unit.
    scale : float
        Printed value = scale x stored value (100 for accuracy in percent).
    digits : int
        Decimals printed (after scaling).
    unit : str
        Unit of a difference of two scores.
    lower, upper : float or None
        The score's range (None: unbounded); error bars stop there.
    gap_floor : float
        The darkest colour of the gap-to-the-best heat map (scaled units).
    """

    column: str
    name: str
    label: str
    scale: float
    digits: int
    unit: str
    lower: float | None
    upper: float | None
    gap_floor: float


ACCURACY = Score("accuracy", "accuracy", "test accuracy (%)", 100.0, 1, "pp", 0.0, 1.0, -10.0)
# R² is unbounded below: a model worse than the mean predictor scores below 0.
R2 = Score("r2", "R²", "test R²", 1.0, 3, "R²", None, 1.0, -0.1)


def format_mean_std(mean, std, digits=1):
    """``"85.2 ± 1.3"``; just the mean when the std is undefined (one run)."""
    if std is None or np.isnan(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown_table(header, rows=None, *, floatfmt=".3g"):
    """A GitHub-flavoured Markdown table: the one table writer of the benchmarks.

    ``markdown_table(header, rows)`` takes a header and rows of cells;
    ``markdown_table(frame, floatfmt=".2f")`` takes a DataFrame, floats formatted
    with ``floatfmt`` and missing values left blank.
    """
    if rows is None:  # a DataFrame
        frame = header
        if frame.index.name is not None or any(frame.index.names):
            frame = frame.reset_index()
        header = [
            " / ".join(str(part) for part in column if str(part)) if isinstance(column, tuple)
            else str(column)
            for column in frame.columns
        ]
        rows = [list(row) for row in frame.itertuples(index=False)]

    def cell(value):
        if isinstance(value, (float, np.floating)):
            value = "" if np.isnan(value) else format(value, floatfmt)
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, path, dpi=100):
    """Lay ``figure`` out tightly, write it to ``path`` and close it."""
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    pyplot().close(figure)


_MARKERS = "o^sDvP*Xh<>p"


def _styles(summary, names):
    """A distinct (colour, marker) per estimator: skquad's filled, baselines hollow."""
    plt = pyplot()
    kinds = summary.drop_duplicates("estimator").set_index("estimator")["kind"]
    palette = [plt.get_cmap("tab10")(i) for i in range(10)] + [(0.0, 0.0, 0.0, 1.0)]
    styles = {}
    for i, name in enumerate(names):
        hollow = kinds.get(name) == "baseline"
        styles[name] = {
            "color": palette[i % len(palette)],
            "marker": _MARKERS[i % len(_MARKERS)],
            "markerfacecolor": "white" if hollow else palette[i % len(palette)],
        }
    return styles


def plot_accuracy(summary, path, order, score=ACCURACY):
    """Dot plot: one row per dataset, one marker per estimator; bars = ±1 std within the score's range."""
    plt = pyplot()
    datasets = list(dict.fromkeys(summary["dataset"]))
    names = [name for name in order if name in set(summary["estimator"])]
    styles = _styles(summary, names)
    fig, ax = plt.subplots(figsize=(9, 0.6 * len(datasets) + 1.8))
    offsets = np.linspace(-0.32, 0.32, len(names)) if len(names) > 1 else [0.0]
    upper = np.inf if score.upper is None else score.scale * score.upper
    lower = -np.inf if score.lower is None else score.scale * score.lower
    # An unbounded score (R²) can be far below 0 for a failed model: such points
    # are drawn at the axis' left end, which the label states.
    shown_floor = -1.0 * score.scale if score.lower is None else lower
    clipped = False
    for offset, name in zip(offsets, names):
        block = summary[summary["estimator"] == name].set_index("dataset")
        mean = score.scale * block[f"{score.column}_mean"]
        std = score.scale * block[f"{score.column}_std"].fillna(0)
        clipped |= bool((mean < shown_floor).any())
        mean = mean.clip(lower=shown_floor)
        xerr = [np.minimum(std, mean - lower), np.minimum(std, upper - mean)]
        ys = [datasets.index(d) + offset for d in block.index]
        style = styles[name]
        ax.errorbar(mean, ys, xerr=xerr, fmt=style["marker"], color=style["color"],
                    markerfacecolor=style["markerfacecolor"], label=name, markersize=6,
                    capsize=2, lw=1)
    for i in range(len(datasets) - 1):
        ax.axhline(i + 0.5, color="0.85", lw=0.8)
    ax.set_yticks(range(len(datasets)))
    ax.set_yticklabels(datasets)
    ax.set_ylim(len(datasets) - 0.5, -0.5)
    if np.isfinite(upper):
        ax.set_xlim(right=upper + 0.005 * score.scale)
    if clipped:
        ax.set_xlim(left=shown_floor - 0.02 * score.scale)
    ax.set_xlabel(
        f"{score.label}, mean ± std over the splits"
        + (f" (below {shown_floor:g}: drawn at {shown_floor:g})" if clipped else "")
    )
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              title="filled: skquad\nhollow: scikit-learn", title_fontsize=8)
    save_figure(fig, path)


def _place_labels(ax, points, labels, fontsize=8):
    """Annotate points, moving labels down or up until no two overlap."""
    fig = ax.figure
    fig.canvas.draw()
    # The markers themselves are obstacles too: a label must not cover a point.
    placed = []
    for x, y in points:
        px, py = ax.transData.transform((x, y))
        placed.append((px - 7, py - 7, px + 7, py + 7))
    for (x, y), label in sorted(zip(points, labels), key=lambda item: -item[0][1]):
        px, py = ax.transData.transform((x, y))
        scale = fig.dpi / 72  # points to pixels
        width, height = 0.62 * fontsize * scale * len(label), 1.4 * fontsize * scale
        offset = 0.0
        for step in range(40):
            trial = py + offset
            box = (px + 9, trial - height / 2, px + 9 + width, trial + height / 2)
            if all(box[2] < b[0] or box[0] > b[2] or box[3] < b[1] or box[1] > b[3] for b in placed):
                break
            offset = (step // 2 + 1) * height * 0.6 * (-1 if step % 2 == 0 else 1)
        placed.append(box)
        ax.annotate(label, (x, y), xytext=(9 / scale, offset / scale), textcoords="offset points",
                    fontsize=fontsize, va="center",
                    arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.5} if abs(offset) > 1 else None)


def plot_accuracy_vs_time(summary, path, order, score=ACCURACY):
    """Left: each estimator over the datasets, labelled; right: the gap to the best, per dataset."""
    plt = pyplot()
    names = [name for name in order if name in set(summary["estimator"])]
    styles = _styles(summary, names)
    mean_column = f"{score.column}_mean"
    valid = summary.dropna(subset=[mean_column, "fit_time_median"])
    datasets = list(dict.fromkeys(valid["dataset"]))
    # The score relative to the best estimator on each dataset, so that datasets
    # of different difficulty share one axis.
    best = valid.groupby("dataset")[mean_column].transform("max")
    valid = valid.assign(gap=score.scale * (valid[mean_column] - best))
    # One panel above the other: shown about 750 px wide on a documentation page,
    # the heat map's numbers stay readable.
    heat_height = max(3.5, 0.42 * len(datasets) + 1.6)
    fig, (left, right) = plt.subplots(
        2, 1, figsize=(9, 4.8 + heat_height),
        gridspec_kw={"height_ratios": [4.8, heat_height]},
    )
    points, labels = [], []
    for name in names:
        block = valid[valid["estimator"] == name]
        if block.empty:
            continue
        x = float(np.exp(np.log(block["fit_time_median"].clip(lower=1e-4)).mean()))
        y = float(block["gap"].mean())
        style = styles[name]
        left.scatter(x, y, s=60, marker=style["marker"], color=style["color"],
                     facecolors=style["markerfacecolor"], zorder=3)
        points.append((x, y))
        labels.append(name)
    left.set_xscale("log")
    left.set_xlabel("fit time (s, geometric mean over the datasets, log scale)")
    left.set_ylabel(f"{score.name} minus the best ({score.unit}, mean over datasets)")
    left.set_title("each estimator: closer to 0 is more accurate, left is faster", fontsize=10)
    left.grid(alpha=0.3)
    left.margins(y=0.12)  # room above and below for the labels
    xmin, xmax = left.get_xlim()
    left.set_xlim(xmin, xmax * 4)  # room for the labels
    _place_labels(left, points, labels, fontsize=9)

    grid = valid.pivot(index="dataset", columns="estimator", values="gap")
    grid = grid.reindex(index=datasets, columns=[n for n in names if n in grid.columns])
    floor = min(score.gap_floor, float(np.nanmin(grid.to_numpy())))
    gap_digits = max(score.digits - 1, 0)
    image = right.imshow(grid.to_numpy(), cmap="viridis", vmin=floor, vmax=0, aspect="auto")
    right.set_xticks(range(grid.shape[1]))
    right.set_xticklabels(grid.columns, rotation=35, ha="right", fontsize=9)
    right.set_yticks(range(grid.shape[0]))
    right.set_yticklabels(grid.index, fontsize=9)
    for (i, j), value in np.ndenumerate(grid.to_numpy()):
        if np.isnan(value):
            right.text(j, i, "n/a", ha="center", va="center", fontsize=9, color="0.4")
        else:
            shown = f"{value:.{gap_digits}f}"
            right.text(j, i, shown if float(shown) < 0 else "best", ha="center",
                       va="center", fontsize=9, color="white" if value < floor / 2 else "black")
    right.set_title(f"{score.name} minus the best on the dataset ({score.unit})", fontsize=10)
    fig.colorbar(image, ax=right, shrink=0.9, pad=0.02, label=f"{score.unit} below the best")
    save_figure(fig, path)


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module):
    try:
        return importlib.import_module(module).__version__
    except ImportError:
        return "not installed"


def machine_description(command, wall_time=None, device="auto", threads=0, fingerprint=None):
    """The lines of ``machine.txt``: hardware, versions, date, command, fingerprint."""
    import scipy
    import sklearn
    import torch

    from .._foundation._torch_utils import resolve_device

    try:
        used_device = str(resolve_device(device))
    except ValueError as exc:
        used_device = f"{device} ({exc})"
    lines = [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"command: {command or 'skquad.benchmarks.run_benchmark (Python)'}",
        f"skquad: {skquad_revision()}",
        f"cpu: {_cpu_model()}",
        f"data directory (SKQUAD_DATA): {'set' if os.environ.get('SKQUAD_DATA') else 'not set'}",
        f"cores: {os.cpu_count()}",
        "threads during the run: "
        + (f"{threads} (BLAS, OpenMP and torch limited)" if threads
           else f"libraries' defaults (torch: {torch.get_num_threads()})"),
        f"memory: {_memory_gib()}",
        f"device: {used_device}"
        + (f" ({torch.cuda.get_device_name()})" if used_device.startswith("cuda") else ""),
        f"platform: {platform.platform()}",
        f"python: {platform.python_version()}",
        f"numpy: {np.__version__}, scipy: {scipy.__version__}, scikit-learn: {sklearn.__version__}",
        f"torch: {torch.__version__}, cvxpy: {_version('cvxpy')}, clarabel: "
        f"{_version('clarabel')}, scs: {_version('scs')}",
        *_blas_lines(),
    ]
    if fingerprint is not None:
        lines.append(f"fingerprint: {fingerprint['hash']} (estimators' parameters and SDP "
                     f"solver routes, {FINGERPRINT_FILE})")
    if wall_time is not None:
        lines.append(f"wall time: {wall_time:.0f} s")
    if hasattr(os, "getloadavg"):  # how busy the machine was, which the fit times depend on
        lines.append("load average at the end (1, 5, 15 min): %.1f, %.1f, %.1f" % os.getloadavg())
    return lines


def _blas_lines():
    """The BLAS/OpenMP libraries loaded, their threading layer and thread counts."""
    from threadpoolctl import threadpool_info

    lines = []
    for pool in threadpool_info():
        lines.append(
            f"{pool.get('user_api')}: {pool.get('internal_api')} {pool.get('version') or ''}"
            f" ({pool.get('threading_layer', 'n/a')} threading, {pool.get('num_threads')} "
            f"threads, {pool.get('architecture', 'n/a')})"
        )
    return lines or ["blas: none reported by threadpoolctl"]


def _memory_gib():
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            kib = int(handle.readline().split()[1])
        return f"{kib / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        return "unknown"


def prefix_figure_links(markdown, figures, prefix):
    """Point a section's relative figure links into its subfolder ``prefix``."""
    for figure in figures:
        markdown = re.sub(
            r"\]\(" + re.escape(figure) + r"\)", f"]({prefix}/{figure})", markdown
        )
    return markdown


def write_report(output_dir, title, sections, *, command=None, wall_time=None, device="auto",
                 threads=0, fingerprint=None):
    """Write ``report.md``, one CSV per table, ``machine.txt`` and ``fingerprint.json``.

    Parameters
    ----------
    output_dir : pathlib.Path
    title : str
        Title of the whole report.
    sections : list of (dict, str)
        Each suite's result dict and the CSV prefix for its tables ("" for
        none: tables are written as ``<name>.csv``).
    command : str
        The command line, recorded in the report and machine.txt.
    wall_time : float
        Seconds the whole run took.
    fingerprint : dict, optional
        :func:`~skquad.benchmarks._fingerprint.fingerprint` of the run, written
        to ``fingerprint.json`` (the command line's runs).

    Returns
    -------
    written : list of pathlib.Path
    """
    output_dir = Path(output_dir)
    written = []
    machine = machine_description(command, wall_time, device, threads, fingerprint)
    body = [f"# {title}", ""]
    if command:
        body.append(f"Command: `{command}`  ")
    if wall_time is not None:
        body.append(f"Wall time: {wall_time:.0f} s")
    body.append("")
    for result, prefix in sections:
        body += [f"## {result['title']}", "", result["markdown"].rstrip(), ""]
        for name, table in result.get("tables", {}).items():
            # Suites often name their tables after themselves already.
            stem = name if not prefix or name.startswith(prefix) else f"{prefix}{name}"
            path = output_dir / f"{stem}.csv"
            table.to_csv(path, index=False, float_format="%.6g")
            written.append(path)
    body += ["## Machine", "", "```", *machine, "```", ""]
    report = output_dir / "report.md"
    report.write_text("\n".join(body), encoding="utf-8")
    machine_file = output_dir / "machine.txt"
    machine_file.write_text("\n".join(machine) + "\n", encoding="utf-8")
    if fingerprint is not None:
        written.append(output_dir / FINGERPRINT_FILE)
        written[-1].write_text(json.dumps(fingerprint, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return [report, machine_file, *written]


def prepare_output_dir(path):
    """Create the output folder (and its parents) if needed."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True)
    return path


def thread_limit(threads):
    """Limit torch's and the BLAS/OpenMP pools' threads to ``threads``; 0 or None: no limit.

    The training engine's own policy (:func:`skquad._foundation._threads.limit_threads`),
    so that a benchmark run and the fits inside it agree on thread counts, plus
    the OpenMP pools of compiled baselines (HistGradientBoosting's): left at the
    core count on a busy machine, their spinning threads slow single fits by
    orders of magnitude.
    """
    import contextlib

    from threadpoolctl import threadpool_limits

    from .._foundation._threads import limit_threads

    stack = contextlib.ExitStack()
    # ceiling: the estimators' automatic thread rule counts from the process's
    # baseline, which --threads does not change; capped here, their fits stay at N.
    stack.enter_context(limit_threads(threads or None, blas=threads or None, ceiling=True))
    if threads:
        stack.enter_context(threadpool_limits(int(threads), user_api="openmp"))
    return stack


def active_thread_limit():
    """The ``--threads`` value the run holds (None: the libraries' defaults), for child processes.

    The ceiling, not torch's current count, which would turn "no limit" into a limit.
    """
    from .._foundation._threads import thread_ceiling

    return thread_ceiling()


def fit_at_budget(model, X, y):
    """``model.fit(X, y)`` on a fixed budget of iterations: running out of it is expected,
    so its ConvergenceWarning is not shown. Returns the model."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        return model.fit(X, y)


def run_child(code, start="{"):
    """Run the Python ``code`` in a child process with this skquad first on its path.

    Returns the completed process and its last output line that begins with
    ``start``, read as JSON (None when the child failed or printed none).
    """
    env = dict(os.environ)
    package_root = str(Path(os.path.abspath(__file__)).parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    lines = [line for line in completed.stdout.splitlines() if line.startswith(start)]
    return completed, (json.loads(lines[-1]) if completed.returncode == 0 and lines else None)
