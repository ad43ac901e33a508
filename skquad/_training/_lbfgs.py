"""The one L-BFGS driver: scipy's L-BFGS-B on a flat float64 parameter vector.

Every full-batch solver of skquad (the networks' ``solver="lbfgs"``,
quadratic logistic regression) goes through :func:`minimize_lbfgs`, so they
share the stopping options, the per-iteration hook (verbose lines and
scikit-learn callbacks, which may ask to stop) and one warning when scipy
stops before convergence, naming the limit that stopped it.
"""

import numpy as np
from scipy.optimize import OptimizeResult, minimize

__all__ = ["lbfgs_convergence_message", "minimize_lbfgs"]


def minimize_lbfgs(objective, x0, *, max_iter, max_fun, tol, ftol=None, maxls=None,
                   on_iteration=None):
    """Minimise ``objective(theta) -> (value, gradient)`` with L-BFGS-B.

    Parameters
    ----------
    objective : callable
        Returns the float objective and its float64 gradient (an ndarray the
        driver may keep: return a fresh array each call).
    x0 : ndarray of shape (n_parameters,), float64
    max_iter : int
        scipy's ``maxiter``.
    max_fun : int
        scipy's ``maxfun``: the most objective evaluations.
    tol : float
        scipy's ``gtol``: stop when the largest gradient entry is below it.
    ftol, maxls : float and int, optional
        scipy's options of the same names (its defaults when None).
    on_iteration : callable, optional
        ``on_iteration(iteration, loss, theta) -> bool`` after every
        iteration; returning True stops the solver there.

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        With an extra boolean field ``stopped_by_callback``.
    """
    state = {"iteration": 0, "stopped": False}

    def callback(intermediate_result):
        state["iteration"] += 1
        if on_iteration is not None and on_iteration(
            state["iteration"], float(intermediate_result.fun), intermediate_result.x
        ):
            state["stopped"] = True
            raise StopIteration

    if int(max_iter) == 0:
        # scipy's L-BFGS-B takes one step even with maxiter=0 (it checks the
        # limit after the first iteration); zero iterations means the
        # starting point, reported as scipy reports a reached limit.
        x0 = np.asarray(x0, dtype=np.float64)
        value, gradient = objective(x0)
        return OptimizeResult(
            x=x0, fun=value, jac=gradient, nit=0, nfev=1, status=1, success=False,
            message="STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT", stopped_by_callback=False,
        )
    options = {"maxiter": int(max_iter), "maxfun": int(max_fun), "gtol": float(tol)}
    if ftol is not None:
        options["ftol"] = float(ftol)
    if maxls is not None:
        options["maxls"] = int(maxls)
    result = minimize(
        objective,
        np.asarray(x0, dtype=np.float64),
        method="L-BFGS-B",
        jac=True,
        callback=callback,
        options=options,
    )
    result.stopped_by_callback = state["stopped"]
    return result


def lbfgs_convergence_message(result, max_iter, max_fun, remedies=""):
    """The ConvergenceWarning text for a result that stopped early, or None.

    scikit-learn's wording (``sklearn.utils.optimize._check_optimize_result``),
    with the remedy that fits the limit that stopped scipy: ``max_iter`` for
    the iteration limit, ``max_fun`` for the evaluation limit.
    """
    if result.status == 0 or getattr(result, "stopped_by_callback", False):
        return None
    n_iter = min(int(result.nit), int(max_iter))
    message = (
        f"lbfgs failed to converge after {n_iter} iteration(s) "
        f"(status={result.status}):\n{result.message}\n"
    )
    if int(result.nfev) >= int(max_fun) and n_iter < max_iter:
        message += (
            "\nIncrease the number of loss function calls to improve the "
            f"convergence (max_fun={max_fun})."
        )
    elif n_iter >= max_iter:
        message += (
            "\nIncrease the number of iterations to improve the convergence "
            f"(max_iter={max_iter})."
        )
    if remedies:
        message += f"\n{remedies}"
    return message
