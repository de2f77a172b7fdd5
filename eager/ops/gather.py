"""Index-driven selection: gather, gather_nd, scatter_nd, where (`boolean_mask`: `indexing.py`).

TensorFlow op types `GatherV2 GatherNd ScatterNd SelectV2 Where`, plus the
gradient helper `GatherGrad` (scatter-add into zeros shaped like the params;
TensorFlow uses IndexedSlices for this, which graphjit does not have).
Indices are checked against the gathered dimension (TensorFlow's CPU behaviour:
an out-of-range index is an `InvalidArgumentError`, never a silent wrap).
`Where` (one argument) has a data-dependent output size: inference gives that
dim as None.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor, operand
from ..dispatch import execute
from ..dtypes import bool_, int64
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import EMPTY, fold, int_input, norm_axis, static_int, value_ints
from ._define import broadcast_shapes
from .array import shape, sum_to_like, zeros_like

__all__ = ["gather", "gather_nd", "scatter_nd", "where"]


# ------------------------------------------------------------------ GatherV2
_MIN = np.minimum.reduce
def _check_bounds(opname, indices, n, dim):
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        bad = indices[(indices < 0) | (indices >= n)].reshape(-1)[0]
        raise InvalidArgumentError(f"{opname}: index {int(bad)} is not in [0, {n}) (dimension {dim} of the params)",
                                   op_name=opname)


def _gather_index(pshape, indices, a, b):
    """The NumPy index tuple selecting `params[..., indices, ...]` along axis `a` with `b` batch dims."""
    if b == 0:
        return (slice(None),) * a + (indices,)
    bshape, ashape, ishape = pshape[:b], pshape[b:a], indices.shape[b:]
    nd = b + len(ashape) + len(ishape)
    idx = []
    for j, d in enumerate(bshape + ashape):
        shape = [1] * nd
        shape[j] = d
        idx.append(np.arange(d).reshape(shape))
    idx.append(indices.reshape(tuple(bshape) + (1,) * len(ashape) + tuple(ishape)))
    return tuple(idx)


def _gather_dims(opname, pshape, ishape, axis, batch_dims):
    """Normalize (axis, batch_dims) for shapes `pshape`/`ishape`; None ranks leave them as given."""
    pr = None if pshape is None else len(pshape)
    ir = None if ishape is None else len(ishape)
    b = batch_dims
    if b < 0 and ir is not None:
        b += ir
    a = norm_axis(axis, pr, opname) if pr is not None else axis
    if ir is not None and not 0 <= b <= ir:
        raise InvalidArgumentError(f"{opname}: batch_dims {batch_dims} must be in [{-ir}, {ir}] for indices of "
                                   f"rank {ir}", op_name=opname)
    if pr is not None and a >= 0 and b >= 0 and b > a:
        raise InvalidArgumentError(f"{opname}: batch_dims ({b}) must be <= axis ({a})", op_name=opname)
    if pshape is not None and ishape is not None and b > 0:
        for i in range(b):
            p, q = pshape[i], ishape[i]
            if p is not None and q is not None and p != q:
                raise InvalidArgumentError(
                    f"{opname}: params shape {list(pshape)} and indices shape {list(ishape)} must agree in the "
                    f"first batch_dims={b} dimensions", op_name=opname)
    return a, b


def _gather_kernel(params, indices, axis, batch_dims=0):
    if batch_dims == 0:
        nd = params.ndim
        a = int(axis)
        if nd and -nd <= a < nd:       # the common case, checked as the general path checks it
            if a < 0:
                a += nd
            n = params.shape[a]
            if indices.ndim == 0:
                i = int(indices)
                if not 0 <= i < n:
                    raise InvalidArgumentError(f"GatherV2: index {i} is not in [0, {n}) (dimension {a} of the "
                                               f"params)", op_name="GatherV2")
            elif indices.size and _MIN(indices, axis=None) < 0:
                _check_bounds("GatherV2", indices, n, a)
            try:
                out = np.take(params, indices, axis=a)        # raises for an index >= n
            except IndexError:
                _check_bounds("GatherV2", indices, n, a)
                raise
            return out if out.__class__ is np.ndarray else np.asarray(out, dtype=params.dtype)
    if params.ndim == 0:
        raise InvalidArgumentError("GatherV2: params must be at least 1-D, got a scalar", op_name="GatherV2")
    a, b = _gather_dims("GatherV2", params.shape, indices.shape, int(axis), batch_dims)
    _check_bounds("GatherV2", indices, params.shape[a], a)
    out = np.take(params, indices, axis=a) if b == 0 else params[_gather_index(params.shape, indices, a, b)]
    return out if isinstance(out, np.ndarray) else np.asarray(out, dtype=params.dtype)


def _infer_gather(specs, attrs):
    p, i, ax = specs
    axv = value_ints(ax)
    if p.shape is None or i.shape is None or axv is None:
        return [Spec(None, p.dtype)]
    a, b = _gather_dims("GatherV2", p.shape, i.shape, axv[0], attrs["batch_dims"])
    out = p.shape[:a] + i.shape[b:] + p.shape[a + 1:]
    return [Spec(out, p.dtype, fold(_gather_kernel, specs, attrs, shape=out))]


def _gather_grad_kernel(dy, params, indices, axis, batch_dims=0):
    a, b = _gather_dims("GatherGrad", params.shape, indices.shape, int(axis), batch_dims)
    out = np.zeros(params.shape, dtype=dy.dtype)
    np.add.at(out, _gather_index(params.shape, indices, a, b), dy)
    return out


def _g_gather(op, dy):
    p, i, ax = op.inputs
    return [execute(GATHER_GRAD, (dy, p, i, ax), {"batch_dims": op.get_attr("batch_dims")}), None, None]


def _g_gather_grad(op, g):
    _, _, i, ax = op.inputs
    return [execute(GATHER, (g, i, ax), {"batch_dims": op.get_attr("batch_dims")}), None, None, None]


GATHER = op("GatherV2", _gather_kernel, _infer_gather, _g_gather)
GATHER_GRAD = op("GatherGrad", _gather_grad_kernel, lambda s, a: [Spec(s[1].shape, s[0].dtype)], _g_gather_grad,
                 doc="Scatter-add a GatherV2 output gradient (input 0) into zeros shaped like the params.")


def _indices(indices, opname):
    t = indices if isinstance(indices, Tensor) else int_input(indices, "indices", opname)
    if not t.dtype.is_integer:
        raise InvalidArgumentError(f"{opname}: indices must be int32 or int64, got {t.dtype.name}", op_name=opname)
    return t


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` at `indices` (TensorFlow's signature; axis defaults to batch_dims).

    TensorFlow ignores its deprecated third parameter `validate_indices`, so `gather(x, i, 1)` silently
    gathers along axis 0 there; here an integer third argument is taken as the axis (indices are always
    validated).
    """
    if axis is None and validate_indices is not None and not isinstance(validate_indices, (bool, np.bool_)):
        axis = validate_indices
    p = params if isinstance(params, Tensor) else convert_to_tensor(params)
    i = _indices(indices, "GatherV2")
    b = static_int(batch_dims, "batch_dims", "GatherV2")
    ax = int_input(b if axis is None else axis, "axis", "GatherV2")
    return execute(GATHER, (p, i, ax), {"batch_dims": b}, name)


# ------------------------------------------------------------------ GatherNd / ScatterNd
def _nd_index(pshape, indices, b, opname):
    depth = indices.shape[-1] if indices.ndim else -1
    if indices.ndim < b + 1 or depth > len(pshape) - b:
        raise InvalidArgumentError(
            f"{opname}: indices of shape {list(indices.shape)} do not fit params of shape {list(pshape)} with "
            f"batch_dims={b} (the last indices dim indexes into params)", op_name=opname)
    if tuple(indices.shape[:b]) != tuple(pshape[:b]):
        raise InvalidArgumentError(f"{opname}: the first batch_dims={b} dimensions of params {list(pshape)} and "
                                   f"indices {list(indices.shape)} must agree", op_name=opname)
    for k in range(depth):
        _check_bounds(opname, indices[..., k], pshape[b + k], b + k)
    outer = indices.shape[:-1]
    idx = []
    for j in range(b):
        shape = [1] * len(outer)
        shape[j] = outer[j]
        idx.append(np.broadcast_to(np.arange(outer[j]).reshape(shape), outer))
    idx.extend(indices[..., k] for k in range(depth))
    if not idx:  # depth 0 and no batch dims: every index selects the whole params
        return None
    return tuple(idx)


def _gather_nd_kernel(params, indices, batch_dims=0):
    idx = _nd_index(params.shape, indices, batch_dims, "GatherNd")
    if idx is None:
        return np.broadcast_to(params, indices.shape[:-1] + params.shape).copy()
    out = params[idx]
    return out if isinstance(out, np.ndarray) else np.asarray(out, dtype=params.dtype)


def _infer_gather_nd(specs, attrs):
    p, i = specs
    b = attrs["batch_dims"]
    if p.shape is None or i.shape is None or i.shape[-1:] == (None,):
        return [Spec(None, p.dtype)]
    depth = i.shape[-1]
    if len(i.shape) < b + 1 or depth > len(p.shape) - b:
        raise InvalidArgumentError(f"GatherNd: indices of shape {list(i.shape)} do not fit params of shape "
                                   f"{list(p.shape)} with batch_dims={b}", op_name="GatherNd")
    out = i.shape[:-1] + p.shape[b + depth:]
    return [Spec(out, p.dtype, fold(_gather_nd_kernel, specs, attrs, shape=out))]


def _scatter_nd_kernel(indices, updates, shape, batch_dims=0):
    out = np.zeros(tuple(int(d) for d in shape), dtype=updates.dtype)
    idx = _nd_index(out.shape, indices, batch_dims, "ScatterNd")
    expect = indices.shape[:-1] + out.shape[batch_dims + indices.shape[-1]:]
    if updates.shape != expect:
        raise InvalidArgumentError(f"ScatterNd: updates must have shape {list(expect)} for indices of shape "
                                   f"{list(indices.shape)} and output shape {list(out.shape)}, got "
                                   f"{list(updates.shape)}", op_name="ScatterNd")
    if idx is None:
        out += np.add.reduce(updates.reshape((-1,) + out.shape), axis=0, dtype=out.dtype)
    else:
        np.add.at(out, idx, updates)
    return out


def _infer_scatter_nd(specs, attrs):
    i, u, s = specs
    dims = value_ints(s)
    if dims is None:
        n = s.shape[0] if s.shape else None
        return [Spec(None if n is None else (None,) * n, u.dtype)]
    return [Spec(tuple(dims), u.dtype)]


GATHER_ND = op("GatherNd", _gather_nd_kernel, _infer_gather_nd,
               lambda op, dy: [scatter_nd(op.inputs[1], dy, _shape_of(op.inputs[0], op.inputs[1]),
                                          batch_dims=op.get_attr("batch_dims")), None])
SCATTER_ND = op("ScatterNd", _scatter_nd_kernel, _infer_scatter_nd,
                lambda op, dy: [None, gather_nd(dy, op.inputs[0], batch_dims=op.get_attr("batch_dims")), None])


def _shape_of(x, like):
    return shape(x, out_type=like.dtype)


def gather_nd(params, indices, batch_dims=0, name=None):
    """Gather slices of `params` at the coordinates in the last dimension of `indices`."""
    p = params if isinstance(params, Tensor) else convert_to_tensor(params)
    i = _indices(indices, "GatherNd")
    return execute(GATHER_ND, (p, i), {"batch_dims": static_int(batch_dims, "batch_dims", "GatherNd")}, name)


def scatter_nd(indices, updates, shape, batch_dims=0, name=None):
    """Zeros of `shape` with `updates` added at `indices` (duplicates are summed), the inverse of gather_nd."""
    i = _indices(indices, "ScatterNd")
    u = updates if isinstance(updates, Tensor) else convert_to_tensor(updates)
    s = shape if isinstance(shape, Tensor) else int_input(shape, "shape", "ScatterNd")
    return execute(SCATTER_ND, (i, u, s), {"batch_dims": static_int(batch_dims, "batch_dims", "ScatterNd")}, name)


# ------------------------------------------------------------------ where
def _select_kernel(c, x, y):
    if x.dtype != y.dtype:
        raise InvalidArgumentError(f"SelectV2: x and y must have the same dtype, got {x.dtype} and {y.dtype}",
                                   op_name="SelectV2")
    return np.where(c, x, y)


def _infer_select(specs, attrs):
    c, x, y = specs
    if c.dtype is not bool_:
        raise InvalidArgumentError(f"SelectV2: condition must be bool, got {c.dtype.name}", op_name="SelectV2")
    if x.dtype is not y.dtype:
        raise InvalidArgumentError(f"SelectV2: x and y must have the same dtype, got {x.dtype.name} and "
                                   f"{y.dtype.name}", op_name="SelectV2")
    shape = broadcast_shapes(broadcast_shapes(c.shape, x.shape, "SelectV2"), y.shape, "SelectV2")
    return [Spec(shape, x.dtype)]


def _g_select(op, dy):
    c, x, y = op.inputs
    z = zeros_like(dy)
    return [None, sum_to_like(execute(SELECT, (c, dy, z), EMPTY), x),
            sum_to_like(execute(SELECT, (c, z, dy), EMPTY), y)]


SELECT = op("SelectV2", _select_kernel, _infer_select, _g_select, elementwise=True, rowwise_exact=True)
WHERE = op("Where", lambda c: np.argwhere(c).astype(np.int64),
           lambda s, a: [Spec((None, None if s[0].shape is None else len(s[0].shape)), int64)])


def where(condition, x=None, y=None, name=None):
    """`x` where `condition` else `y` (broadcasting); with one argument, the int64 coordinates of true entries."""
    c = condition if isinstance(condition, Tensor) else convert_to_tensor(condition)
    if x is None and y is None:
        return execute(WHERE, (c,), EMPTY, name)
    if x is None or y is None:
        raise ValueError("where: x and y must both be given, or both be None")
    if c.dtype is not bool_:
        raise InvalidArgumentError(f"SelectV2: condition must be a bool tensor, got {c.dtype.name} "
                                   f"(shape {c.shape})", op_name="SelectV2")
    if isinstance(x, Tensor) or hasattr(x, "_to_tensor"):
        x = convert_to_tensor(x)
        y = operand(y, x)
    elif isinstance(y, Tensor) or hasattr(y, "_to_tensor"):
        y = convert_to_tensor(y)
        x = operand(x, y)
    else:
        x = convert_to_tensor(x)
        y = operand(y, x)
    if x.dtype is not y.dtype:
        raise InvalidArgumentError(f"SelectV2: x and y must have the same dtype, got {x.dtype.name} {x.shape} and "
                                   f"{y.dtype.name} {y.shape}", op_name="SelectV2")
    broadcast_shapes(broadcast_shapes(c.shape.dims, x.shape.dims, "SelectV2"), y.shape.dims, "SelectV2")
    return execute(SELECT, (c, x, y), EMPTY, name)
