"""The convex path of Bartan & Pilanci: SDP relaxation, certificate, sampling, liftings.

No scikit-learn estimators in here: :class:`~skquad.SDPQuantizedClassifier` and
:class:`~skquad.SDPQuantizedRegressor` wrap these.
Data flow of ``SDPQuantizedClassifier.fit``: ``lifting`` (features ``z``) ->
``problem.LiftedData`` -> the first route of ``routes.ROUTES`` that applies
(default) or ``formulation.solve_sdp`` (CVXPY) -> ``certificate.dual_bound``
(inside every solver) -> ``SDPSolution`` (``Q``, ``rho``, ``lower_bound``) ->
``sampling``.

routes
    The solver table: which native solver takes a problem, in order, and
    what continues it; every size rule of the choice.
relaxation, blocks
    The entry point (validation, the table's stages, warnings); the squared
    loss's blocks one at a time.

problem
    The weighted training set as tensors; products with the lifted inputs
    ``L(x_i)`` without forming them.
losses
    The losses in torch, their dual points and conjugates, the proximal hinge.
factor_solver
    The native solver: Burer-Monteiro factors of the ``P - N`` form, L-BFGS,
    rank growth, warm starts (CPU or CUDA through torch).
certificate
    The dual lower bound from any point, for every solver.
face_dual
    The face-restricted dual (squared, binary logistic): a bound as tight as the primal.
compact_solver
    Small problems in their compact cone form (Clarabel).
hinge_dual, squared_dual
    Barrier methods on the exact duals of the binary hinge and of a
    squared-loss block.
formulation
    The SDP relaxation (scalar and vector output; hinge, logistic and squared
    losses) solved with CVXPY (the reference path; CVXPY is imported only
    there), and the networks' training objective.
sampling
    The covariance step (closed form and the paper's convex problem) and the
    sign sampler of Algorithm 1.
path
    ``beta_max`` (the top of a ``beta`` path) and the ``beta="auto"`` rule.
lifting
    Intercept, multi-level weights by input replication, polynomial
    activations by lifting, and the export to a quadratic-activation network.
"""

from .certificate import Certificate, dual_bound, statistics_dual_bound
from .face_dual import face_dual_bound
from .factor_solver import FACTOR_SOLVER_OPTIONS, solve_factored
from .formulation import (
    LOSSES,
    SDP_SOLVERS,
    aggregate_samples,
    default_solver,
    installed_solvers,
    loss_value,
    network_objective,
    solve_sdp,
)
from .lifting import (
    InputLifting,
    QuadraticNetwork,
    bilinear_network_scores,
    collapse_replicas,
    export_quadratic_network,
    replicate_features,
)
from .path import default_beta, zero_network_beta
from .problem import LiftedData
from .relaxation import solve_relaxation, solve_relaxation_statistics
from .routes import ROUTES, Route, use_routes
from .sampling import (
    GAMMA,
    covariance_by_sdp,
    covariance_objective,
    krivine_covariance,
    neuron_scale,
    normalized_block,
    sample_sign_pairs,
)
from .solution import SDPSolution, SolverFailedError, rescale_solution
from .statistics import LiftedStatistics

__all__ = [
    "FACTOR_SOLVER_OPTIONS",
    "GAMMA",
    "LOSSES",
    "ROUTES",
    "SDP_SOLVERS",
    "Certificate",
    "InputLifting",
    "LiftedData",
    "LiftedStatistics",
    "QuadraticNetwork",
    "Route",
    "SDPSolution",
    "SolverFailedError",
    "rescale_solution",
    "aggregate_samples",
    "bilinear_network_scores",
    "collapse_replicas",
    "covariance_by_sdp",
    "covariance_objective",
    "default_beta",
    "default_solver",
    "dual_bound",
    "export_quadratic_network",
    "face_dual_bound",
    "installed_solvers",
    "krivine_covariance",
    "loss_value",
    "network_objective",
    "neuron_scale",
    "normalized_block",
    "replicate_features",
    "sample_sign_pairs",
    "solve_factored",
    "solve_relaxation",
    "solve_relaxation_statistics",
    "solve_sdp",
    "statistics_dual_bound",
    "use_routes",
    "zero_network_beta",
]
