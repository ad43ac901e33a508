"""Write the small intersphinx inventories the documentation links through, offline.

The docs build runs without network access, so conf.py points intersphinx at these
files instead of the projects' online ``objects.inv``; the links they produce go to
the projects' online documentation. Each inventory lists only the names skquad's pages
and docstrings reference. Add a name here and run

    python doc/_intersphinx/make_inventories.py

when a page references a new Python, scikit-learn, NumPy, pandas, torch, Dask, joblib,
skops or skl2onnx object.
"""

import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

# project: (name, version, {object: (role, page relative to the project's base URL)})
SKLEARN = "modules/generated/{}.html#{}"
TORCH = "generated/{}.html#{}"
INVENTORIES = {
    "sklearn": ("scikit-learn", "stable", {
        **{name: ("class", SKLEARN) for name in [
            "sklearn.pipeline.Pipeline",
            "sklearn.model_selection.GridSearchCV",
            "sklearn.model_selection.RandomizedSearchCV",
            "sklearn.model_selection.StratifiedKFold",
            "sklearn.model_selection.StratifiedShuffleSplit",
            "sklearn.neural_network.MLPClassifier",
            "sklearn.linear_model.LogisticRegression",
            "sklearn.linear_model.RidgeClassifier",
            "sklearn.linear_model.RidgeClassifierCV",
            "sklearn.linear_model.LogisticRegressionCV",
            "sklearn.linear_model.Ridge",
            "sklearn.linear_model.RidgeCV",
            "sklearn.linear_model.Lasso",
            "sklearn.linear_model.LassoCV",
            "sklearn.linear_model.ElasticNet",
            "sklearn.linear_model.ElasticNetCV",
            "sklearn.model_selection.KFold",
            "sklearn.neural_network.MLPRegressor",
            "sklearn.multioutput.MultiOutputRegressor",
            "sklearn.compose.TransformedTargetRegressor",
            "sklearn.preprocessing.QuantileTransformer",
            "sklearn.preprocessing.MultiLabelBinarizer",
            "sklearn.utils.metadata_routing.MetadataRequest",
            "sklearn.preprocessing.StandardScaler",
            "sklearn.preprocessing.PolynomialFeatures",
            "sklearn.preprocessing.OneHotEncoder",
            "sklearn.impute.SimpleImputer",
            "sklearn.compose.ColumnTransformer",
            "sklearn.svm.SVC",
            "sklearn.ensemble.HistGradientBoostingClassifier",
            "sklearn.ensemble.HistGradientBoostingRegressor",
            "sklearn.svm.SVR",
            "sklearn.kernel_ridge.KernelRidge",
            "sklearn.exceptions.ConvergenceWarning",
            "sklearn.utils.Bunch",
        ]},
        **{name: ("function", SKLEARN) for name in [
            "sklearn.model_selection.train_test_split",
            "sklearn.set_config",
            "sklearn.metrics.r2_score",
            "sklearn.base.clone",
            "sklearn.datasets.fetch_openml",
            "sklearn.utils.estimator_checks.check_estimator",
        ]},
    }),
    "numpy": ("NumPy", "stable", {
        "numpy.ndarray": ("class", "reference/generated/numpy.ndarray.html#numpy.ndarray"),
        "numpy.random.RandomState": (
            "class", "reference/random/legacy.html#numpy.random.RandomState"),
        "numpy.random.Generator": (
            "class", "reference/random/generator.html#numpy.random.Generator"),
        "numpy.random.SeedSequence": (
            "class", "reference/random/bit_generators/generated/numpy.random.SeedSequence.html#{}"),
    }),
    "pandas": ("pandas", "stable", {
        "pandas.DataFrame": ("class", "reference/api/pandas.DataFrame.html#pandas.DataFrame"),
        "pandas.Series": ("class", "reference/api/pandas.Series.html#pandas.Series"),
    }),
    "torch": ("PyTorch", "stable", {
        "torch.nn.Module": ("class", TORCH),
        "torch.nn.Linear": ("class", TORCH),
        "torch.nn.Sequential": ("class", TORCH),
        "torch.Generator": ("class", TORCH),
        "torch.Tensor": ("class", "tensors.html#torch.Tensor"),
        "torch.device": ("class", "tensor_attributes.html#torch.device"),
        "torch.autograd.Function": ("class", "autograd.html#torch.autograd.Function"),
        "torch.triu_indices": ("function", TORCH),
        "torch.autograd.gradcheck": (
            "function", "generated/torch.autograd.gradcheck.gradcheck.html#{}"),
    }),
    "python": ("Python", "3", {
        "copy.deepcopy": ("function", "library/copy.html#copy.deepcopy"),
        "pickle": ("module", "library/pickle.html#module-pickle"),
    }),
    "joblib": ("joblib", "stable", {
        "joblib.dump": ("function", "generated/joblib.dump.html#{}"),
    }),
    "skops": ("skops", "stable", {
        "skops.io.get_untrusted_types": ("function", "modules/classes.html#{}"),
    }),
    "distributed": ("Dask.distributed", "stable", {
        "distributed.Client": ("class", "api.html#distributed.Client"),
    }),
    "skl2onnx": ("sklearn-onnx", "stable", {
        "skl2onnx.to_onnx": ("function", "api_summary.html#skl2onnx.to_onnx"),
    }),
}


def write_inventory(path, project, version, objects):
    lines = []
    for name, (role, page) in sorted(objects.items()):
        uri = page.format(name, name) if page.count("{}") == 2 else page.format(name)
        if uri.endswith("#" + name):  # intersphinx's shorthand for "#" + the name itself
            uri = uri[: -len(name)] + "$"
        lines.append(f"{name} py:{role} 1 {uri} -")
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    path.write_bytes(header.encode() + zlib.compress(("\n".join(lines) + "\n").encode()))


if __name__ == "__main__":
    for key, (project, version, objects) in INVENTORIES.items():
        write_inventory(HERE / f"{key}.inv", project, version, objects)
        print(f"wrote {key}.inv ({len(objects)} objects)")
