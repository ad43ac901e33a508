"""The convex path of paper 002: SDP relaxation, sampling, liftings.

No scikit-learn estimators in here: :mod:`skquad.quantized` wraps these.

formulation
    The SDP relaxation (scalar and vector output; hinge, logistic and squared
    losses) solved with CVXPY, and the networks' training objective.
sampling
    The covariance step (closed form and the paper's convex problem) and the
    sign sampler of Algorithm 1.
lifting
    Intercept, multi-level weights by input replication, polynomial
    activations by lifting, and the export to a quadratic-activation network.
"""

from .formulation import (
    LOSSES,
    SDPSolution,
    SolverFailedError,
    aggregate_samples,
    default_solver,
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
from .sampling import (
    GAMMA,
    covariance_by_sdp,
    covariance_objective,
    krivine_covariance,
    neuron_scale,
    normalized_block,
    sample_sign_pairs,
)

__all__ = [
    "GAMMA",
    "InputLifting",
    "LOSSES",
    "QuadraticNetwork",
    "SDPSolution",
    "SolverFailedError",
    "aggregate_samples",
    "bilinear_network_scores",
    "collapse_replicas",
    "covariance_by_sdp",
    "covariance_objective",
    "default_solver",
    "export_quadratic_network",
    "krivine_covariance",
    "loss_value",
    "network_objective",
    "neuron_scale",
    "normalized_block",
    "replicate_features",
    "sample_sign_pairs",
    "solve_sdp",
]
