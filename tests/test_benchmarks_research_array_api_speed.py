"""The array-api suite (skquad.benchmarks.research._array_api_speed): tensors against numpy."""

import numpy as np
import pytest
import torch

from skquad import QuadraticRegression
from skquad.benchmarks.research import _array_api_speed


def test_each_estimator_is_timed_on_numpy_and_tensors(monkeypatch, tmp_path):
    monkeypatch.setattr(_array_api_speed, "_cases", lambda quick: [(QuadraticRegression(alpha=1.0), False)])
    calls = []
    timed = _array_api_speed._fit_predict_time
    monkeypatch.setattr(_array_api_speed, "_fit_predict_time",
                        lambda estimator, X, y, dispatch: calls.append((type(X), dispatch))
                        or timed(estimator, X, y, dispatch))
    result = _array_api_speed.run(output_dir=tmp_path, quick=True, repeats=2, progress=lambda message: None)
    row = result["tables"]["array_api_speed"].set_index("estimator").loc["QuadraticRegression"]
    for step in ("fit", "predict"):
        assert row[f"{step} numpy s"] > 0 and row[f"{step} torch cpu s"] > 0
        np.testing.assert_allclose(row[f"{step} tensors / numpy"], row[f"{step} torch cpu s"] / row[f"{step} numpy s"])
    # one warm-up and two timed rounds, numpy then tensors under the dispatch in each
    assert calls == [(np.ndarray, False), (torch.Tensor, True)] * 3


def test_needs_scipy_array_api(monkeypatch, tmp_path):
    monkeypatch.delenv("SCIPY_ARRAY_API")
    with pytest.raises(ValueError, match="SCIPY_ARRAY_API=1"):
        _array_api_speed.run(output_dir=tmp_path, progress=lambda message: None)
