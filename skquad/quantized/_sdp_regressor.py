"""SDPQuantizedRegressor: Bartan & Pilanci's squared-loss SDP as a regressor."""

import numpy as np

from .._foundation._atomic import reads_fitted_state
from .._foundation._docstrings import shared_docstring
from .._base import BaseQuadraticRegressor
from .._foundation._held_out import HeldOutErrors
from ._sdp import SDPQuantizedClassifier, _SDPQuantizedNetwork

__all__ = ["SDPQuantizedRegressor"]


@shared_docstring
class SDPQuantizedRegressor(_SDPQuantizedNetwork, BaseQuadraticRegressor):
    """Binary-weight bilinear network for regression, trained by convex SDP relaxation.

    The network of :class:`SDPQuantizedClassifier` with an identity output,
    one sum per output column of ``y``, beside a linear term (``linear_term``)::

        f_k(x) = b_k + x^T w_k + sum_j alpha_jk (z^T u_j) (z^T v_j),
        z = [x, 1],  u_j, v_j in {-1, +1}^p,

    trained on Bartan & Pilanci's squared loss (the setting their SDP is
    first stated for, with scalar and vector outputs): the convex relaxation
    of ``min sum_i s_i ||f(x_i) - y_i||^2 + beta * p * sum_j ||alpha_j||_1``
    is solved and certified, ``n_neurons`` sign vectors are drawn from it
    (Algorithm 1) and the second layer is refitted. The relaxation's blocks
    are independent for the squared loss and are solved one at a time
    (``solver`` in :class:`SDPQuantizedClassifier` gives the rules): small
    problems (``q = p(p+1)/2 <= 300`` with ``p`` the lifted width, or
    ``q <= 1000`` with ``n >= 3 q`` rows) exactly in their compact cone form
    (``solver_ == "compact"``); larger ones on up to 1,000 rows, or more
    where its Newton steps are the cheaper, by a barrier method on the
    block's exact dual (``"squared_dual"``), else by the numpy factor solver
    (``"native_numpy"``); on a GPU, or with a polynomial ``activation``
    past those sizes, by the torch factor solver (``"native"``).

    The intercept is handled as scikit-learn's linear models handle it
    (``fit_intercept=True``): the targets are centred at their weighted mean
    ``ybar`` before the relaxation, and the refit of the second layer fits
    an unpenalised intercept, ``intercept_ = ybar + b``. So an offset in
    ``y`` changes ``intercept_`` only.

    With ``linear_term=True`` the linear term ``x^T w_k`` (and its constant)
    is fitted first, by ridge whose penalty generalized cross-validation
    chooses, and the relaxation is solved on its residuals, as on the
    centred targets below: the offset ``ybar`` is then that linear model.

    ``lower_bound_`` is a certificate for the networks whose offset is
    ``ybar`` (the targets' weighted mean, or the fitted linear term): no
    ``f_k = ybar_k + sum_j alpha_jk (z^T u_j)(z^T v_j)`` with ±1
    first-layer weights, of any width, reaches a training objective below
    it (the relaxation is solved on the targets less the offset).
    ``relaxed_objective_`` and ``certified_gap_`` are of that problem. The
    fitted network adds ``b``: with the network's mean residual ``r`` (the
    weighted mean of ``f - y`` at ``b = 0``), the squared loss at ``b`` is
    the loss at 0 plus ``2 b r + b^2``, smallest at ``b = -r``, where it is
    the loss at 0 less ``b^2``. The network at ``b = 0`` is in the certified
    class, hence ``objective_ >= lower_bound_ - sum_k (intercept_[k] -
    ybar_k)^2``: the refit's intercept can go below the bound by the square
    of its own size only (``b`` is minus the mean of the neurons' outputs,
    small where the relaxed model is centred).

    Any scale of ``y`` is solved as accurately as ``y`` of order 1: the
    relaxation and the refit are solved for ``y / c`` and ``beta / c`` (``c``
    the power of two nearest the targets' root mean square), which the
    squared loss makes exactly equivalent, and every fitted attribute is in
    ``y``'s units. ``beta`` is in those units too: fitting ``c * y`` with
    ``c * beta`` gives ``c`` times the predictions, ``c^2`` times the
    objectives and bounds and the same relative gap. With a fixed ``beta``,
    a larger ``y`` is a relatively weaker penalty
    (:class:`SDPQuantizedRegressorCV` chooses ``beta`` for the data).

    Parameters
    ----------
    n_neurons : int, default=1000
        Hidden neurons of the sampled network (split over the outputs).
    beta : float, "auto" or "rule", default="auto"
        Penalty on the second layer's l1 norm, times ``p``, in the units of
        ``y`` (scaling ``y`` by ``c`` asks for ``c * beta`` to fit the same
        model). "auto" is a fraction of ``beta_max_``, the penalty at which
        the zero network is optimal on the data (the residuals of the linear
        term, with ``linear_term``; in ``y``'s units, so the fit is the same
        model for every scale and offset of ``y``). With at least 20 rows,
        one of the fractions 1, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3 and 1e-4
        chosen on held-out rows: fifths of the rows are held out in turn, as
        many as it takes to score 100 rows (all five below 125 rows), and the
        largest fraction whose mean held-out squared error is within one
        standard error of the smallest is taken (Breiman's rule: on few rows
        smaller differences are noise, and the more penalised network
        extrapolates less). At 1 the network is zero and the model is the
        linear term alone; with ``linear_term=False`` 1 is not tried (the
        model would be a constant) and, since the strongest penalties leave
        a near-constant network, no safer a model, the rule's own ``beta``
        (below) is a candidate too, kept unless another's held-out error is
        lower by more than one standard error. The fractions go down to 1e-4
        where a solve costs the same at every ``beta`` (the compact route,
        ``p (p + 1) / 2 <= 300``), else to the classifier's rule
        (:func:`skquad.convex.default_beta`: ``(p / n)^2``, clipped), whose
        solve the fit makes anyway. Each fifth costs up to eight solves on
        80 % of the rows. The noise in ``y`` sets how much of ``beta_max``
        it needs. Beyond 100 lifted coordinates, or ``n p^2`` times the
        outputs above 1e8, where solves are costly, and on Dask, the rule
        without a search; "rule" is that rule always (one solve). The fifths
        are chosen by a hash of the rows' values, so that row order and
        duplicates do not move them. The value used is ``beta_``.
    fit_intercept : bool, default=True
        Append the constant input (every neuron's ±1 biases, as in the
        classifier) and fit an unpenalised output intercept (the targets
        centred, see above). False: neither; ``intercept_`` is 0.
    [shared: linear_term]
    standardize, weight_levels, activation, solver, solver_options, tol, max_iter, verbose, device, covariance :
        As in :class:`SDPQuantizedClassifier` (``loss`` is always
        ``"squared"`` here).
    refit_output_layer : bool, default=True
        After sampling the first layer, refit the second layer ``alpha`` by
        the network's own objective, a lasso on the neurons' outputs, from
        Algorithm 1's shared weights (see ``skquad.convex.second_layer``):
        the objective never goes up. False keeps the paper's shared weights.
    warm_start, random_state :
        As in :class:`SDPQuantizedClassifier`.
    [shared: clip_inputs:BackpropQuantizedClassifier clip_outputs]

    Attributes
    ----------
    beta_ : float
        The ``beta`` of the fit (``beta``, or the value "auto" chose).
    beta_max_ : float
        With ``beta="auto"`` or ``"rule"`` only: the smallest ``beta`` at
        which the zero network solves the relaxation, on this training data.
    U_, V_ : ndarray of shape (n_neurons_, n_lifted_features_)
        The ±1 first-layer weights on the lifted input.
    alpha_ : ndarray of shape (n_neurons_, n_outputs_)
        Second-layer weights.
    intercept_ : ndarray of shape (n_outputs_,)
        The output intercept, ``ybar + b`` (the targets' weighted mean, or
        the linear term's constant, and the refit's unpenalised ``b``);
        zeros with ``fit_intercept=False`` and no linear term.
    [shared-tight: linear_coef_ linear_alpha_]
    lower_bound_ : float
        Certified lower bound on the training objective of every binary
        network of this shape whose offset is ``ybar`` (the targets' weighted
        mean, or the linear term; see above for the refit's free intercept).
    relaxed_objective_ : float
        The relaxed solution's objective (at least ``lower_bound_``).
    certified_gap_ : float
        ``relaxed_objective_ - lower_bound_``.
    objective_ : float
        The training objective of the fitted (sampled, refitted) network.
    refit_loss_ : str or None
        "squared" after the refit, None without it (as in the classifier).
    rho_, Q_, Z_, covariance_ : ndarray
        The relaxed solution, per output, as in the classifier.
    solver_, solver_path_, solver_status_ : str, tuple of str, str
        The solver used, every stage of the solve and how it ended, as in the classifier (``"optimal"``,
        ``"max_iter"``, ``"time_limit"``, ``"stopped"`` or ``"stalled"`` for the
        native solver).
    solve_time_ : float
    n_iter_ : int
    device_ : str
        The device the SDP was solved on, as in the classifier.
    n_neurons_ : int
    [shared-tight: n_outputs_ n_features_in_ feature_names_in_ data_min_:SDPQuantizedClassifier
        data_max_]

    [shared-tight: target_min_ target_max_]

    See Also
    --------
    SDPQuantizedClassifier : the same network for classification.
    QuadraticRegression : one unconstrained quadratic neuron per output.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import SDPQuantizedRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.standard_normal((200, 3))
    >>> y = X[:, 0] * X[:, 1] + 0.1 * rng.standard_normal(200)
    >>> model = SDPQuantizedRegressor(n_neurons=200, random_state=0).fit(X, y)
    >>> bool(model.lower_bound_ <= model.relaxed_objective_ <= model.objective_)
    True
    >>> model.score(X, y) > 0.95
    True
    """

    _parameter_constraints = {
        name: constraint
        for name, constraint in SDPQuantizedClassifier._parameter_constraints.items()
        if name not in ("class_weight", "loss")
    } | {"clip_outputs": ["boolean"], "linear_term": ["boolean"], "refit_output_layer": ["boolean"]}

    def __init__(
        self,
        n_neurons=1000,
        *,
        beta="auto",
        fit_intercept=True,
        linear_term=True,
        standardize=True,
        weight_levels=1,
        activation="bilinear",
        solver=None,
        solver_options=None,
        tol=1e-4,
        max_iter=3000,
        verbose=0,
        device="auto",
        covariance="krivine",
        refit_output_layer=True,
        warm_start=False,
        random_state=None,
        clip_inputs=True,
        clip_outputs=True,
    ):
        self.n_neurons = n_neurons
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.linear_term = linear_term
        self.standardize = standardize
        self.weight_levels = weight_levels
        self.activation = activation
        self.solver = solver
        self.solver_options = solver_options
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose
        self.device = device
        self.covariance = covariance
        self.refit_output_layer = refit_output_layer
        self.warm_start = warm_start
        self.random_state = random_state
        self.clip_inputs = clip_inputs
        self.clip_outputs = clip_outputs

    # The squared loss is the only one of a regressor (what the shared network reads).
    loss = "squared"

    def _sdp_n_outputs(self):
        return self.n_outputs_

    def _centres_targets(self):
        """``fit_intercept``: an unpenalised intercept, as scikit-learn's linear models."""
        return bool(self.fit_intercept)

    def _held_out_targets(self, y_validated):
        """The targets ``beta="auto"``'s candidates fit, in the shape the user gave."""
        return y_validated[:, 0] if self._fitted_y_ndim == 1 else y_validated

    def _held_out_params(self):
        """``beta="auto"``'s candidates: this model's parameters."""
        return {}

    def _held_out_scorer(self, y, sample_weight):
        """``beta="auto"``'s measure: the held-out squared error of the predictions."""
        return HeldOutErrors(y, sample_weight)


    def _sdp_targets(self, y_train, n_outputs):
        """Real targets: a vector for one output, the (n, k) matrix otherwise."""
        y_train = np.asarray(y_train, dtype=np.float64)
        return y_train[:, 0] if n_outputs == 1 else y_train

    def _target_signature(self):
        return ("regression", int(self.n_outputs_))

    @reads_fitted_state
    def relaxed_predict(self, X):
        """Predictions of the relaxed (unquantized) SDP model, ``2 <L(x), Z_k>``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The shape of the fitted ``y``.
        """
        return self._format_predictions(self._relaxed_scores(X))
