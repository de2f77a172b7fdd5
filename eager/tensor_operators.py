"""Python operators on `Tensor` and `Variable`, each calling one public op.

Installed once, here, when `eager` is imported: `+ - * / // % ** @`, unary
`- abs`, comparisons (elementwise; `==`/`!=` too, so tensors are unhashable),
`& | ~` on bools, and `[]` (strided slicing, see `ops/indexing.py`).  Symbolic
tensors inherit them, so the same expression builds graph nodes.
"""
from __future__ import annotations

from .ops import linalg as _linalg
from .ops import division as _d
from .ops import math as _m
from .ops.indexing import getitem
from .tensor import Tensor
from .variables import Variable


def _r(fn):
    return lambda self, other: fn(other, self)


def _getitem(self, key):
    return getitem(self, key)


def _and(x, y):
    return _m.logical_and(x, y)


def _or(x, y):
    return _m.logical_or(x, y)


def _xor(x, y):
    return _m.logical_and(_m.logical_or(x, y), _m.logical_not(_m.logical_and(x, y)))


_OPERATORS = {
    "__add__": _m.add, "__radd__": _r(_m.add),
    "__sub__": _m.subtract, "__rsub__": _r(_m.subtract),
    "__mul__": _m.multiply, "__rmul__": _r(_m.multiply),
    "__truediv__": _m.divide, "__rtruediv__": _r(_m.divide),
    "__floordiv__": _d.floordiv, "__rfloordiv__": _r(_d.floordiv),
    "__mod__": _d.floormod, "__rmod__": _r(_d.floormod),
    "__pow__": _m.pow, "__rpow__": _r(_m.pow),
    "__matmul__": _linalg.matmul, "__rmatmul__": _r(_linalg.matmul),
    "__lt__": _m.less, "__le__": _m.less_equal, "__gt__": _m.greater, "__ge__": _m.greater_equal,
    "__eq__": _m.equal, "__ne__": _m.not_equal,
    "__and__": _and, "__rand__": _r(_and), "__or__": _or, "__ror__": _r(_or),
    "__xor__": _xor, "__rxor__": _r(_xor),
    "__neg__": lambda self: _m.negative(self),
    "__abs__": lambda self: _m.abs(self),
    "__invert__": lambda self: _m.logical_not(self),
    "__pos__": lambda self: self,
    "__getitem__": _getitem,
}


def install():
    for cls in (Tensor, Variable):
        for name, fn in _OPERATORS.items():
            setattr(cls, name, fn)
    # comparisons are elementwise, so neither kind can be hashed
    Tensor.__hash__ = None
    Variable.__hash__ = None


install()
