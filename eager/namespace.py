"""Public namespaces list only their public names.

`ek.nn`, `ek.random`, ... are modules that also hold op definitions and
imports (`RELU`, `np`, `execute`).  `public_namespace(module_name)` gives such
a module a `__dir__` (PEP 562) returning its `__all__`, so `dir(ek.nn)` and
tab completion show what a user may call, as TensorFlow's `tf.nn` does; the
internals stay importable for the framework.  Imports nothing from the project.
"""
from __future__ import annotations

import sys


def public_namespace(module_name: str) -> None:
    """Make `dir()` of the module `module_name` list exactly its `__all__`."""
    module = sys.modules[module_name]
    public = sorted(module.__all__)
    module.__dir__ = lambda: list(public)
