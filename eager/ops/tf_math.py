"""TF2 math and nn additions: cumprod, segment sums, erf, variance/std, l2_normalize, gelu, moments,
batch_normalization, embedding_lookup.

New primitives (one declaration each, NumPy kernels): `Cumprod`,
`SegmentSum`, `UnsortedSegmentSum`, `Erf`.  The rest are TensorFlow's
compositions of public ops, so they differentiate through them.  Gradients
are TensorFlow's: Cumprod's is `cumsum(prod * dy, reverse) / x` (like TF's,
wrong where x has zeros); a segment sum's is a gather of the output gradient.

Imports numpy and `eager` modules.
"""
from __future__ import annotations

import math

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ._args import int_input
from ._define import EMPTY, infer_same_float
from .array import squeeze
from .constant import stop_gradient
from .gather import gather
from .math import add, divide, exp, maximum, multiply, rsqrt, sqrt, square, squared_difference, subtract, tanh
from .reduction import reduce_mean, reduce_sum
from .sorting import cumsum

__all__ = ["cumprod", "segment_sum", "unsorted_segment_sum", "erf", "reduce_variance", "reduce_std",
           "l2_normalize", "gelu", "moments", "batch_normalization", "embedding_lookup"]


# ------------------------------------------------------------------ cumprod
def _cumprod_kernel(x, axis, exclusive=False, reverse=False):
    if np.ndim(x) == 0:
        raise InvalidArgumentError("Cumprod: input must have rank >= 1, got a scalar", op_name="Cumprod")
    a = int(axis) % x.ndim
    y = np.flip(x, a) if reverse else x
    out = np.multiply.accumulate(y, axis=a, dtype=x.dtype)    # a ufunc, not np.cumprod: fp_semantics.py
    if exclusive:
        out = np.concatenate([np.ones_like(np.take(out, [0], axis=a)), np.delete(out, -1, axis=a)], axis=a)
    return np.flip(out, a) if reverse else out


def _g_cumprod(op, dy):
    x, axis = op.inputs
    ex, rev = op.get_attr("exclusive"), op.get_attr("reverse")
    prod = op.outputs[0]
    return [divide(cumsum(multiply(prod, dy), axis, exclusive=ex, reverse=not rev), x), None]


CUMPROD = op("Cumprod", _cumprod_kernel, lambda s, a: [Spec(s[0].shape, s[0].dtype)], _g_cumprod)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running product along `axis` (`exclusive`: shifted, starting at 1; `reverse`: from the end)."""
    t = convert_to_tensor(x)
    if t.dtype.is_bool or t.dtype.is_string:
        raise InvalidArgumentError(f"Cumprod: input must be numeric, got {t.dtype.name}", op_name="Cumprod")
    return execute(CUMPROD, (t, int_input(axis, "axis", "Cumprod")), {"exclusive": bool(exclusive),
                                                                        "reverse": bool(reverse)}, name)


# ------------------------------------------------------------------ segment sums
def _check_ids(opname, data, ids, num):
    ids = np.asarray(ids)
    if ids.shape != data.shape[:ids.ndim]:
        raise InvalidArgumentError(f"{opname}: segment_ids of shape {list(ids.shape)} must be a prefix of data's "
                                   f"shape {list(data.shape)}", op_name=opname)
    if ids.size and (ids.min() < 0 or ids.max() >= num):
        raise InvalidArgumentError(f"{opname}: segment ids must be in [0, {num}), got min {ids.min()} max "
                                   f"{ids.max()}", op_name=opname)
    return ids


def _unsorted_kernel(data, ids, num_segments):
    num = int(num_segments)
    ids = _check_ids("UnsortedSegmentSum", data, ids, num)
    out = np.zeros((num,) + data.shape[ids.ndim:], data.dtype)
    np.add.at(out, ids, data)
    return out


def _segment_kernel(data, ids):
    ids = np.asarray(ids)
    if ids.ndim != 1 or np.any(np.diff(ids) < 0):
        raise InvalidArgumentError("SegmentSum: segment_ids must be a sorted 1-D tensor", op_name="SegmentSum")
    return _unsorted_kernel(data, ids, (int(ids[-1]) + 1) if ids.size else 0)


def _infer_segment(specs, attrs):
    d = specs[0].shape
    num = specs[2].value if len(specs) > 2 else None
    rank = None if specs[1].shape is None else len(specs[1].shape)
    tail = None if d is None or rank is None else tuple(d[rank:])
    first = None if num is None else int(num)
    return [Spec(None if tail is None else (first,) + tail, specs[0].dtype)]


def _g_segment(op, dy):
    return [gather(dy, op.inputs[1])] + [None] * (len(op.inputs) - 1)


SEGMENT_SUM = op("SegmentSum", _segment_kernel, _infer_segment, _g_segment)
UNSORTED_SEGMENT_SUM = op("UnsortedSegmentSum", _unsorted_kernel, _infer_segment, _g_segment)


def segment_sum(data, segment_ids, name=None):
    """Sums of the rows of `data` that share a (sorted) segment id; output rows = max id + 1."""
    return execute(SEGMENT_SUM, (convert_to_tensor(data), int_input(segment_ids, "segment_ids", "SegmentSum")),
                   EMPTY, name)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sums of the rows of `data` per segment id (any order), `num_segments` output rows."""
    return execute(UNSORTED_SEGMENT_SUM, (convert_to_tensor(data),
                                          int_input(segment_ids, "segment_ids", "UnsortedSegmentSum"),
                                          int_input(num_segments, "num_segments", "UnsortedSegmentSum")),
                   EMPTY, name)


# ------------------------------------------------------------------ erf, gelu
_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf_kernel(x):
    return _ERF(x).astype(x.dtype) if np.ndim(x) else np.asarray(math.erf(x), x.dtype)


ERF = op("Erf", _erf_kernel, infer_same_float("Erf"),
         lambda op, dy: [multiply(dy, multiply(2.0 / math.sqrt(math.pi), exp(-square(op.inputs[0]))))],
         elementwise=True)


def erf(x, name=None):
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise InvalidArgumentError(f"Erf: x must be float16, float32 or float64, got {t.dtype.name}", op_name="Erf")
    return execute(ERF, (t,), EMPTY, name)


def gelu(features, approximate=False, name=None):
    """x * Phi(x); `approximate`: the tanh form 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))."""
    x = convert_to_tensor(features)
    if approximate:
        inner = multiply(math.sqrt(2.0 / math.pi), add(x, multiply(0.044715, multiply(x, square(x)))))
        return multiply(multiply(0.5, x), add(1.0, tanh(inner)))
    return multiply(multiply(0.5, x), add(1.0, erf(divide(x, math.sqrt(2.0)))))


# ------------------------------------------------------------------ statistics and normalization
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    x = convert_to_tensor(input_tensor)
    return reduce_mean(square(subtract(x, reduce_mean(x, axis, keepdims=True))), axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None):
    """x / sqrt(max(sum(x^2, axis), epsilon))."""
    x = convert_to_tensor(x)
    return multiply(x, rsqrt(maximum(reduce_sum(square(x), axis, keepdims=True), epsilon)))


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) over `axes` (the variance does not differentiate through the mean, as in TF)."""
    x = convert_to_tensor(x)
    mean = reduce_mean(x, axes, keepdims=True)
    variance = reduce_mean(squared_difference(x, stop_gradient(mean)), axes, keepdims=True)
    if not keepdims:
        mean, variance = squeeze(mean, axes), squeeze(variance, axes)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + eps) + offset, in TF's order of operations."""
    x = convert_to_tensor(x)
    like = lambda v: v if v is None or hasattr(v, "dtype") else convert_to_tensor(v, dtype=x.dtype)  # noqa: E731
    mean, variance, offset, scale = like(mean), like(variance), like(offset), like(scale)
    inv = rsqrt(add(variance, variance_epsilon))
    if scale is not None:
        inv = multiply(inv, scale)
    shift = subtract(offset, multiply(mean, inv)) if offset is not None else multiply(-1.0, multiply(mean, inv))
    return add(multiply(x, inv), shift)


def embedding_lookup(params, ids, max_norm=None, name=None):
    """The rows of `params` at `ids` (one tensor of params; no partitioning)."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise ValueError("embedding_lookup: partitioned params (a list of several tensors) are not supported")
        params = params[0]
    if max_norm is not None:
        raise ValueError("embedding_lookup: max_norm is not supported")
    return gather(params, ids)
