"""Elementwise comparisons (`equal`, `less`, ...) and logic (`logical_and`, `logical_or`, `logical_not`).

Comparisons broadcast and give bool; the logical ops take bool tensors only (InvalidArgumentError
naming the op and the dtype otherwise), as in TensorFlow.  Re-exported by `math.py`.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import bool_
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ._define import EMPTY, broadcast_shapes, call_binary, infer_broadcast_bool

__all__ = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
           "logical_not"]


def _cmp(name, fn):
    return op(name, fn, lambda specs, attrs: infer_broadcast_bool(specs, attrs, name), elementwise=True,
              numpy_ufunc=fn, rowwise_exact=True)


EQUAL = _cmp("Equal", np.equal)
NOT_EQUAL = _cmp("NotEqual", np.not_equal)
LESS = _cmp("Less", np.less)
LESS_EQUAL = _cmp("LessEqual", np.less_equal)
GREATER = _cmp("Greater", np.greater)
GREATER_EQUAL = _cmp("GreaterEqual", np.greater_equal)


def _infer_logical(specs, attrs):
    for s in specs:
        if s.dtype is not bool_:
            raise InvalidArgumentError(f"logical ops need bool tensors, got {s.dtype.name}")
    shape = specs[0].shape if len(specs) == 1 else broadcast_shapes(specs[0].shape, specs[1].shape)
    return [Spec(shape, bool_)]


LOGICAL_AND = op("LogicalAnd", np.logical_and, _infer_logical, elementwise=True, commutative=True,
                 numpy_ufunc=np.logical_and, rowwise_exact=True)
LOGICAL_OR = op("LogicalOr", np.logical_or, _infer_logical, elementwise=True, commutative=True,
                numpy_ufunc=np.logical_or, rowwise_exact=True)
LOGICAL_NOT = op("LogicalNot", np.logical_not, _infer_logical, elementwise=True, numpy_ufunc=np.logical_not,
                 rowwise_exact=True)


def equal(x, y, name=None):
    return call_binary(EQUAL, x, y, name)


def not_equal(x, y, name=None):
    return call_binary(NOT_EQUAL, x, y, name)


def less(x, y, name=None):
    return call_binary(LESS, x, y, name)


def less_equal(x, y, name=None):
    return call_binary(LESS_EQUAL, x, y, name)


def greater(x, y, name=None):
    return call_binary(GREATER, x, y, name)


def greater_equal(x, y, name=None):
    return call_binary(GREATER_EQUAL, x, y, name)


def _check_bool(opdef, *ts):
    for t in ts:
        if t.dtype is not bool_:
            raise InvalidArgumentError(f"{opdef.name}: expected bool tensors, got {t.dtype.name} "
                                       f"(shape {t.shape})", op_name=opdef.name)


def logical_and(x, y, name=None):
    x, y = convert_to_tensor(x, dtype_hint=bool_), convert_to_tensor(y, dtype_hint=bool_)
    _check_bool(LOGICAL_AND, x, y)
    return execute(LOGICAL_AND, (x, y), EMPTY, name)


def logical_or(x, y, name=None):
    x, y = convert_to_tensor(x), convert_to_tensor(y)
    _check_bool(LOGICAL_OR, x, y)
    return execute(LOGICAL_OR, (x, y), EMPTY, name)


def logical_not(x, name=None):
    x = convert_to_tensor(x)
    _check_bool(LOGICAL_NOT, x)
    return execute(LOGICAL_NOT, (x,), EMPTY, name)

