"""skquad._foundation._late_bound: export's to_torch, found by name when called."""

import subprocess
import sys

import numpy as np
import torch

from skquad import QuadraticRegression
from skquad._foundation._late_bound import to_torch
from skquad.export import to_torch as export_to_torch


def test_it_is_exports_to_torch():
    X = np.random.RandomState(0).standard_normal((30, 3))
    model = QuadraticRegression().fit(X, X[:, 0] * X[:, 1])
    inputs = torch.as_tensor(X)
    expected = export_to_torch(model, dtype=torch.float64)(inputs)
    torch.testing.assert_close(to_torch(model, dtype=torch.float64)(inputs), expected)
    torch.testing.assert_close(model.to_torch(dtype=torch.float64)(inputs), expected)


def test_importing_it_does_not_import_export():
    code = "import sys, skquad._foundation._late_bound; print('skquad.export' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
