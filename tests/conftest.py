"""Test configuration shared by every test module."""

import os
from pathlib import Path

# scikit-learn's estimator checks include an array-API input check that only
# runs when SciPy's array-API mode is on; it must be set before SciPy is imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

# Plots in tests and examples are written to files, never shown.
os.environ.setdefault("MPLBACKEND", "Agg")

# The project's tests read the UCI datasets from the shared folder beside the
# checkout (see ../shared/datasets/README.md); users point SKQUAD_DATA elsewhere.
_SHARED_UCI = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "uci"
if "SKQUAD_DATA" not in os.environ and _SHARED_UCI.is_dir():
    os.environ["SKQUAD_DATA"] = str(_SHARED_UCI)
