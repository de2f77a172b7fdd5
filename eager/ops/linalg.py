"""MatMul, AddN and ClipByValue: the non-elementwise arithmetic primitives; `eye`.

Same conventions as `math.py` (one declaration per primitive, gradients
written with public ops).  The MatMul gradient skips the inputs listed in
`op.skip_input_indices` (set by backprop when nobody needs them), so an
eager MLP step does not compute d(loss)/d(data).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..convert import constant, convert_to_tensor, operand
from ..dispatch import execute
from ..dtypes import as_dtype, float32
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import int_input
from ._define import EMPTY, broadcast_shapes, check_same_dtype
from .array import broadcast_to, expand_dims, stack, sum_to_like
from .creation import range as range_
from .manipulation import concat
from .math import cast, equal, greater, greater_equal, less, less_equal, logical_and, multiply

__all__ = ["matmul", "add_n", "clip_by_value", "eye"]


# ------------------------------------------------------------------ matmul
def _matmul_kernel(a, b, transpose_a=False, transpose_b=False):
    if transpose_a:        # an array's `swapaxes` method is `np.swapaxes` without its Python wrapper
        a = a.swapaxes(-1, -2) if type(a) is np.ndarray else np.swapaxes(a, -1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2) if type(b) is np.ndarray else np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def _infer_matmul(specs, attrs):
    a, b = specs
    if a.dtype is not b.dtype:
        raise InvalidArgumentError(f"MatMul: dtypes differ: {a.dtype.name} and {b.dtype.name}", op_name="MatMul")
    if a.shape is None or b.shape is None:
        return [Spec(None, a.dtype)]
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise InvalidArgumentError(f"MatMul: both inputs must have rank >= 2, got shapes {list(a.shape)} and "
                                   f"{list(b.shape)}", op_name="MatMul")
    m, ka = (a.shape[-1], a.shape[-2]) if attrs.get("transpose_a") else (a.shape[-2], a.shape[-1])
    kb, n = (b.shape[-1], b.shape[-2]) if attrs.get("transpose_b") else (b.shape[-2], b.shape[-1])
    if ka is not None and kb is not None and ka != kb:
        raise InvalidArgumentError(
            f"MatMul: inner dimensions differ: a {list(a.shape)} (transpose_a={bool(attrs.get('transpose_a'))}) "
            f"and b {list(b.shape)} (transpose_b={bool(attrs.get('transpose_b'))}) give {ka} != {kb}",
            op_name="MatMul")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], "MatMul")
    return [Spec(tuple(batch) + (m, n), a.dtype)]


def _g_matmul(op, dy):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    skip = getattr(op, "skip_input_indices", ())
    da = db = None
    if 0 not in skip:
        if not ta:
            da = matmul(dy, b, transpose_b=not tb)
        else:
            da = matmul(b, dy, transpose_a=tb, transpose_b=True)
        da = sum_to_like(da, a)
    if 1 not in skip:
        if not tb:
            db = matmul(a, dy, transpose_a=not ta)
        else:
            db = matmul(dy, a, transpose_a=True, transpose_b=ta)
        db = sum_to_like(db, b)
    return [da, db]


def _matmul_ta(a, b):
    return np.matmul(a.swapaxes(-1, -2), b)


def _matmul_tb(a, b):
    return np.matmul(a, b.swapaxes(-1, -2))


def _matmul_tab(a, b):
    return np.matmul(a.swapaxes(-1, -2), b.swapaxes(-1, -2))


# a plan calls the kernel for its attrs without keyword arguments (the gradient's transposed products run
# on every iteration of a While gradient): the same calls as `_matmul_kernel` (plans hold arrays, whose
# `swapaxes` method is `np.swapaxes`)
_SPECIALIZED = {(False, False): np.matmul, (True, False): _matmul_ta, (False, True): _matmul_tb,
                (True, True): _matmul_tab}
# the transposes each specialized kernel applies: a generated plan whose operands are known to be 2-D writes
# `np.matmul(a.T, b)` inline instead (graph_runtime/codegen.py; `.T` of a 2-D array is its `swapaxes(-1, -2)`)
TRANSPOSED_PRODUCTS = {kernel: flags for flags, kernel in _SPECIALIZED.items() if any(flags)}

MATMUL = op("MatMul", _matmul_kernel, _infer_matmul, _g_matmul,
            extra={"specialize": lambda a: _SPECIALIZED[bool(a.get("transpose_a")), bool(a.get("transpose_b"))]})


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product of the last two dims (batched over leading dims)."""
    if getattr(type(a), "_is_variable", False):         # read variables first (as convert_to_tensor does)
        a = a._to_tensor()
    if getattr(type(b), "_is_variable", False):
        b = b._to_tensor()
    if type(a) is Tensor and type(b) is Tensor:         # eager fast path: check the arrays directly
        av, bv = a._value, b._value
        if av.dtype == bv.dtype and av.ndim >= 2 and bv.ndim >= 2 and \
                av.shape[-2 if transpose_a else -1] == bv.shape[-1 if transpose_b else -2]:
            return execute(MATMUL, (a, b), {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)},
                           name)
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    if a.dtype is not b.dtype:
        raise InvalidArgumentError(f"MatMul: cannot multiply a {a.dtype.name} matrix {a.shape} by a "
                                   f"{b.dtype.name} matrix {b.shape}; cast one of them", op_name="MatMul")
    if a._is_symbolic or b._is_symbolic:
        _infer_matmul([Spec(a.shape.dims, a.dtype), Spec(b.shape.dims, b.dtype)],
                      {"transpose_a": transpose_a, "transpose_b": transpose_b})
    elif a.ndim < 2 or b.ndim < 2 or (a.shape[-1 if not transpose_a else -2] !=
                                      b.shape[-2 if not transpose_b else -1]):
        _infer_matmul([Spec(a.shape.dims, a.dtype), Spec(b.shape.dims, b.dtype)],
                      {"transpose_a": transpose_a, "transpose_b": transpose_b})
    return execute(MATMUL, (a, b), {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}, name)


# ------------------------------------------------------------------ n-ary
def _add_n_kernel(*xs):
    out = np.add(xs[0], xs[1]) if len(xs) > 1 else np.array(xs[0])
    for x in xs[2:]:
        out = np.add(out, x)
    return out


ADD_N = op("AddN", _add_n_kernel, lambda specs, attrs: [Spec(specs[0].shape, specs[0].dtype)],
           lambda op, dy: [dy for _ in op.inputs], commutative=True)


def add_n(inputs, name=None):
    """Sum of a list of tensors of the same shape and dtype."""
    ts = [convert_to_tensor(t) for t in inputs]
    if not ts:
        raise InvalidArgumentError("add_n: needs at least one input", op_name="AddN")
    for t in ts[1:]:
        if t.dtype is not ts[0].dtype or not t.shape.is_compatible_with(ts[0].shape):
            raise InvalidArgumentError(
                f"AddN: all inputs must have the same shape and dtype, got {describe(ts)}", op_name="AddN")
    if len(ts) == 1:
        return ts[0]
    return execute(ADD_N, tuple(ts), EMPTY, name)


def describe(ts):
    return ", ".join(f"{t.dtype.name}{t.shape}" for t in ts)


def _g_clip(op, dy):
    x, lo, hi = op.inputs
    inside = cast(logical_and(greater_equal(x, lo), less_equal(x, hi)), dy.dtype)
    below = cast(less(x, lo), dy.dtype)
    above = cast(greater(x, hi), dy.dtype)
    return [multiply(dy, inside), sum_to_like(multiply(dy, below), lo), sum_to_like(multiply(dy, above), hi)]


CLIP = op("ClipByValue", lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
          lambda s, a: [Spec(s[0].shape, s[0].dtype)], _g_clip, elementwise=True)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    t = convert_to_tensor(t)
    lo, hi = operand(clip_value_min, t), operand(clip_value_max, t)
    check_same_dtype(CLIP, t, lo)
    check_same_dtype(CLIP, t, hi)
    return execute(CLIP, (t, lo, hi), EMPTY, name)


# ------------------------------------------------------------------ eye
def _is_static(v):
    return v is None or (isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, bool))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=float32, name=None):
    """Identity matrix [num_rows, num_columns] (optionally with leading `batch_shape`)."""
    dt = as_dtype(dtype)
    static_batch = batch_shape is None or (isinstance(batch_shape, (list, tuple)) and all(
        _is_static(d) and d is not None for d in batch_shape))
    if _is_static(num_rows) and _is_static(num_columns) and static_batch:
        n = int(num_rows)
        m = n if num_columns is None else int(num_columns)
        if n < 0 or m < 0:
            raise InvalidArgumentError(f"eye: num_rows and num_columns must be non-negative, got {n} and {m}",
                                       op_name="eye")
        e = np.eye(n, m, dtype=dt.as_numpy_dtype)
        if batch_shape:
            e = np.broadcast_to(e, tuple(int(d) for d in batch_shape) + (n, m)).copy()
        return constant(e, name=name)
    n_t = int_input(num_rows, "num_rows", "eye")
    m_t = n_t if num_columns is None else int_input(num_columns, "num_columns", "eye")
    rows = range_(n_t, dtype=n_t.dtype)
    cols = range_(m_t, dtype=n_t.dtype)
    e = cast(equal(expand_dims(rows, 1), expand_dims(cols, 0)), dt)
    if batch_shape is not None:
        bs = int_input(batch_shape, "batch_shape", "eye")
        e = broadcast_to(e, concat([bs, cast(stack([n_t, m_t]), bs.dtype)], 0))
    return e
