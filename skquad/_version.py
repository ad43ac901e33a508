"""The version of skquad: the one place it is written.

``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``) and ``skquad.__version__``
imports it, so a release changes this line only.
"""

__version__ = "0.2.0.dev0"
