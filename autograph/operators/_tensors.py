"""Lazy access to the `eager` package and cheap tensor predicates.

Python scalars and containers are rejected without touching `eager`, which
keeps the plain-Python path fast and lets autograph import without eager.
"""
from __future__ import annotations

import importlib

_PLAIN = (bool, int, float, complex, str, bytes, list, tuple, dict, set, type(None), range)


def ek():
    """The `eager` module (imported on first use)."""
    return importlib.import_module("eager")


def is_symbolic(x) -> bool:
    if isinstance(x, _PLAIN):
        return False
    try:
        return bool(ek().is_symbolic(x))
    except ImportError:
        return False


def is_tensor(x) -> bool:
    if isinstance(x, _PLAIN):
        return False
    try:
        return bool(ek().is_tensor(x))
    except ImportError:
        return False


def is_tensor_array(x) -> bool:
    if isinstance(x, _PLAIN) and not isinstance(x, tuple):
        return False
    try:
        return isinstance(x, ek().TensorArray)
    except (ImportError, AttributeError):
        return False


def describe(x) -> str:
    """'dtype int32' / 'a Python list' style description for messages."""
    if is_tensor(x):
        return f"dtype {x.dtype.name}"
    return f"a {type(x).__name__}"
