"""What the Dask test modules share: the tolerances of two QLR fits of one objective."""

import numpy as np


def qlr_reference_tolerances(model, n_weight, C, tol):
    """Bounds for two L-BFGS solutions of the same strongly convex objective.

    The objective (divided by C * sum(w)) has the penalty 0.5 / (C sum(w)) ||theta||^2,
    so it is mu-strongly convex with mu >= 1 / (C sum(w)). Both fits stop with
    |gradient|_inf <= tol, i.e. |gradient|_2 <= sqrt(p) tol: each is within
    sqrt(p) tol / mu of the optimum in the parameters and within p tol^2 / (2 mu)
    in the objective. The loss bound gets a float64 rounding allowance on top.
    """
    p = model.Q_.size + model.coef_.size + model.intercept_.size
    mu = 1.0 / (C * n_weight)
    parameters = 2 * np.sqrt(p) * tol / mu
    loss = 2 * p * tol**2 / (2 * mu) + 1e-12
    return parameters, loss
