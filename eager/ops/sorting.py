"""Ops along one axis: sort, argsort, top_k, cumsum (TensorFlow op types `TopKV2
Cumsum`, plus `ArgSort`, which TensorFlow builds from TopKV2).

Ties keep their original order (lower index first), in both directions, as
TensorFlow's `top_k` and stable `argsort` do.  `sort` is `gather(values,
argsort(values))` along the axis, so its gradient comes from `GatherV2`; the
`TopKV2` gradient scatters into zeros with `GatherGrad`.  `sort`/`argsort`
take a static Python `axis` (TensorFlow requires one too); `Cumsum` takes it
as a tensor input like TensorFlow.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import int32
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import int_input, norm_axis, static_int, value_ints
from .gather import GATHER_GRAD, gather
from .manipulation import transpose

__all__ = ["sort", "argsort", "top_k", "cumsum"]

TopK = namedtuple("TopK", ["values", "indices"])


# ------------------------------------------------------------------ argsort / sort
def _stable_argsort(x, axis, descending):
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - flipped, axis)


def _argsort_kernel(x, axis, descending):
    if np.ndim(x) == 0:
        raise InvalidArgumentError("ArgSort: input must have rank >= 1, got a scalar", op_name="ArgSort")
    return _stable_argsort(x, norm_axis(axis, x.ndim, "ArgSort"), descending).astype(np.int32)


ARGSORT = op("ArgSort", _argsort_kernel, lambda s, a: [Spec(s[0].shape, int32)],
             doc="Stable argsort along a static axis (attr descending).")


def _direction(direction):
    d = str(direction).upper()
    if d not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    return d == "DESCENDING"


def _axis_for(x, axis, opname):
    a = static_int(axis, "axis", opname)
    r = x.shape.rank
    if r == 0:
        raise InvalidArgumentError(f"{opname}: input must have rank >= 1, got a scalar", op_name=opname)
    return norm_axis(a, r, opname)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 indices that sort `values` along `axis` (always stable: ties keep index order)."""
    x = values if isinstance(values, Tensor) else convert_to_tensor(values)
    a = _axis_for(x, axis, "ArgSort")
    return execute(ARGSORT, (x,), {"axis": a, "descending": _direction(direction)}, name)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (differentiable: the gradient follows the permutation)."""
    x = values if isinstance(values, Tensor) else convert_to_tensor(values)
    a = _axis_for(x, axis, "Sort")
    desc = _direction(direction)
    r = x.shape.rank
    if r is None or a == r - 1 or a == -1:
        idx = execute(ARGSORT, (x,), {"axis": -1, "descending": desc})
        return gather(x, idx, axis=-1, batch_dims=-1, name=name)
    perm = list(range(r))
    perm[a], perm[-1] = perm[-1], perm[a]
    xt = transpose(x, perm)
    idx = execute(ARGSORT, (xt,), {"axis": -1, "descending": desc})
    return transpose(gather(xt, idx, axis=-1, batch_dims=-1), perm, name=name)


# ------------------------------------------------------------------ top_k
def _top_k_kernel(x, k, sorted=True):
    k = int(k)
    if np.ndim(x) == 0:
        raise InvalidArgumentError("TopKV2: input must have rank >= 1, got a scalar", op_name="TopKV2")
    n = x.shape[-1]
    if k < 0 or k > n:
        raise InvalidArgumentError(f"TopKV2: input must have at least k={k} columns, had {n} "
                                   f"(shape {list(x.shape)})", op_name="TopKV2")
    idx = _stable_argsort(x, -1, True)[..., :k]
    return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


def _infer_top_k(specs, attrs):
    x, k = specs
    kv = value_ints(k)
    if x.shape is None:
        return [Spec(None, x.dtype), Spec(None, int32)]
    if len(x.shape) == 0:
        raise InvalidArgumentError("TopKV2: input must have rank >= 1, got a scalar", op_name="TopKV2")
    n = x.shape[-1]
    if kv is not None and n is not None and not 0 <= kv[0] <= n:
        raise InvalidArgumentError(f"TopKV2: input must have at least k={kv[0]} columns, had {n} "
                                   f"(shape {list(x.shape)})", op_name="TopKV2")
    shape = x.shape[:-1] + (None if kv is None else kv[0],)
    return [Spec(shape, x.dtype), Spec(shape, int32)]


def _g_top_k(op, dvalues, dindices):
    x = op.inputs[0]
    idx = op.outputs[1]
    return [execute(GATHER_GRAD, (dvalues, x, idx, int_input(-1)), {"batch_dims": -1}), None]


TOP_K = op("TopKV2", _top_k_kernel, _infer_top_k, _g_top_k, num_outputs=2)


def top_k(input, k=1, sorted=True, name=None):
    """The `k` largest entries of the last dimension and their int32 indices: `TopK(values, indices)`."""
    x = input if isinstance(input, Tensor) else convert_to_tensor(input)
    if x.shape.rank == 0:
        raise InvalidArgumentError("TopKV2: input must have rank >= 1, got a scalar", op_name="TopKV2")
    values, indices = execute(TOP_K, (x, int_input(k, "k", "TopKV2")), {"sorted": bool(sorted)}, name)
    return TopK(values, indices)


# ------------------------------------------------------------------ cumsum
def _cumsum_kernel(x, axis, exclusive=False, reverse=False):
    if np.ndim(x) == 0:
        raise InvalidArgumentError("Cumsum: input must have rank >= 1, got a scalar", op_name="Cumsum")
    a = norm_axis(int(axis), x.ndim, "Cumsum")
    if reverse:
        x = np.flip(x, a)
    out = np.add.accumulate(x, axis=a, dtype=x.dtype)    # a ufunc, not np.cumsum: fp_semantics.py
    if exclusive:
        shifted = np.zeros_like(out)
        dst, src = [slice(None)] * out.ndim, [slice(None)] * out.ndim
        dst[a], src[a] = slice(1, None), slice(0, -1)
        shifted[tuple(dst)] = out[tuple(src)]
        out = shifted
    return np.flip(out, a) if reverse else out


def _infer_cumsum(specs, attrs):
    x, ax = specs
    if x.shape is not None:
        axv = value_ints(ax)
        if len(x.shape) == 0:
            raise InvalidArgumentError("Cumsum: input must have rank >= 1, got a scalar", op_name="Cumsum")
        if axv is not None:
            norm_axis(axv[0], len(x.shape), "Cumsum")
    return [Spec(x.shape, x.dtype)]


CUMSUM = op("Cumsum", _cumsum_kernel, _infer_cumsum,
            lambda op, dy: [cumsum(dy, op.inputs[1], exclusive=op.get_attr("exclusive"),
                                   reverse=not op.get_attr("reverse")), None])


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sum along `axis` (`exclusive`: shifted by one, starting at 0; `reverse`: from the end)."""
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if t.dtype.is_bool or t.dtype.is_string:
        raise InvalidArgumentError(f"Cumsum: input must be numeric, got {t.dtype.name}", op_name="Cumsum")
    return execute(CUMSUM, (t, int_input(axis, "axis", "Cumsum")), {"exclusive": bool(exclusive),
                                                                      "reverse": bool(reverse)}, name)
