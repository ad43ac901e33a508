"""skquad/benchmarks/_report.py: the score descriptions and the one Markdown table writer."""

import numpy as np
import pandas as pd

from skquad.benchmarks._report import ACCURACY, R2, format_mean_std, markdown_table


def test_format_mean_std_prints_the_mean_alone_without_a_std():
    assert format_mean_std(85.234, 1.26) == "85.2 ± 1.3"
    assert format_mean_std(0.41234, 0.0123, digits=3) == "0.412 ± 0.012"
    assert format_mean_std(85.234, np.nan) == "85.2"
    assert format_mean_std(85.234, None) == "85.2"


def test_markdown_table_from_rows_escapes_pipes_and_blanks_missing_values():
    table = markdown_table(["name", "value"], [["a|b", 0.123456], ["c\nd", np.nan]])
    assert table.split("\n") == [
        "| name | value |",
        "|---|---|",
        "| a\\|b | 0.123 |",
        "| c d |  |",
    ]


def test_markdown_table_from_a_frame_keeps_its_named_index_and_joins_column_levels():
    frame = pd.DataFrame(
        [[0.5, 1.25]], columns=pd.MultiIndex.from_tuples([("r2", "mean"), ("r2", "std")]),
        index=pd.Index(["diabetes"], name="dataset"),
    )
    lines = markdown_table(frame, floatfmt=".2f").split("\n")
    assert lines[0] == "| dataset | r2 / mean | r2 / std |"
    assert lines[2] == "| diabetes | 0.50 | 1.25 |"


def test_scores_describe_accuracy_in_percent_and_r2_unbounded_below():
    assert ACCURACY.scale * 0.853 == 85.3 and (ACCURACY.lower, ACCURACY.upper) == (0.0, 1.0)
    assert R2.scale == 1.0 and R2.lower is None and R2.upper == 1.0
