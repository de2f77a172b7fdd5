"""Cheap tensor predicates for the runtime operators.

Python scalars and containers are rejected before asking `eager`, which keeps
the plain-Python path of converted code fast.  Imports `eager` only.
"""
from __future__ import annotations

import eager as ek

_PLAIN = (bool, int, float, complex, str, bytes, list, tuple, dict, set, type(None), range)


def is_symbolic(x) -> bool:
    if isinstance(x, _PLAIN):
        return False
    return bool(ek.is_symbolic(x))


def is_tensor(x) -> bool:
    if isinstance(x, _PLAIN):
        return False
    return bool(ek.is_tensor(x))


def is_tensor_array(x) -> bool:
    if isinstance(x, _PLAIN) and not isinstance(x, tuple):
        return False
    return isinstance(x, ek.TensorArray)


def describe(x) -> str:
    """'dtype int32' / 'a Python list' style description for messages."""
    if is_tensor(x):
        return f"dtype {x.dtype.name}"
    return f"a {type(x).__name__}"
