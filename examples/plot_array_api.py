"""
=========================================================
Tensors in, tensors out: a grid search on torch tensors
=========================================================

With scikit-learn's array API dispatch on, skquad estimators follow ``X``:
fitted on torch tensors, they train on the tensors' device, keep their fitted
arrays there and return tensors (see :ref:`array_api`). This example runs a
:class:`~sklearn.model_selection.GridSearchCV` over a
:class:`~sklearn.pipeline.Pipeline` of
:class:`~sklearn.preprocessing.StandardScaler` and
:class:`~skquad.QuadraticLogisticRegression` on tensors (on the GPU when there
is one), and checks that it chooses and predicts what the same search does on
numpy arrays.
"""

# %%
# Data as tensors
# ---------------
# scikit-learn's array API needs SciPy's array API mode, set before SciPy is imported.

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

from pathlib import Path  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import sklearn  # noqa: E402
import torch  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.model_selection import GridSearchCV, train_test_split  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skquad import QuadraticLogisticRegression  # noqa: E402

# small sizes for the test suite
QUICK = os.environ.get("SKQUAD_EXAMPLES_QUICK") == "1"
OUTPUT_DIR = Path(os.environ.get("SKQUAD_EXAMPLES_OUTPUT", "."))

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, stratify=y, random_state=0)
device = "cuda" if torch.cuda.is_available() else "cpu"
arrays = (X_train, X_test, y_train, y_test)
tensors = [torch.asarray(array, device=device) for array in arrays]
print(f"{X.shape[0]} samples, {X.shape[1]} features, tensors on {device}")

# %%
# One search on tensors, one on numpy arrays
# ------------------------------------------

Cs = [0.01, 0.1] if QUICK else [0.001, 0.01, 0.1, 1.0]
grid = {"quadraticlogisticregression__C": Cs}


def search():
    pipeline = make_pipeline(StandardScaler(), QuadraticLogisticRegression())
    return GridSearchCV(pipeline, grid, cv=3)


with sklearn.config_context(array_api_dispatch=True):
    on_tensors = search().fit(tensors[0], tensors[2])
    proba = on_tensors.predict_proba(tensors[1])
    accuracy = on_tensors.score(tensors[1], tensors[3])
on_numpy = search().fit(X_train, y_train)

# Everything followed X: the probabilities and the fitted Q are tensors on
# X's device...
model = on_tensors.best_estimator_[-1]
assert isinstance(proba, torch.Tensor) and proba.device == tensors[1].device
assert isinstance(model.Q_, torch.Tensor) and model.Q_.device == tensors[0].device
# ...and the search chose and predicts what it does on numpy arrays.
assert on_tensors.best_params_ == on_numpy.best_params_
np.testing.assert_allclose(
    proba.cpu().numpy(), on_numpy.predict_proba(X_test), rtol=1e-6
)
# (scikit-learn scores tensors in torch: the accuracy is a float32 number)
assert abs(accuracy - on_numpy.score(X_test, y_test)) < 1e-6
print(f"best {on_tensors.best_params_}, test accuracy {accuracy:.3f}")

# %%
# The cross-validated accuracy of each ``C``, from both searches
# ----------------------------------------------------------------

fig, ax = plt.subplots(figsize=(5, 3.5))
searches = ((on_tensors, "torch tensors", "o"), (on_numpy, "numpy arrays", "x"))
for result, label, marker in searches:
    ax.semilogx(Cs, result.cv_results_["mean_test_score"], marker=marker, label=label)
ax.set_xlabel("C")
ax.set_ylabel("mean CV accuracy")
ax.legend()
fig.tight_layout()
fig.savefig(OUTPUT_DIR / "array_api_grid_search.png")
