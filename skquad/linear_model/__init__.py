"""Single quadratic neurons: ``QuadraticLogisticRegression`` and ``QuadraticRegression``.

One module per estimator, as :mod:`sklearn.linear_model` keeps them:
``_logistic`` (the classifier, trained by the L-BFGS driver of
:mod:`skquad._training`) and ``_regression`` (the regressor, a ridge problem
on the degree-2 features solved in closed form by
:mod:`skquad.nn.quadratic_ridge`) and ``_regression_cv`` (the regressor with
``alpha`` chosen by RidgeCV's efficient leave-one-out), ``_logistic_cv`` (the
classifier with ``C`` chosen on folds along a warm-started path), and
``_interactions`` (the interaction constraints both models read).
"""

from ._logistic import QuadraticLogisticRegression
from ._logistic_cv import QuadraticLogisticRegressionCV
from ._regression import QuadraticRegression
from ._regression_cv import QuadraticRegressionCV

__all__ = [
    "QuadraticLogisticRegression",
    "QuadraticLogisticRegressionCV",
    "QuadraticRegression",
    "QuadraticRegressionCV",
]
