"""The compact (interior-point) solver of the squared-loss, hinge and logistic SDPs, against CLARABEL through CVXPY."""

import numpy as np
import pytest
import torch

from skquad.convex import InputLifting, LiftedData, solve_relaxation, solve_sdp
from skquad.convex.compact_solver import lifted_svecs, solve_compact, svec_indices
from skquad.convex.routes import compact_applies

from _convex_cases import assert_certified_bracket


def _problem(seed, n_outputs, n=40, d=3):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    if n_outputs == 1:
        y = X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n)  # real targets
    else:
        y = rng.randint(0, n_outputs, size=n)
    weight = rng.uniform(0.2, 2.0, size=n)
    return X, y, weight


LIFTINGS = {
    "bilinear": InputLifting(),
    "weight_levels": InputLifting(levels=2),
    "polynomial": InputLifting(activation=(1.0, 0.5, -0.2)),
    "no_intercept": InputLifting(fit_intercept=False),
}


@pytest.mark.parametrize("name", list(LIFTINGS))
def test_svec_features_give_the_lifted_inner_products(name):
    """``Φ_i · svec(D) = ⟨L(x_i), D⟩`` for a random symmetric ``D``."""
    lifting = LIFTINGS[name]
    X, y, weight = _problem(0, 1)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=1)
    p = data.n_lifted
    D = np.random.RandomState(1).standard_normal((p, p))
    D = D + D.T
    rows, cols = svec_indices(p)
    svec = D[rows, cols] * np.where(rows == cols, 1.0, np.sqrt(2.0))
    expected = data.matrix_inner(torch.as_tensor(D)).numpy()
    # Both sides sum O(p²) products of O(1) numbers: rounding is ~1e-15 relative.
    np.testing.assert_allclose(lifted_svecs(data) @ svec, expected, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("name", list(LIFTINGS))
@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("beta", [1e-3, 3e-2, 1.0])
def test_bracket_holds_the_clarabel_optimum(name, n_outputs, beta):
    lifting = LIFTINGS[name]
    X, y, weight = _problem(5 * n_outputs + int(100 * beta), n_outputs)
    reference = solve_sdp(
        lifting.matrices(X), y, weight, loss="squared", beta=beta, n_outputs=n_outputs,
        solver="CLARABEL",
    ).value
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="squared", beta=beta, n_outputs=n_outputs)
    solution = solve_compact(data, tol=1e-4)
    assert_certified_bracket(solution, reference)


def _three_class_squared_case(seed):
    """Three-class squared-loss data of the bilinear lifting and CLARABEL's optimum."""
    lifting = LIFTINGS["bilinear"]
    X, y, weight = _problem(seed, 3)
    reference = solve_sdp(
        lifting.matrices(X), y, weight, loss="squared", beta=1e-2, n_outputs=3, solver="CLARABEL",
    ).value
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=3)
    return data, reference


@pytest.mark.parametrize("tol, refined", [(1e-4, False), (1e-13, True)])
def test_squared_blocks_are_refined_only_when_the_first_point_does_not_certify(
    tol, refined, monkeypatch
):
    # Clarabel's iterative refinement is off in the first solve; a point that
    # does not certify tol (here: a tol no solve reaches) is solved again
    # with it, and the better certified of the two is returned. Either way
    # the bracket holds CLARABEL's optimum.
    from skquad.convex import compact_solver

    data, reference = _three_class_squared_case(3)
    calls, certified = [], []
    solve_blocks, certified_point = compact_solver._solve_blocks, compact_solver._certified_point

    def recorded_blocks(problem, B, p, settings):
        calls.append(settings.get("iterative_refinement_enable", True))
        return solve_blocks(problem, B, p, settings)

    def recorded_point(*args):
        certified.append(certified_point(*args))
        return certified[-1]

    monkeypatch.setattr(compact_solver, "_solve_blocks", recorded_blocks)
    monkeypatch.setattr(compact_solver, "_certified_point", recorded_point)
    solution = solve_compact(data, tol=tol)
    assert calls == ([False, True] if refined else [False])
    assert solution.relative_gap == min(point["gap"] for point in certified)
    if refined:
        scale = max(1.0, abs(reference))
        assert solution.lower_bound <= reference + 1e-7 * scale <= solution.value + 2e-7 * scale
    else:
        assert_certified_bracket(solution, reference)


def test_a_failed_solve_without_refinement_is_solved_again_with_it(monkeypatch):
    # Without iterative refinement Clarabel may fail outright (a Rust panic
    # on scikit-learn's check_array_api_input data): that pass is dropped and
    # the blocks are solved with refinement, whose bracket holds CLARABEL's optimum.
    from skquad.convex import compact_solver
    from skquad.convex.solution import SolverFailedError

    data, reference = _three_class_squared_case(4)
    solve_blocks, calls = compact_solver._solve_blocks, []

    def failing_without_refinement(problem, B, p, settings):
        refine = settings.get("iterative_refinement_enable", True)
        calls.append(refine)
        if not refine:
            raise SolverFailedError("Clarabel ended with status panic")
        return solve_blocks(problem, B, p, settings)

    monkeypatch.setattr(compact_solver, "_solve_blocks", failing_without_refinement)
    solution = solve_compact(data, tol=1e-4)
    assert calls == [False, True]
    assert_certified_bracket(solution, reference)


def test_a_clarabel_panic_is_a_failed_solve_and_nothing_else_is():
    from skquad.convex.compact_solver import _solve_unless_panic

    class PanicException(BaseException):  # pyo3's, raised from Rust
        pass

    class Solver:
        def __init__(self, error):
            self.error = error

        def solve(self):
            raise self.error

    assert _solve_unless_panic(Solver(PanicException("Eigval error"))) is None
    with pytest.raises(KeyboardInterrupt):
        _solve_unless_panic(Solver(KeyboardInterrupt()))


# One output: the binary hinge goes to the dual barrier first
# (test_convex_hinge_dual.py), the binary logistic loss keeps its numpy block
# solver (breast cancer: 1.3 s there, 6.7 s in the exponential-cone form).
BINARY_SOLVER = {"hinge": "hinge_dual", "logistic": "native"}


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
@pytest.mark.parametrize("name", ["bilinear", "polynomial"])
@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("beta", [1e-4, 1e-2])
def test_classification_bracket_holds_the_clarabel_optimum(loss, name, n_outputs, beta):
    """The hinge's linear form and the logistic loss's exponential-cone form
    (binary and multinomial) against CVXPY's, and the relaxation's choice.

    Issue 18: the factor solver's smoothed hinge stalled short of tol at small
    beta (the compact form has no smoothing); the multinomial logistic loss
    went to the torch factor solver whatever its size.
    """
    lifting = LIFTINGS[name]
    seed = {"hinge": 7, "logistic": 11}[loss] * n_outputs + int(1e4 * beta)
    X, y, weight = _problem(seed, n_outputs)
    labels = np.where(y > np.median(y), 1.0, -1.0) if n_outputs == 1 else y
    reference = solve_sdp(
        lifting.matrices(X), labels, weight, loss=loss, beta=beta, n_outputs=n_outputs,
        solver="CLARABEL",
    ).value
    data = LiftedData.from_lifting(
        lifting, X, labels, weight, loss=loss, beta=beta, n_outputs=n_outputs
    )
    assert compact_applies(data) == (loss == "hinge" or n_outputs > 1)
    solution = solve_compact(data, tol=1e-4)
    assert_certified_bracket(solution, reference)
    relaxed = solve_relaxation(
        lifting, X, labels, weight, loss=loss, beta=beta, n_outputs=n_outputs
    )
    expected = BINARY_SOLVER[loss] if n_outputs == 1 else "compact"
    assert relaxed.solver == expected and relaxed.converged


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_solution_is_exactly_feasible_and_reproduces_its_scores(n_outputs, thread_counts):
    X, y, weight = _problem(2, n_outputs)
    lifting = InputLifting()
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=n_outputs)
    solution = solve_compact(data)
    for k in range(n_outputs):
        Q = solution.Q[k]
        np.testing.assert_allclose(np.diag(Q), solution.rho[k], rtol=1e-12, atol=1e-14)
        assert np.linalg.eigvalsh(Q)[0] >= -1e-12 * max(1.0, solution.rho[k])
        relaxed = 2.0 * lifting.inner(X, solution.Z[k])
        np.testing.assert_allclose(relaxed, solution.scores[:, k], rtol=1e-9, atol=1e-10)
        F, signs = solution.factors[k]
        np.testing.assert_allclose(np.linalg.norm(F, axis=1), 1.0, rtol=1e-12)


def test_huge_beta_gives_the_zero_network():
    X, y, weight = _problem(4, 3)
    data = LiftedData.from_lifting(InputLifting(), X, y, weight, loss="squared", beta=1e6, n_outputs=3)
    solution = solve_compact(data)
    np.testing.assert_array_equal(solution.rho, 0.0)
    assert solution.value == pytest.approx(data.zero_network_value(), rel=1e-12)
    assert solution.lower_bound <= solution.value


def test_relaxation_chooses_the_compact_form_only_where_it_applies():
    X, y, weight = _problem(3, 1)
    lifting = InputLifting()
    squared = solve_relaxation(lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=1)
    assert squared.solver == "compact" and squared.converged
    labels = np.where(y > 0, 1.0, -1.0)
    logistic = solve_relaxation(lifting, X, labels, weight, loss="logistic", beta=1e-2, n_outputs=1)
    assert logistic.solver == "native"
    # solver_options configure the factor solver: asking for them selects it.
    factored = solve_relaxation(
        lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=1, solver_options={"rank": 4}
    )
    assert factored.solver == "native_numpy"
    assert factored.lower_bound <= squared.value + 1e-9 and squared.lower_bound <= factored.value + 1e-9
    wide = LiftedData.from_lifting(
        lifting, np.zeros((5, 40)), np.zeros(5), np.ones(5), loss="squared", beta=1e-2, n_outputs=1
    )
    assert not compact_applies(wide)  # p = 41: m = 861 > 600


def test_squared_loss_chooses_the_compact_form_by_size():
    """Issue 18: past m = 300 the numpy factor block solver is faster for the
    squared loss (breast cancer, m = 496: 0.33 s against 0.84 s), while the
    hinge, which has no such solver, keeps the compact form up to 600."""
    lifting = InputLifting()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 24))  # p = 25: m = 325
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    squared = LiftedData.from_lifting(lifting, X, y, np.ones(30), loss="squared", beta=1e-2, n_outputs=1)
    hinge = LiftedData.from_lifting(lifting, X, y, np.ones(30), loss="hinge", beta=1e-2, n_outputs=1)
    assert not compact_applies(squared) and compact_applies(hinge)
    assert compact_applies(squared, max_size=600)
    narrow = LiftedData.from_lifting(
        lifting, X[:, :22], y, np.ones(30), loss="squared", beta=1e-2, n_outputs=1
    )
    assert compact_applies(narrow)  # p = 23: m = 276
    # Many rows per entry: the compact form up to m = 1000 (waveform5000's
    # split: 7.0 s against 24 s), not with fewer rows, an explicit max_size,
    # or another loss.
    rows = rng.standard_normal((975, 24))  # m = 325: 3 rows per entry
    many = LiftedData.from_lifting(lifting, rows, rows[:, 0], np.ones(975), loss="squared", beta=1e-2,
                                   n_outputs=1)
    fewer = LiftedData.from_lifting(lifting, rows[:974], rows[:974, 0], np.ones(974), loss="squared",
                                    beta=1e-2, n_outputs=1)
    assert compact_applies(many) and not compact_applies(fewer)
    assert not compact_applies(many, max_size=300)
    wider = rng.standard_normal((4000, 44))  # p = 45: m = 1035 > 1000
    assert not compact_applies(LiftedData.from_lifting(lifting, wider, wider[:, 0], np.ones(4000),
                                                       loss="squared", beta=1e-2, n_outputs=1))
    solution = solve_relaxation(lifting, X, y, np.ones(30), loss="squared", beta=1e-2, n_outputs=1)
    assert solution.solver == "native_numpy" and solution.converged


def test_warm_start_of_the_factor_solver_from_a_compact_solution():
    """The factor solver continues from compact factors (the fall-back path)."""
    from skquad.convex import solve_factored

    X, y, weight = _problem(8, 3)
    data = LiftedData.from_lifting(InputLifting(), X, y, weight, loss="squared", beta=1e-2, n_outputs=3)
    compact = solve_compact(data)
    continued = solve_factored(data, tol=1e-6, init=compact, max_iter=500)
    assert continued.lower_bound <= compact.value + 1e-9
    assert compact.lower_bound <= continued.value + 1e-9


def test_factor_solver_takes_the_squared_blocks_one_at_a_time():
    """Blocks solved apart: the sums of values and bounds bracket CLARABEL's optimum."""
    X, y, weight = _problem(9, 3)
    lifting = InputLifting()
    reference = solve_sdp(
        lifting.matrices(X), y, weight, loss="squared", beta=1e-2, n_outputs=3, solver="CLARABEL"
    ).value
    solution = solve_relaxation(
        lifting, X, y, weight, loss="squared", beta=1e-2, n_outputs=3, tol=1e-4,
        solver_options={"chunk_size": 50},  # selects the factor solver
    )
    assert solution.solver == "native_numpy" and len(solution.info["blocks"]) == 3
    assert solution.lower_bound <= reference + 1e-7 <= solution.value + 2e-7
    assert solution.converged and solution.relative_gap <= 1e-4
    assert solution.Q.shape[0] == 3 and solution.scores.shape == (X.shape[0], 3)


@pytest.mark.parametrize("d, first", [(3, "qdldl"), (14, "faer")])
def test_a_factorization_that_fails_gives_way_to_the_other(monkeypatch, d, first):
    """Clarabel factors a block with QDLDL below ``m = _FAER_MIN_BLOCK`` and
    faer above; when the first ends short of Solved (as QDLDL did on a nearly
    singular block) the other solves, to the same certified bracket."""
    import clarabel

    from skquad.convex import compact_solver

    methods = []
    real = clarabel.DefaultSolver

    class Failing:
        def __init__(self, P, q, A, b, cones, settings):
            methods.append(settings.direct_solve_method)
            self.solver = real(P, q, A, b, cones, settings)
            self.fail = settings.direct_solve_method == first

        def solve(self):
            solution = self.solver.solve()
            if self.fail:
                class Failed:
                    status = "NumericalError"
                return Failed()
            return solution

    X, y, weight = _problem(3, 1, n=60, d=d)
    data = LiftedData.from_lifting(InputLifting(), X, y, weight, loss="squared", beta=1e-2, n_outputs=1)
    expected = solve_compact(data, tol=1e-4)
    monkeypatch.setattr(clarabel, "DefaultSolver", Failing)
    solution = solve_compact(data, tol=1e-4)
    other = "faer" if first == "qdldl" else "qdldl"
    assert methods == [first, other]
    assert ((d + 1) * (d + 2) // 2 >= compact_solver._FAER_MIN_BLOCK) == (first == "faer")
    assert solution.converged
    assert solution.value == pytest.approx(expected.value, rel=1e-6)
    # Both factorizations failing: the error names Clarabel's status.
    monkeypatch.setattr(Failing, "solve", lambda self: type("Failed", (), {"status": "NumericalError"})())
    with pytest.raises(compact_solver.SolverFailedError, match="NumericalError"):
        solve_compact(data, tol=1e-4)


def test_failed_logistic_compact_solve_falls_back_to_the_factor_solver(monkeypatch):
    """Exponential cones can end short of "Solved": the relaxation then solves
    the multinomial loss with the factor solver instead of raising."""
    import clarabel

    from skquad.convex import compact_solver

    class Failing:  # Clarabel ending short of "Solved" with either factorization
        def __init__(self, *args):
            pass

        def solve(self):
            return type("Failed", (), {"status": "InsufficientProgress"})()

    monkeypatch.setattr(clarabel, "DefaultSolver", Failing)
    X, y, weight = _problem(8, 3, n=30)
    solution = solve_relaxation(
        InputLifting(), X, y, weight, loss="logistic", beta=1e-2, n_outputs=3, tol=1e-3
    )
    assert solution.solver == "native" and solution.converged
    assert solution.solver_path == ("native",)  # from the start, not a continuation
    # The squared loss has no such fall-back: its error reaches the caller.
    with pytest.raises(compact_solver.SolverFailedError):
        solve_relaxation(InputLifting(), X, y, weight, loss="squared", beta=1e-2, n_outputs=3)


def test_logistic_form_retries_accurately_where_the_fast_certificate_misses_tol(monkeypatch):
    """Iris at the bottom of SDPQuantizedClassifierCV's path (beta = 1e-4
    beta_max): without iterative refinement the certified gap was 1.1e-2;
    the accurate retry certifies tol, and the default beta needs no retry."""
    from sklearn.datasets import load_iris

    from skquad.convex import compact_solver

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    calls = []
    real = compact_solver._solve_logistic

    def recording(*args):
        calls.append(args[-1] == compact_solver._CLARABEL_PASSES["logistic"][1])  # the accurate pass
        return real(*args)

    monkeypatch.setattr(compact_solver, "_solve_logistic", recording)
    for beta, expected in [(1.21e-4, [False, True]), (1e-2, [False])]:
        calls.clear()
        data = LiftedData.from_lifting(
            InputLifting(), X, y, np.ones(len(y)), loss="logistic", beta=beta, n_outputs=3
        )
        solution = solve_compact(data, tol=1e-4)
        assert calls == expected
        assert solution.converged and solution.relative_gap <= 1e-4
