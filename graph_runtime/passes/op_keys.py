"""Small predicates and keys that several graph passes share.

`same_items(a, b)`: the same objects in the same order.  `has_subgraphs(op)`: the op carries function
bodies (control flow) or lowers to some.  `freeze_attr(v)` / `freeze_attrs(attrs)`: hashable keys for
attr values, equal only when the values are interchangeable (arrays by dtype, shape and bytes, floats by
their hex form, anything unknown by identity), for CSE and pattern matching.
Imports numpy, `eager.shape` and `operation`.
"""
from __future__ import annotations

import numpy as np

from eager.shape import TensorShape

from ..operation import Operation, attr_subgraphs


def same_items(a, b) -> bool:
    """True when sequences `a` and `b` hold the same objects (identity) in the same order."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def has_subgraphs(op: Operation) -> bool:
    return bool(op._opdef.extra.get("lower")) or bool(attr_subgraphs(op._attrs))


def freeze_attr(v):
    """A hashable key for an attr value: equal keys mean interchangeable values (conservative)."""
    if isinstance(v, np.ndarray) or isinstance(v, np.generic):
        a = np.asarray(v)
        if a.dtype == object:
            try:
                return ("obj", a.shape, tuple(repr(x) for x in a.reshape(-1).tolist()))
            except Exception:  # pragma: no cover
                return ("id", id(v))
        return ("nd", a.dtype.str, a.shape, a.tobytes())
    if isinstance(v, bool) or v is None or isinstance(v, (int, str, bytes)):
        return (type(v).__name__, v)
    if isinstance(v, float):
        return ("f", v.hex())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(freeze_attr(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, freeze_attr(v[k])) for k in sorted(v))
    if isinstance(v, TensorShape):
        return ("shape", v.dims)
    if type(v).__name__ == "DType":
        return ("dtype", v.name)
    return ("id", id(v))   # anything else (graphs, variables, callables): equal only to itself


def freeze_attrs(attrs: dict):
    return tuple((k, freeze_attr(attrs[k])) for k in sorted(attrs))
