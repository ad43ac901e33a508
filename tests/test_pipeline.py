"""skquad._foundation._pipeline: the estimator at the end of a Pipeline, and the steps before it."""

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer, make_column_transformer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures, StandardScaler

from skquad import QuadraticLogisticRegression
from skquad._foundation._pipeline import split_pipeline


def _data():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.normal(size=60), rng.normal(size=60), rng.randint(0, 3, size=60)])
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 > 1.0).astype(int)
    return X, y


def test_a_bare_estimator_has_no_preprocessing():
    estimator = QuadraticLogisticRegression()
    preprocessing, final = split_pipeline(estimator)
    assert preprocessing is None
    assert final is estimator


def test_a_one_step_pipeline_has_no_preprocessing():
    estimator = QuadraticLogisticRegression()
    preprocessing, final = split_pipeline(Pipeline([("model", estimator)]))
    assert preprocessing is None
    assert final is estimator


def test_the_steps_before_the_estimator_transform_as_the_pipeline_does():
    X, y = _data()
    pipeline = make_pipeline(StandardScaler(), PolynomialFeatures(1), QuadraticLogisticRegression())
    pipeline.fit(X, y)
    preprocessing, final = split_pipeline(pipeline)
    assert final is pipeline.steps[-1][1]
    assert isinstance(preprocessing, Pipeline)
    assert [name for name, _ in preprocessing.steps] == [name for name, _ in pipeline.steps[:-1]]
    # the final estimator on the preprocessed rows is the whole pipeline (same arithmetic)
    np.testing.assert_array_equal(
        final.decision_function(preprocessing.transform(X)), pipeline.decision_function(X)
    )


def test_a_column_transformer_before_the_estimator():
    X, y = _data()
    columns = make_column_transformer(
        (StandardScaler(), [0, 1]), (OneHotEncoder(sparse_output=False), [2])
    )
    pipeline = make_pipeline(columns, QuadraticLogisticRegression()).fit(X, y)
    preprocessing, final = split_pipeline(pipeline)
    assert isinstance(preprocessing[0], ColumnTransformer)
    Z = preprocessing.transform(X)
    assert Z.shape == (60, final.n_features_in_) == (60, 5)
    np.testing.assert_array_equal(final.predict_proba(Z), pipeline.predict_proba(X))
    # the names the final estimator sees come from the column transformer
    assert list(preprocessing.get_feature_names_out()) == [
        "standardscaler__x0", "standardscaler__x1",
        "onehotencoder__x2_0.0", "onehotencoder__x2_1.0", "onehotencoder__x2_2.0",
    ]


def test_a_column_transformer_alone_is_not_split():
    # Only a Pipeline is taken apart: anything else is returned as the "estimator",
    # for the caller's own fitted check to refuse.
    columns = ColumnTransformer([("scale", StandardScaler(), [0])])
    assert split_pipeline(columns) == (None, columns)


@pytest.mark.parametrize("split", ["inspection", "export"])
def test_inspection_and_export_find_the_same_estimator(split):
    # both rooms read the final estimator through this function, not their own copy
    X, y = _data()
    pipeline = make_pipeline(StandardScaler(), QuadraticLogisticRegression()).fit(X, y)
    if split == "inspection":
        from skquad.inspection._pipeline import transform_to_estimator_input

        np.testing.assert_allclose(
            transform_to_estimator_input(pipeline, X), pipeline[0].transform(X), rtol=0, atol=0
        )
    else:
        import torch

        from skquad.export import to_torch

        module = to_torch(pipeline)
        scores = module(torch.as_tensor(X)).detach().numpy()
        # float64 end to end: the two paths differ by rounding only (a few ulps of |score|)
        np.testing.assert_allclose(scores, pipeline.decision_function(X), rtol=1e-10, atol=1e-10)
