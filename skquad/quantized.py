"""Binary-weight two-layer networks: convex SDP training and its baseline (paper 002).

:class:`SDPQuantizedClassifier` solves the convex SDP relaxation of the
training problem of a bilinear network with ±1 first-layer weights, then
samples such a network from the relaxed solution (Algorithm 1);
:class:`BackpropQuantizedClassifier` is the paper's baseline: the same network
with real weights trained by SGD with momentum, then quantized by signs and one
fitted scale.
"""

import hashlib
import time
from numbers import Integral, Real

import cvxpy as cp
import numpy as np
import torch
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._base import BaseQuadraticClassifier, check_positive_int, labels_from_scores
from ._engine import ParameterGroup, Trainer, TrainingConfig
from ._torch_utils import make_generator, resolve_device, to_numpy
from .convex.formulation import (
    LOSSES,
    aggregate_samples,
    default_solver,
    network_objective,
    solve_sdp,
)
from .convex.lifting import InputLifting, bilinear_network_scores, collapse_replicas, export_quadratic_network
from .convex.sampling import (
    covariance_by_sdp,
    krivine_covariance,
    neuron_scale,
    normalized_block,
    sample_sign_pairs,
)

__all__ = ["SDPQuantizedClassifier", "BackpropQuantizedClassifier"]


def _check_activation(activation):
    """``"bilinear"`` or three finite coefficients ``(a, b, c)``."""
    if isinstance(activation, str):
        return activation
    try:
        coefficients = tuple(float(value) for value in activation)
    except (TypeError, ValueError):
        coefficients = ()
    if len(coefficients) != 3 or not np.all(np.isfinite(coefficients)):
        raise ValueError(
            "activation must be 'bilinear' or a tuple (a, b, c) of three finite "
            f"numbers for sigma(t) = a t^2 + b t + c, got {activation!r}."
        )
    if coefficients[0] == 0.0 and coefficients[1] == 0.0:
        raise ValueError(
            f"activation={activation!r} is constant (a = b = 0); the network "
            "would ignore its input."
        )
    return coefficients


def _check_solver(solver, loss, n_lifted, n_outputs):
    if solver is None:
        return default_solver(loss, n_lifted, n_outputs)
    installed = cp.installed_solvers()
    if solver.upper() not in installed:
        raise ValueError(
            f"solver={solver!r} is not an installed CVXPY solver; installed: "
            f"{sorted(installed)}. SCS and CLARABEL handle these SDPs."
        )
    return solver.upper()


def _neurons_per_output(n_neurons, n_outputs):
    """Split ``n_neurons`` as evenly as possible over the outputs."""
    if n_neurons < n_outputs:
        raise ValueError(
            f"n_neurons={n_neurons} is smaller than the number of classes "
            f"({n_outputs}); every class needs at least one neuron."
        )
    counts = np.full(n_outputs, n_neurons // n_outputs)
    counts[: n_neurons % n_outputs] += 1
    return counts


def _standardization(X, weight):
    """Weighted mean and standard deviation of the features (1 where constant)."""
    weight = weight / weight.sum()
    mean = weight @ X
    std = np.sqrt(weight @ (X - mean) ** 2)
    return mean, np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)


def _class_targets(y_encoded, n_outputs):
    """±1 labels (binary, +1 for ``classes_[1]``) or class indices."""
    return 2.0 * y_encoded - 1.0 if n_outputs == 1 else y_encoded


_LOSS_DOC = """loss : {"squared", "hinge", "logistic"}, default="squared"
        Training loss on the network's scores, a sample-weighted mean. Binary
        problems use labels -1 / +1 (+1 for ``classes_[1]``) and one score;
        with ``K > 2`` classes there is one score per class and the losses are
        the squared error to the one-hot labels, the Crammer-Singer hinge and
        the multinomial logistic loss."""


class SDPQuantizedClassifier(BaseQuadraticClassifier):
    """Binary-weight bilinear network trained by convex SDP relaxation and sampling.

    The model is the two-layer network of paper 002 with first-layer weights
    in {-1, +1} and a bilinear activation::

        f(x) = sum_j alpha_j (z^T u_j) (z^T v_j),   z = [x, 1],  u_j, v_j in {-1, +1}^p

    (one such sum per class when there are more than two classes). Training
    solves the convex SDP relaxation of the NP-hard problem
    ``min loss(f) + beta * p * sum_j |alpha_j|``, whose optimum
    ``lower_bound_`` is a lower bound on the objective of *every* network of
    this form, then draws ``n_neurons`` sign vectors from a Gaussian whose
    covariance is shaped from the relaxed solution (the paper's Algorithm 1):
    as ``n_neurons`` grows the sampled network's objective ``objective_``
    approaches the bound. The second layer is one shared weight per class, so
    the network is stored in ``2 * n_neurons * p`` bits plus one float per class.

    Parameters
    ----------
    n_neurons : int, default=1000
        Hidden neurons ``m`` of the sampled network (split evenly over the
        classes when there are more than two). Changing it needs no new SDP
        solve: see :meth:`resample` and ``warm_start``.
    loss : {"squared", "hinge", "logistic"}, default="squared"
        Training loss on the network's scores, a sample-weighted mean. Binary
        problems use labels -1 / +1 (+1 for ``classes_[1]``) and one score;
        with ``K > 2`` classes there is one score per class and the losses are
        the squared error to the one-hot labels, the Crammer-Singer hinge and
        the multinomial logistic loss. "squared" solves fastest, "logistic"
        gives the most meaningful ``predict_proba``.
    beta : float, default=1e-2
        Regularization ``beta``: the objective penalizes
        ``beta * p * sum_j ||alpha_j||_1`` (the paper's ``beta d sum |alpha_j|``,
        with ``p`` the length of the binary weight vectors). In the SDP this is
        ``2 * beta * p * rho``; see :mod:`skquad.convex.formulation` for why
        the factor 2 (the paper writes ``beta * d * rho``, a looser bound).
        Larger values give smaller second-layer weights; too large a value
        gives the zero network.
    fit_intercept : bool, default=True
        Append a constant input 1 to every sample, so that each neuron is
        ``(x^T u + u_0)(x^T v + v_0)`` with its own binary biases
        ``u_0, v_0`` (or multi-level ones with ``weight_levels > 1``).
        The constant input has scale 1, matched to standardized features.
    standardize : bool, default=True
        Standardize the features inside the model, ``(x - feature_mean_) /
        feature_scale_`` with (sample-weighted) training statistics, before the
        intercept column is appended. The sampled network's error grows with
        ``||x||^2`` (paper 002, Theorem 3), so unscaled inputs would need far
        more neurons. The binary weights act on the standardized features.
    weight_levels : int, default=1
        ``M``: first-layer weights take the ``M + 1`` values
        ``{-M, -M+2, ..., M}`` (1 = binary). Implemented by replicating every
        input ``M`` times (paper 002, section 2.2): ``U_`` and ``V_`` stay
        binary on the replicated input; :meth:`integer_weights` gives the
        multi-level weights on the original features. The SDP grows with
        ``(M * n_features)^2``.
    activation : "bilinear" or tuple of 3 floats, default="bilinear"
        ``"bilinear"``: neurons ``(z^T u)(z^T v)``. A tuple ``(a, b, c)``:
        the degree-2 polynomial activation ``sigma(t) = a t^2 + b t + c``
        through the lifting of paper 002, sections 2.3-2.4 (one extra binary
        coordinate per weight vector; a neuron with ``u = v`` computes
        ``sigma(z^T u)`` exactly).
    solver : str, default=None
        CVXPY solver for the SDP. None means the fastest reliable one
        installed for the problem: SCS, or CLARABEL for the multiclass hinge
        loss with at most 20 lifted features (see :func:`skquad.convex.default_solver`);
        "CLARABEL" (interior point) gives a certificate accurate to ~1e-8 and
        is slower for wide problems.
    solver_options : dict, default=None
        Keyword arguments of ``cvxpy.Problem.solve``, e.g.
        ``{"max_iters": 20000, "eps_abs": 1e-6}`` for SCS.
    covariance : {"krivine", "sdp"}, default="krivine"
        How the covariance step (paper 002, eq. 27) is done: "krivine" uses
        its exact closed-form solution (two elementwise functions), "sdp"
        solves eq. 27 as the paper does, as a second small convex problem.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the loss, as in scikit-learn.
    warm_start : bool, default=False
        When True and the training data and the SDP's parameters (loss, beta,
        fit_intercept, weight_levels, activation, class_weight, solver,
        solver_options) are unchanged since the last fit, ``fit`` reuses the
        stored SDP solution and only re-samples: changing ``n_neurons`` or
        ``random_state`` then costs no solve.
    random_state : int, RandomState instance or None, default=None
        Seeds the sign sampling. The SDP solve itself is deterministic.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string feature names.
    feature_mean_, feature_scale_ : ndarray of shape (n_features_in_,) or None
        The standardization (None when ``standardize=False``).
    U_, V_ : ndarray of shape (n_neurons_, n_lifted_features_), int8
        The first-layer weights ``u_j`` and ``v_j`` in {-1, +1}, acting on the
        lifted input (intercept column, replicas, polynomial coordinate).
    alpha_ : ndarray of shape (n_neurons_, n_scores)
        Second-layer weights: neuron ``j`` of class ``k`` has
        ``alpha_[j, k] = rho_[k] * pi / (gamma * m_k)`` (``gamma = ln(1+sqrt 2)``,
        ``m_k`` neurons for class ``k``) and zeros elsewhere.
        ``n_scores`` is 1 for binary problems, else ``n_classes``.
    neuron_class_ : ndarray of shape (n_neurons_,)
        Index of the score each neuron feeds.
    n_neurons_ : int
        Neurons of the current network (set by ``fit`` and :meth:`resample`).
    lower_bound_ : float
        Optimal value of the SDP relaxation: no network of this architecture,
        of any width, has a training objective below it (up to the solver's
        accuracy; use solver="CLARABEL" for a tight certificate).
    objective_ : float
        Training objective of the sampled network, same loss and penalty:
        ``loss + beta * p * sum_j ||alpha_j||_1``.
    relaxed_objective_gap_ : float
        ``objective_ - lower_bound_`` (at least 0 up to solver accuracy):
        how far the sampled network can be from the best binary network.
    Q_ : ndarray of shape (n_scores, 2 p, 2 p)
        Relaxed solution: the PSD matrices ``[[V, Z], [Z^T, W]]``.
    Z_ : ndarray of shape (n_scores, p, p)
        Their off-diagonal blocks; the relaxed model predicts
        ``2 <L(x), Z_k>`` (:meth:`relaxed_decision_function`).
    rho_ : ndarray of shape (n_scores,)
        The diagonal values of ``Q_``.
    covariance_ : ndarray of shape (n_scores, 2 p, 2 p)
        Covariances of the sign sampler (output of the covariance step).
    n_lifted_features_ : int
        ``p``, the length of the binary weight vectors.
    solver_ : str
        The CVXPY solver used.
    solver_status_ : str
    solve_time_ : float
        Seconds of the SDP solve (0 when ``warm_start`` reused it).

    See Also
    --------
    BackpropQuantizedClassifier : the paper's baseline, SGD then quantization.

    Notes
    -----
    ``decision_function`` returns the network's scores ``f(x)``;
    ``predict_proba`` maps them through the sigmoid (binary) or softmax. With
    ``loss="logistic"`` this is the probability model the network was trained
    for; with the squared and hinge losses the scores are fitted to ±1 (or
    one-hot) targets and the probabilities are only a monotone summary of the
    scores: calibrate them (CalibratedClassifierCV) if they matter.

    The SDP has ``n_classes`` PSD blocks of size ``2 p``; standard solvers
    handle ``p`` up to a few hundred. Memory and time grow fast with
    ``weight_levels`` and the number of features.

    References
    ----------
    B. Bartan and M. Pilanci, "Training Quantized Neural Networks to Global
    Optimality via Semidefinite Programming", ICML 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skquad import SDPQuantizedClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = X[:, :6]
    >>> clf = make_pipeline(StandardScaler(), SDPQuantizedClassifier(random_state=0))
    >>> clf = clf.fit(X, y)
    >>> sdp = clf[-1]
    >>> sdp.U_.shape, sdp.U_.dtype.name
    ((1000, 7), 'int8')
    >>> bool(sdp.lower_bound_ <= sdp.objective_)
    True
    >>> round(clf.score(X, y), 1)
    0.9
    """

    _parameter_constraints = {
        "n_neurons": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions(set(LOSSES))],
        "beta": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "standardize": ["boolean"],
        "weight_levels": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions({"bilinear"}), tuple, list],
        "solver": [str, None],
        "solver_options": [dict, None],
        "covariance": [StrOptions({"krivine", "sdp"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_neurons=1000,
        *,
        loss="squared",
        beta=1e-2,
        fit_intercept=True,
        standardize=True,
        weight_levels=1,
        activation="bilinear",
        solver=None,
        solver_options=None,
        covariance="krivine",
        class_weight=None,
        warm_start=False,
        random_state=None,
    ):
        self.n_neurons = n_neurons
        self.loss = loss
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.weight_levels = weight_levels
        self.activation = activation
        self.solver = solver
        self.solver_options = solver_options
        self.covariance = covariance
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def _lifting(self):
        return InputLifting(
            fit_intercept=bool(self.fit_intercept),
            levels=int(self.weight_levels),
            activation=_check_activation(self.activation),
            center=self.feature_mean_,
            scale=self.feature_scale_,
        )

    def _sdp_key(self, X, y, weight, solver):
        """Fingerprint of everything the SDP solution depends on."""
        digest = hashlib.sha256()
        for array in (X, y, weight):
            digest.update(np.ascontiguousarray(array).tobytes())
        for array in (self.feature_mean_, self.feature_scale_):
            digest.update(b"none" if array is None else array.tobytes())
        settings = (
            self.loss,
            float(self.beta),
            (self.fit_intercept, self.weight_levels, _check_activation(self.activation)),
            solver,
            repr(sorted((self.solver_options or {}).items())),
            X.shape,
            self.classes_.tolist(),
        )
        digest.update(repr(settings).encode())
        return digest.hexdigest()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Solve the SDP relaxation and sample a binary network from it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights (weight 2 is the same as repeating a sample).

        Returns
        -------
        self : SDPQuantizedClassifier
        """
        X, y_encoded, sample_weight = self._validate_training_data(X, y, sample_weight)
        lifting = InputLifting(
            fit_intercept=bool(self.fit_intercept),
            levels=int(self.weight_levels),
            activation=_check_activation(self.activation),
        )
        solver = _check_solver(
            self.solver, self.loss, lifting.n_lifted(X.shape[1]), self._n_scores
        )
        n_outputs = self._n_scores
        _neurons_per_output(self.n_neurons, n_outputs)

        # The SDP sees only the weighted empirical distribution: merge duplicates.
        X_train, y_train, weight = aggregate_samples(X, y_encoded, sample_weight)
        self.feature_mean_, self.feature_scale_ = (
            _standardization(X_train, weight) if self.standardize else (None, None)
        )
        targets = _class_targets(y_train, n_outputs)
        key = self._sdp_key(X_train, targets, weight, solver)

        if self.warm_start and getattr(self, "_sdp_key_", None) == key:
            self.solve_time_ = 0.0
        else:
            solution = solve_sdp(
                self._lifting().matrices(X_train),
                targets,
                weight,
                loss=self.loss,
                beta=float(self.beta),
                n_outputs=n_outputs,
                solver=solver,
                solver_options=self.solver_options,
            )
            self.Q_ = solution.Q
            self.Z_ = solution.Z.copy()
            self.rho_ = solution.rho
            self.lower_bound_ = solution.value
            self.solver_ = solution.solver
            self.solver_status_ = solution.status
            self.solve_time_ = solution.solve_time
            self.n_lifted_features_ = solution.Q.shape[1] // 2
            self._sdp_key_ = key
            self._covariance_method = None
        if self._covariance_method != self.covariance:
            self.covariance_ = np.stack(
                [self._covariance(normalized_block(Q, rho)) for Q, rho in zip(self.Q_, self.rho_)]
            )
            self._covariance_method = self.covariance
        self._training_data = (X_train, targets, weight)
        return self._sample(self.n_neurons, self.random_state)

    def _covariance(self, Q_normalized):
        if self.covariance == "krivine":
            return krivine_covariance(Q_normalized)
        p = Q_normalized.shape[0] // 2
        return covariance_by_sdp(
            Q_normalized[:p, p:], solver=self.solver_, solver_options=self.solver_options
        )

    def _sample(self, n_neurons, random_state):
        """Algorithm 1, step 3: signs from the covariances, one scale per class."""
        rng = check_random_state(random_state)
        n_outputs = self.rho_.shape[0]
        counts = _neurons_per_output(n_neurons, n_outputs)
        U_blocks, V_blocks = [], []
        alpha = np.zeros((n_neurons, n_outputs))
        neuron_class = np.repeat(np.arange(n_outputs), counts)
        for k, count in enumerate(counts):
            U, V = sample_sign_pairs(self.covariance_[k], int(count), rng)
            U_blocks.append(U)
            V_blocks.append(V)
            alpha[neuron_class == k, k] = neuron_scale(self.rho_[k], count)
        self.U_ = np.vstack(U_blocks)
        self.V_ = np.vstack(V_blocks)
        self.alpha_ = alpha
        self.neuron_class_ = neuron_class
        self.n_neurons_ = int(n_neurons)

        X_train, targets, weight = self._training_data
        scores = bilinear_network_scores(self._lifting(), X_train, self.U_, self.V_, alpha)
        self.objective_ = network_objective(
            scores, targets, weight, self.loss, alpha, float(self.beta), self.n_lifted_features_
        )
        self.relaxed_objective_gap_ = self.objective_ - self.lower_bound_
        return self

    def resample(self, n_neurons=None, random_state=None):
        """Draw a new network from the stored SDP solution (no new solve).

        Parameters
        ----------
        n_neurons : int, default=None
            Width of the new network; None keeps ``n_neurons_``. The
            ``n_neurons`` parameter is left unchanged; ``n_neurons_`` records
            the current width.
        random_state : int, RandomState instance or None, default=None
            Seed of the new draw.

        Returns
        -------
        self : SDPQuantizedClassifier
            With new ``U_``, ``V_``, ``alpha_``, ``objective_``.
        """
        check_is_fitted(self, "covariance_")
        n_neurons = self.n_neurons_ if n_neurons is None else check_positive_int(n_neurons, "n_neurons")
        return self._sample(n_neurons, random_state)

    # -------------------------------------------------------------- predict
    def _raw_scores(self, X):
        return bilinear_network_scores(self._lifting(), X, self.U_, self.V_, self.alpha_)

    def relaxed_decision_function(self, X):
        """Scores of the relaxed (unquantized) SDP model, ``2 <L(x), Z_k>``.

        The sampled network's scores equal these in expectation over the sign
        draws; with many neurons they agree closely.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        X = self._validate_predict_data(X)
        lifting = self._lifting()
        scores = np.column_stack([2.0 * lifting.inner(X, Z) for Z in self.Z_])
        return scores.ravel() if scores.shape[1] == 1 else scores

    def relaxed_predict(self, X):
        """Class labels predicted by the relaxed SDP model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return labels_from_scores(self.classes_, self.relaxed_decision_function(X))

    def integer_weights(self):
        """The first layer as multi-level integer weights on the original features.

        Returns
        -------
        weights : dict
            ``"U"``, ``"V"``: int64 arrays of shape (n_neurons_, n_features_in_)
            with values in ``{-M, -M+2, ..., M}`` (M = ``weight_levels``);
            ``"U_bias"``, ``"V_bias"``: the weights of the constant input
            (None without ``fit_intercept``); ``"U_lift"``, ``"V_lift"``: the
            ±1 polynomial-lifting coordinates (None for the bilinear
            activation). With ``t_u = x @ U[j] + U_bias[j]`` (and ``t_v``
            alike), neuron ``j`` computes ``t_u * t_v`` (bilinear) or
            ``a t_u t_v + (b/2)(V_lift[j] t_u + U_lift[j] t_v) + c U_lift[j] V_lift[j]``
            (polynomial ``(a, b, c)``; equal to ``sigma(t_u)`` when ``u = v``).
        """
        check_is_fitted(self, "U_")
        lifting = self._lifting()
        result = {}
        for name, signs in (("U", self.U_), ("V", self.V_)):
            lift = None
            if lifting.polynomial:
                signs, lift = signs[:, :-1], signs[:, -1].astype(np.int64)
            collapsed = collapse_replicas(signs, lifting.levels)
            bias = None
            if lifting.fit_intercept:
                collapsed, bias = collapsed[:, :-1], collapsed[:, -1]
            result.update({name: collapsed, f"{name}_bias": bias, f"{name}_lift": lift})
        return result

    def export_quadratic_network(self):
        """The network as ``3 n_neurons`` quadratic-activation neurons (Appendix C).

        Returns
        -------
        network : :class:`skquad.convex.QuadraticNetwork`
            ``network.scores(X)`` equals ``decision_function(X)`` (as a
            column); ``network.weights`` are in {-1, 0, 1} on the lifted
            input and ``network.integer_weights()`` gives the integer weights
            and biases on the original features.
        """
        check_is_fitted(self, "U_")
        return export_quadratic_network(self.U_, self.V_, self.alpha_, self._lifting())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


class _BilinearModule(torch.nn.Module):
    """``f(z) = ((z U^T) * (z V^T)) @ A`` with real ``U, V`` and a fixed ``A``."""

    def __init__(self, U, V, output_weights):
        super().__init__()
        self.U = torch.nn.Parameter(U)
        self.V = torch.nn.Parameter(V)
        self.register_buffer("output_weights", output_weights)

    def forward(self, Z):
        return ((Z @ self.U.T) * (Z @ self.V.T)) @ self.output_weights


def _torch_loss(loss, n_outputs):
    """Per-sample loss ``(scores, targets) -> (n,)`` matching the SDP's losses."""
    functional = torch.nn.functional

    if n_outputs == 1:
        def binary(scores, target):
            margin = target * scores[:, 0]
            if loss == "hinge":
                return functional.relu(1.0 - margin)
            if loss == "logistic":
                return functional.softplus(-margin)
            return (scores[:, 0] - target) ** 2

        return binary

    def multiclass(scores, target):
        if loss == "logistic":
            return functional.cross_entropy(scores, target, reduction="none")
        onehot = functional.one_hot(target, n_outputs).to(scores.dtype)
        if loss == "hinge":
            return (scores + 1.0 - onehot).max(dim=1).values - (scores * onehot).sum(dim=1)
        return ((scores - onehot) ** 2).sum(dim=1)

    return multiclass


def _bilinear_curvature(Z, sample_weight, batch_size, n_power_iterations=30):
    """Largest output curvature per unit first-layer step of the fresh network.

    With ``u_j, v_j ~ N(0, I/p)`` and the step on the first layer scaled by
    ``m_k`` (undoing ``alpha_j = 1 / m_k``), an SGD step of size ``eta`` moves
    the outputs through the kernel ``eta * 2 (z^T z')^2 / p`` (the network's
    tangent kernel, averaged over the neurons). Gradient descent on a
    minibatch is stable when ``eta`` times the kernel's largest eigenvalue on
    that minibatch stays below a constant, so the step must be divided by

    * the largest eigenvalue of the (weighted) full-data kernel
      ``[(z_i^T z_j)^2 / p]`` (power iteration, each product
      ``z_i^T (Z^T diag(w) Z) z_i`` costs ``O(n p^2)``), and
    * the largest single-sample term ``||z_i||^4 / (p B)``, which dominates
      any minibatch holding that sample: standardized features with rare
      values (sparse pixels, skewed measurements) give ``||z_i||^2`` many
      times ``p``, and the quadratic network sees its square.

    This is what made a fixed step diverge on optdigits, segment or
    load_digits while working on well-conditioned data: the curvature grows
    with ``||z||^4``, not with ``||z||^2`` as in a linear model.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n_samples, n_lifted = Z.shape
    weight = np.asarray(sample_weight, dtype=np.float64)
    weight = weight / weight.sum()
    squared_norms = np.einsum("ij,ij->i", Z, Z)
    batch = max(1, min(int(batch_size or 200), n_samples))
    single_sample = float(np.max(squared_norms[weight > 0] ** 2)) / (n_lifted * batch)
    vector = np.full(n_samples, 1.0 / np.sqrt(n_samples))
    eigenvalue = 0.0
    for _ in range(n_power_iterations):
        # (K w v)_i = z_i^T (sum_j w_j v_j z_j z_j^T) z_i / p, symmetrized by sqrt(w).
        root = np.sqrt(weight) * vector
        middle = (Z * root[:, None]).T @ Z
        image = np.sqrt(weight) * np.sum((Z @ middle) * Z, axis=1) / n_lifted
        norm = float(np.linalg.norm(image))
        if not np.isfinite(norm) or norm == 0.0:
            break
        eigenvalue, vector = norm, image / norm
    return max(eigenvalue, single_sample, 1e-12)


def _make_bilinear_trainer(
    n_lifted,
    n_outputs,
    *,
    n_neurons,
    loss,
    beta,
    learning_rate,
    momentum,
    batch_size,
    tol,
    n_iter_no_change,
    verbose,
    device,
    random_state,
    n_threads="auto",
    initial=None,
    curvature=1.0,
):
    """The paper's baseline network (``alpha`` fixed to ``1 / m_k``) and its SGD trainer.

    Shared by :class:`BackpropQuantizedClassifier` and the paper 002
    benchmark (which also trains it on real-valued targets: with one output,
    ``targets`` may be any floats for the squared loss).

    Returns
    -------
    trainer : skquad._engine.Trainer
    neuron_class : ndarray of shape (n_neurons,)
    output_weights : ndarray of shape (n_neurons, n_outputs)
    """
    counts = _neurons_per_output(n_neurons, n_outputs)
    generator = make_generator(random_state)
    if initial is None:
        # Unit-variance projections z^T u for standardized inputs.
        U = torch.randn(n_neurons, n_lifted, generator=generator, dtype=torch.float64)
        V = torch.randn(n_neurons, n_lifted, generator=generator, dtype=torch.float64)
        U, V = U / np.sqrt(n_lifted), V / np.sqrt(n_lifted)
    else:
        U, V = (torch.as_tensor(np.asarray(w, dtype=np.float64)) for w in initial)
    neuron_class = np.repeat(np.arange(n_outputs), counts)
    output_weights = np.zeros((n_neurons, n_outputs))
    output_weights[np.arange(n_neurons), neuron_class] = 1.0 / counts[neuron_class]
    module = _BilinearModule(U, V, torch.as_tensor(output_weights))
    config = TrainingConfig(
        solver="sgd",
        learning_rate=float(learning_rate),
        momentum=float(momentum),
        nesterov=False,
        batch_size=batch_size,
        tol=float(tol),
        n_iter_no_change=int(n_iter_no_change),
        verbose=bool(verbose),
        n_threads=n_threads,
        warn_on_max_iter=False,
    )
    group = ParameterGroup(
        [module.U, module.V],
        name="first layer",
        # alpha_j = 1/m_k shrinks each neuron's gradient by 1/m_k: scale the
        # step back so that a good learning_rate does not depend on m; divide
        # by the input curvature (_bilinear_curvature) so that it does not
        # depend on the data either.
        learning_rate_scale=float(np.mean(counts)) / float(curvature),
        l2=float(beta),
    )
    trainer = Trainer(
        module,
        _torch_loss(loss, n_outputs),
        [group],
        config,
        device=resolve_device(device),
        dtype=torch.float32,
        generator=generator,
        target_dtype=torch.float32 if n_outputs == 1 else torch.int64,
    )
    return trainer, neuron_class, output_weights


def _quantize_bilinear(U, V, output_weights, neuron_class):
    """Post-training quantization: signs, and the least-squares scale per output.

    For the neurons of output ``k``, ``c_k = <Zhat, Z> / <Zhat, Zhat>`` with
    ``Zhat = sum_j sign(u_j) sign(v_j)^T`` and ``Z = sum_j alpha_jk u_j v_j^T``
    minimises ``||c Zhat - Z||_F``.

    Returns
    -------
    U_sign, V_sign : int8 arrays
    alpha : ndarray, the quantized second layer
    scale : ndarray of shape (n_outputs,)
    """
    U_sign = np.where(U >= 0, 1, -1).astype(np.int8)
    V_sign = np.where(V >= 0, 1, -1).astype(np.int8)
    n_outputs = output_weights.shape[1]
    scale = np.zeros(n_outputs)
    alpha = np.zeros_like(output_weights)
    for k in range(n_outputs):
        rows = neuron_class == k
        real = (U[rows] * output_weights[rows, k][:, None]).T @ V[rows]
        signs = U_sign[rows].T.astype(np.float64) @ V_sign[rows].astype(np.float64)
        scale[k] = np.sum(signs * real) / max(np.sum(signs * signs), 1e-300)
        alpha[rows, k] = scale[k]
    return U_sign, V_sign, alpha, scale


class BackpropQuantizedClassifier(BaseQuadraticClassifier):
    """Paper 002's baseline: a bilinear network trained by SGD, then sign-quantized.

    The network is the one of :class:`SDPQuantizedClassifier`,
    ``f(x) = sum_j alpha_j (z^T u_j)(z^T v_j)`` with ``z = [x, 1]``, but
    trained as the paper's "backpropagation + post-training quantization":

    1. ``u_j, v_j`` real, the second layer fixed to ``alpha_j = 1 / m``
       (``1 / m_k`` on the neuron's class for ``K > 2`` classes), trained by
       SGD with momentum on the loss plus an L2 penalty ``beta`` (the shared
       training engine, :mod:`skquad._engine`);
    2. quantization: ``u_j <- sign(u_j)``, ``v_j <- sign(v_j)`` and one scale
       per class, ``c = <Zhat, Z> / <Zhat, Zhat>``, the least-squares
       minimiser of ``||c Zhat - Z||_F`` with ``Zhat = sum_j sign(u_j) sign(v_j)^T``
       and ``Z = sum_j u_j v_j^T / m``. (The paper prints
       ``<Zhat, Z> / <Z, Z>``, which is not that minimiser.)

    ``predict`` uses the quantized network;
    :meth:`float_decision_function` gives the trained real-weight network.

    Parameters
    ----------
    n_neurons : int, default=1000
        Hidden neurons ``m`` (split evenly over the classes when K > 2).
    loss : {"squared", "hinge", "logistic"}, default="squared"
        As in :class:`SDPQuantizedClassifier`.
    beta : float, default=1e-4
        L2 penalty ``0.5 * beta * (||U||^2 + ||V||^2)`` on the real first
        layer during training, scaled like MLPClassifier's ``alpha``
        (the second layer is fixed, so the SDP's ``l1`` penalty on it is a
        constant here; the paper tunes ``beta`` separately for this baseline).
    fit_intercept : bool, default=True
        Append a constant input 1 (as in :class:`SDPQuantizedClassifier`).
    standardize : bool, default=True
        Standardize the features inside the model (as in
        :class:`SDPQuantizedClassifier`).
    learning_rate : float, default=0.1
        SGD step size relative to the data's curvature, so that one default
        trains stably from 2 to 26 classes and on any standardized data. The
        step applied to the first layer is
        ``learning_rate * m_k / input_curvature_``: the factor ``m_k`` undoes
        the ``1 / m_k`` that the fixed ``alpha_j`` puts on each neuron's
        gradient (mean-field scaling, so that a good value does not depend on
        ``n_neurons``), and ``input_curvature_`` is the largest curvature of
        the fresh network's outputs per unit step: the larger of the top
        eigenvalue of the kernel ``[(z_i^T z_j)^2 / p]`` and the biggest
        single-sample term ``max_i ||z_i||^4 / (p * batch_size)``. A quadratic
        network's curvature grows with ``||z||^4``, so rare large inputs
        (sparse pixels, skewed features) would make any fixed step diverge.
    momentum : float, default=0.9
    batch_size : int, default=None
        None means ``min(200, n_samples)``.
    max_iter : int, default=200
        Epochs.
    tol : float, default=1e-4
    n_iter_no_change : int, default=10
        Training stops when the loss has not improved by ``tol`` for this many
        epochs.
    class_weight : dict, "balanced" or None, default=None
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where torch trains ("auto": CUDA when available). Weights are stored as
        numpy arrays.
    n_threads : "auto" or int, default="auto"
        CPU threads for training: "auto" uses one thread for small steps and
        torch's thread count for large ones; pass 1 on a machine busy with
        other work (competing threads can slow training many times over).
    verbose : bool, default=False
    random_state : int, RandomState instance or None, default=None
        Seeds the initialization and the batch order.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    feature_mean_, feature_scale_ : ndarray of shape (n_features_in_,) or None
        The standardization (None when ``standardize=False``).
    input_curvature_ : float
        The curvature that divides the step (see ``learning_rate``), computed
        on the training data of ``fit`` or the first ``partial_fit`` call.
    U_, V_ : ndarray of shape (n_neurons, n_lifted_features_), int8
        Quantized first layer, signs of the trained weights.
    alpha_ : ndarray of shape (n_neurons, n_scores)
        Quantized second layer: the scale ``c_k`` on each neuron's class.
    U_float_, V_float_ : ndarray of shape (n_neurons, n_lifted_features_)
        The trained real first layer.
    float_alpha_ : ndarray of shape (n_neurons, n_scores)
        The fixed second layer used in training (``1 / m_k``).
    scale_ : ndarray of shape (n_scores,)
        The fitted quantization scales ``c_k``.
    objective_ : float
        Training objective of the quantized network with the SDP estimator's
        definition, ``loss + beta * p * sum_j ||alpha_j||_1`` (comparable
        with :attr:`SDPQuantizedClassifier.lower_bound_`).
    loss_curve_ : list of float
        Training loss per epoch (real network, with its penalty).
    n_iter_ : int
    n_lifted_features_ : int
    training_time_ : float
        Seconds spent training (cumulative over partial_fit calls).

    See Also
    --------
    SDPQuantizedClassifier : convex training of the same binary network.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skquad import BackpropQuantizedClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_pipeline(
    ...     StandardScaler(),
    ...     BackpropQuantizedClassifier(n_neurons=100, max_iter=20, random_state=0),
    ... )
    >>> clf = clf.fit(X, y)
    >>> clf[-1].U_.shape
    (100, 31)
    >>> bool(clf.score(X, y) > 0.8)
    True
    """

    _parameter_constraints = {
        "n_neurons": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions(set(LOSSES))],
        "beta": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "standardize": ["boolean"],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "device": [StrOptions({"auto", "cpu", "cuda"}), str],
        "n_threads": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_neurons=1000,
        *,
        loss="squared",
        beta=1e-4,
        fit_intercept=True,
        standardize=True,
        learning_rate=0.1,
        momentum=0.9,
        batch_size=None,
        max_iter=200,
        tol=1e-4,
        n_iter_no_change=10,
        class_weight=None,
        device="auto",
        n_threads="auto",
        verbose=False,
        random_state=None,
    ):
        self.n_neurons = n_neurons
        self.loss = loss
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.class_weight = class_weight
        self.device = device
        self.n_threads = n_threads
        self.verbose = verbose
        self.random_state = random_state

    def _lifting(self):
        return InputLifting(
            fit_intercept=bool(self.fit_intercept),
            center=self.feature_mean_,
            scale=self.feature_scale_,
        )

    def _make_trainer(self, X, sample_weight, resume=False):
        """A network and its trainer: fresh, or (``resume``) from ``U_float_``.

        Resuming serves ``partial_fit`` after unpickling (the trainer is not
        pickled); the optimizer's momentum starts again from zero.
        """
        if not resume:
            self.feature_mean_, self.feature_scale_ = (
                _standardization(X, sample_weight) if self.standardize else (None, None)
            )
        p = self._lifting().n_lifted(X.shape[1])
        if not resume:
            self.input_curvature_ = _bilinear_curvature(
                self._lifting().features(X), sample_weight, self.batch_size
            )
        trainer, neuron_class, output_weights = _make_bilinear_trainer(
            p,
            self._n_scores,
            n_neurons=self.n_neurons,
            loss=self.loss,
            beta=self.beta,
            learning_rate=self.learning_rate,
            momentum=self.momentum,
            batch_size=self.batch_size,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            verbose=self.verbose,
            device=self.device,
            random_state=self.random_state,
            n_threads=self.n_threads,
            initial=(self.U_float_, self.V_float_) if resume else None,
            curvature=self.input_curvature_,
        )
        self.neuron_class_ = neuron_class
        self.float_alpha_ = output_weights
        self.n_lifted_features_ = p
        if not resume:
            self.loss_curve_ = []
            self.n_iter_ = 0
            self.training_time_ = 0.0
        self._history_offset = (list(self.loss_curve_), self.n_iter_)
        self._trainer = trainer
        return trainer

    def _train(self, X, y_encoded, sample_weight, *, epochs=None):
        Z = self._lifting().features(X)
        targets = _class_targets(y_encoded, self._n_scores)
        started = time.perf_counter()
        if epochs is None:
            history = self._trainer.fit(Z, targets, sample_weight, max_iter=int(self.max_iter))
        else:
            history = self._trainer.partial_fit(Z, targets, sample_weight)
        self.training_time_ += time.perf_counter() - started
        previous_curve, previous_iterations = self._history_offset
        self.loss_curve_ = previous_curve + list(history.loss_curve)
        self.n_iter_ = previous_iterations + history.n_iter
        self._quantize(X, targets, sample_weight)
        return self

    def _quantize(self, X, targets, sample_weight):
        module = self._trainer.module
        self.U_float_ = to_numpy(module.U).astype(np.float64)
        self.V_float_ = to_numpy(module.V).astype(np.float64)
        self.U_, self.V_, self.alpha_, self.scale_ = _quantize_bilinear(
            self.U_float_, self.V_float_, self.float_alpha_, self.neuron_class_
        )
        scores = bilinear_network_scores(self._lifting(), X, self.U_, self.V_, self.alpha_)
        self.objective_ = network_objective(
            scores, targets, sample_weight, self.loss, self.alpha_, float(self.beta), self.n_lifted_features_
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the real-weight network with SGD, then quantize it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : BackpropQuantizedClassifier
        """
        X, y_encoded, sample_weight = self._validate_training_data(X, y, sample_weight)
        self._make_trainer(X, sample_weight)
        return self._train(X, y_encoded, sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One SGD epoch over ``(X, y)``, then quantize (keeps the optimizer state).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All classes; required on the first call.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : BackpropQuantizedClassifier
        """
        first_call = not hasattr(self, "U_float_")
        if first_call and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        X, y_encoded, sample_weight = self._validate_training_data(
            X, y, sample_weight, reset=first_call, classes=classes if first_call else None
        )
        if first_call or not hasattr(self, "_trainer"):
            self._make_trainer(X, sample_weight, resume=not first_call)
        return self._train(X, y_encoded, sample_weight, epochs=1)

    def _raw_scores(self, X):
        return bilinear_network_scores(self._lifting(), X, self.U_, self.V_, self.alpha_)

    def float_decision_function(self, X):
        """Scores of the trained real-weight (unquantized) network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        X = self._validate_predict_data(X)
        scores = bilinear_network_scores(
            self._lifting(), X, self.U_float_, self.V_float_, self.float_alpha_
        )
        return scores.ravel() if scores.shape[1] == 1 else scores

    def float_predict(self, X):
        """Class labels predicted by the real-weight network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return labels_from_scores(self.classes_, self.float_decision_function(X))

    def __getstate__(self):
        # The torch trainer is a training-time object; the model is in numpy.
        state = self.__dict__.copy()
        state.pop("_trainer", None)
        return state
