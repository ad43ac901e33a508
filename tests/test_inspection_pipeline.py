"""skquad/inspection/_pipeline.py: the input of the estimator at the end of a Pipeline."""

import numpy as np
import pytest

from skquad import QuadraticLogisticRegression
from skquad.inspection import interaction_table


def test_interaction_table_refuses_reordered_columns_as_predict_does():
    # Issue 19: a frame with the fitted columns in another order was read as the
    # wrong features; predict refuses it, and so does the table now.
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.arange(40) % 2
    X[:, 0] += y
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = QuadraticLogisticRegression().fit(frame, y)
    reordered = frame[["c", "b", "a"]]
    with pytest.raises(ValueError, match="same order as they were in fit") as from_predict:
        model.predict(reordered)
    with pytest.raises(ValueError, match="same order as they were in fit") as from_table:
        interaction_table(model, reordered)
    assert str(from_table.value) == str(from_predict.value)
    # the fitted order still works
    assert interaction_table(model, frame)["importance"].notna().all()
