"""The benchmark command (python -m skquad.benchmarks, skquad/benchmarks/__main__.py): arguments, suites, errors."""

import os
import re
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from skquad.benchmarks import __main__ as cli


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--suite", "nope"], "invalid choice: 'nope'"),
        (["--datasets", "no-such-data"], "unknown dataset 'no-such-data'"),
        (["--quick", "--datasets", "credit.a"], "unknown dataset 'credit.a' for --quick"),
        (["--estimators", "Magic"], "unknown ['Magic']"),
        (["--repeats", "0"], "expected a positive integer"),
        (["--suite", "speed", "--tune"], "--tune applies to --suite uci or regression only"),
        (["--suite", "speed", "--jobs", "2"], "--jobs applies to --suite uci or regression only"),
        (["--jobs", "0"], "argument --jobs"),
    ],
)
def test_cli_errors(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--output", str(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_module_entry_point_reports_an_unknown_suite(monkeypatch, capsys):
    import runpy

    monkeypatch.setattr(sys, "argv", ["python -m skquad.benchmarks", "--suite", "paper999"])
    # run as ``python -m`` does: the module fresh, as __main__
    monkeypatch.delitem(sys.modules, "skquad.benchmarks.__main__", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("skquad.benchmarks", run_name="__main__")
    assert exit_info.value.code == 2
    stderr = capsys.readouterr().err
    assert "invalid choice: 'paper999'" in stderr
    assert "choose from" in stderr and "uci" in stderr


def test_cli_rejects_cuda_without_cuda(capsys, monkeypatch, tmp_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit):
        cli.main(["--quick", "--device", "cuda", "--output", str(tmp_path)])
    assert "CUDA is not available" in capsys.readouterr().err


def test_multi_part_suite_combines_sections_and_reports_failed_parts(tmp_path, monkeypatch):
    module = types.ModuleType("skquad.benchmarks._fake_part")

    def speed(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
        import matplotlib.pyplot as plt

        assert output_dir.is_dir() and quick and repeats == 2 and datasets == ["a"]
        progress("fake part running")
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        fig.savefig(output_dir / "curve.png")
        plt.close(fig)
        table = pd.DataFrame({"size": [1, 2], "ratio": [0.5, 0.7]})
        return {"title": "Fake", "markdown": "Ratio 0.5.\n\n![curve](curve.png)\n",
                "tables": {"ratios": table, "fake_part_times": table}, "figures": ["curve.png"]}

    def broken(**kwargs):
        raise RuntimeError("solver exploded")

    module.speed = speed
    module.broken = broken
    monkeypatch.setitem(sys.modules, "skquad.benchmarks._fake_part", module)
    monkeypatch.setitem(
        cli.SUITES, "speed",
        [("_fake_part", "speed"), ("_fake_part", "broken")],
    )
    status = cli.main(["--suite", "speed", "--quick", "--repeats", "2", "--datasets", "a",
                       "--output", str(tmp_path)])
    assert status == 1  # one part failed
    report = (tmp_path / "report.md").read_text()
    assert "## Fake" in report and "](fake_part/curve.png)" in report
    assert (tmp_path / "fake_part" / "curve.png").is_file()
    assert pd.read_csv(tmp_path / "fake_part_ratios.csv")["ratio"].tolist() == [0.5, 0.7]
    assert (tmp_path / "fake_part_times.csv").is_file()  # not fake_part_fake_part_times.csv
    assert "failed: the fake_part part: RuntimeError: solver exploded" in report


def test_without_the_bench_extra_the_message_names_it():
    import subprocess

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pandas', 'matplotlib'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import skquad.datasets, skquad.benchmarks\n"
        "try:\n"
        "    skquad.benchmarks.run_benchmark('iris')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert "pip install 'skquad[bench]'" in completed.stdout, completed.stderr


def test_readme_lists_every_suite():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([a-z0-9-]+)`", readme, re.MULTILINE)
    assert sorted(listed) == sorted(cli.SUITES)
