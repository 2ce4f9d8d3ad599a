"""The version of pyctrl (and of the ``pyctrl-k8s`` distribution): the one place it is set.

pyproject.toml reads it (``[tool.setuptools.dynamic]``) and :mod:`pyctrl` re-exports it as
``pyctrl.__version__``.
"""

__version__ = "0.2.0"
