"""Final table: the re-run estimators (their defaults changed) from AFTER, every other row from BEFORE."""
import sys, glob
import pandas as pd
from skquad.benchmarks._robustness_suite import split_table, _section, REGRESSION_MARGIN
before, after, changed = sys.argv[1], sys.argv[2], set(sys.argv[3].split(","))
b = pd.read_csv(glob.glob(f"{before}/robustness_suite_regression_runs.csv")[0])
a = pd.read_csv(glob.glob(f"{after}/robustness_suite_regression_runs.csv")[0])
runs = pd.concat([b[~b["estimator"].isin(changed)], a[a["estimator"].isin(changed)]])
order = list(dict.fromkeys(b["estimator"]))
runs["_o"] = runs["estimator"].map(order.index)
runs["_d"] = runs["dataset"].map(list(dict.fromkeys(b["dataset"])).index)
runs = runs.sort_values(["_d", "repeat", "_o"]).drop(columns=["_o", "_d"])
table = split_table(runs, "r2", "Ridge", REGRESSION_MARGIN)
md, best = _section(table, column="r2", digits=3, reference="Ridge", margin=REGRESSION_MARGIN,
                    protocol="(protocol as in the robustness suite's report)", target_lines=True)
print(md)
runs.to_csv(sys.argv[4], index=False)
