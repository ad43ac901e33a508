"""Writing a benchmark's results: Markdown report, CSV tables, plots, machine info."""

import datetime
import os
import platform
import re
from pathlib import Path

import numpy as np

__all__ = [
    "format_mean_std",
    "machine_description",
    "markdown_table",
    "plot_accuracy",
    "plot_accuracy_vs_time",
    "prefix_figure_links",
    "prepare_output_dir",
    "write_report",
]


def format_mean_std(mean, std, digits=1):
    """``"85.2 ± 1.3"``; just the mean when the std is undefined (one run)."""
    if std is None or np.isnan(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown_table(header, rows):
    """A GitHub-flavoured Markdown table from a header and rows of cells."""

    def cell(value):
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def _colours(names):
    plt = _pyplot()
    palette = plt.get_cmap("tab20" if len(names) > 10 else "tab10")
    return {name: palette(i % palette.N) for i, name in enumerate(names)}


def _markers(summary, names):
    kinds = summary.drop_duplicates("estimator").set_index("estimator")["kind"]
    return {name: ("o" if kinds.get(name) == "skquad" else "s") for name in names}


def plot_accuracy(summary, path, order):
    """Dot plot: one row per dataset, one marker per estimator (error bar = std)."""
    plt = _pyplot()
    datasets = list(dict.fromkeys(summary["dataset"]))
    names = [name for name in order if name in set(summary["estimator"])]
    colours, markers = _colours(names), _markers(summary, names)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(datasets) + 1.6))
    offsets = np.linspace(-0.3, 0.3, len(names)) if len(names) > 1 else [0.0]
    for offset, name in zip(offsets, names):
        block = summary[summary["estimator"] == name].set_index("dataset")
        ys = [datasets.index(d) + offset for d in block.index]
        ax.errorbar(
            100 * block["accuracy_mean"], ys, xerr=100 * block["accuracy_std"].fillna(0),
            fmt=markers[name], color=colours[name], label=name, markersize=5, capsize=2, lw=1,
        )
    ax.set_yticks(range(len(datasets)))
    ax.set_yticklabels(datasets)
    ax.invert_yaxis()
    ax.set_xlabel("test accuracy (%)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5),
              title="circles: skquad", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_accuracy_vs_time(summary, path, order):
    """Left: every dataset x estimator; right: each estimator averaged over datasets."""
    plt = _pyplot()
    names = [name for name in order if name in set(summary["estimator"])]
    colours, markers = _colours(names), _markers(summary, names)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    valid = summary.dropna(subset=["accuracy_mean", "fit_time_median"])
    # Accuracy relative to the best estimator on each dataset, so that datasets
    # of different difficulty share one axis.
    best = valid.groupby("dataset")["accuracy_mean"].transform("max")
    relative = 100 * (valid["accuracy_mean"] - best)
    for name in names:
        mask = valid["estimator"] == name
        if not mask.any():
            continue
        times = valid.loc[mask, "fit_time_median"].clip(lower=1e-4)
        left.scatter(times, relative[mask], color=colours[name], marker=markers[name],
                     s=18, label=name, alpha=0.8)
        right.scatter(
            np.exp(np.log(times).mean()), relative[mask].mean(), color=colours[name],
            marker=markers[name], s=60, label=name,
        )
        right.annotate(name, (np.exp(np.log(times).mean()), relative[mask].mean()),
                       fontsize=7, xytext=(4, 3), textcoords="offset points")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("fit time (s, log scale)")
        ax.grid(alpha=0.3)
    left.set_ylabel("accuracy minus best on the dataset (pp)")
    left.set_title("each dataset", fontsize=9)
    right.set_title("mean over datasets (geometric mean time)", fontsize=9)
    left.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_description(command, wall_time=None, device="auto", threads=0):
    """The lines of ``machine.txt``: hardware, versions, date, command."""
    import scipy
    import sklearn
    import torch

    try:
        import cvxpy

        cvxpy_version = cvxpy.__version__
    except ImportError:  # pragma: no cover - cvxpy is a dependency
        cvxpy_version = "not installed"
    from .._torch_utils import resolve_device

    try:
        used_device = str(resolve_device(device))
    except ValueError as exc:
        used_device = f"{device} ({exc})"
    lines = [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"command: {command}",
        f"cpu: {_cpu_model()}",
        f"data directory (SKQUAD_DATA): {os.environ.get('SKQUAD_DATA', 'not set')}",
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
        f"torch: {torch.__version__}, cvxpy: {cvxpy_version}",
    ]
    if wall_time is not None:
        lines.append(f"wall time: {wall_time:.0f} s")
    return lines


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


def write_report(output_dir, title, sections, *, command, wall_time, device="auto", threads=0):
    """Write ``report.md``, one CSV per table, and ``machine.txt``.

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

    Returns
    -------
    written : list of pathlib.Path
    """
    output_dir = Path(output_dir)
    written = []
    machine = machine_description(command, wall_time, device, threads)
    body = [f"# {title}", "", f"Command: `{command}`  ", f"Wall time: {wall_time:.0f} s", ""]
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
    return [report, machine_file, *written]


def prepare_output_dir(path):
    """Create the output folder (and its parents) if needed."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True)
    return path
