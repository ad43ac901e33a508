"""Look inside fitted quadratic models.

Neurons and quadrics
--------------------
quadratic_neurons
    Every quadratic neuron of a fitted estimator as ``(Q, w, b)``.
quadric_analysis
    Eigenvalues, inertia, type of the level surface, center and principal
    axes of every neuron (:class:`QuadricAnalysis`); :func:`analyze_quadric`
    does it for given ``(Q, w, b)``.

Interactions
------------
interaction_table
    Ranked pairwise interactions, squares and linear terms, with importances
    on given data.

Local explanations
------------------
local_contributions
    Exact per-sample contributions of each main effect and each pair to the
    score of a model that is a quadratic form of its input
    (:class:`LocalContributions`).
shap_values
    Exact interventional SHAP values of such a model against a background
    set, in closed form (:class:`ShapValues`).

Displays
--------
InteractionDisplay
    Heat map or top-k bar chart of the terms.
QuadricSliceDisplay
    A neuron's score and decision boundary on a 2-D slice.
LocalExplanationDisplay
    Waterfall or bar chart of one sample's largest contributions.

Sizes
-----
model_size
    Trainable parameters and FLOPs per predicted sample (:class:`ModelSize`),
    for skquad estimators, MLPClassifier, linear models and pipelines.
"""

from ._analysis import quadric_analysis, to_raw_units
from ._contributions import LocalContributions, local_contributions
from ._displays import InteractionDisplay, QuadricSliceDisplay
from ._interactions import interaction_table
from ._local_display import LocalExplanationDisplay
from ._neurons import QuadraticNeuron, quadratic_neurons
from ._quadric import QuadricAnalysis, analyze_quadric
from ._shap import ShapValues, shap_values
from ._sizes import ModelSize, model_size

__all__ = [
    "InteractionDisplay",
    "LocalContributions",
    "LocalExplanationDisplay",
    "ModelSize",
    "QuadraticNeuron",
    "QuadricAnalysis",
    "QuadricSliceDisplay",
    "ShapValues",
    "analyze_quadric",
    "interaction_table",
    "local_contributions",
    "model_size",
    "quadratic_neurons",
    "quadric_analysis",
    "shap_values",
    "to_raw_units",
]
