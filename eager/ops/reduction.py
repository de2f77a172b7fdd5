"""Reductions (`reduce_sum` ... `argmin`) and their gradient helper `ReduceGrad`.

`axis` is an attribute (tuple of ints or None = all axes); negative axes are
allowed.  An axis tensor whose value is known only when a graph runs makes a
`ReduceDynamic` op instead (same kernels; `ReduceGradDynamic` for gradients).
Integer `reduce_mean` truncates, like TensorFlow.  `ReduceGrad(dy, x)`
expands a reduced gradient back to `x`'s shape (divided by the number of
reduced elements for means); being a primitive with its own gradient keeps the
reduction gradients free of dynamic-shape arithmetic.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import bool_, int64, as_dtype
from .. import buffers
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ._define import as_attr_tuple
from .array import squeeze
from ..tensor import Tensor
from .constant import stop_gradient
from .math import add, cast, divide, equal, exp, log, multiply, subtract

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
           "reduce_all", "argmax", "argmin", "reduce_logsumexp"]


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim if ndim else 0 for a in axis)


def check_reduce_dtype(opname: str, dtype) -> None:
    """TensorFlow's type constraints of the reductions: Any/All take bool; Max/Min/ArgMax/ArgMin numbers or
    bool; Sum/Mean/Prod numbers.  Strings never (NumPy would concatenate them, or fail inside the kernel)."""
    if opname in ("Any", "All"):
        if dtype is not bool_:
            raise InvalidArgumentError(f"{opname}: expected a bool tensor, got {dtype.name}", op_name=opname)
    elif dtype.is_string:
        raise InvalidArgumentError(f"{opname}: cannot reduce a string tensor: the reduction takes numeric "
                                   f"tensors only", op_name=opname)
    elif dtype is bool_ and opname not in ("Max", "Min", "ArgMax", "ArgMin"):
        raise InvalidArgumentError(f"{opname}: cannot reduce a bool tensor; cast it first", op_name=opname)


def _infer_reduce_for(opname):
    def infer(specs, attrs):
        check_reduce_dtype(opname, specs[0].dtype)
        return _infer_reduce(specs, attrs)
    return infer


def _infer_reduce(specs, attrs, dtype=None):
    s = specs[0]
    out_dtype = dtype or s.dtype
    if s.shape is None:
        return [Spec(None, out_dtype)]
    rank = len(s.shape)
    axis = attrs.get("axis")
    if axis is not None:
        for a in axis:
            if not -rank <= a < max(rank, 1):
                raise InvalidArgumentError(f"reduction axis {a} is out of range for a tensor of shape "
                                           f"{list(s.shape)}")
    axes = set(_axes(axis, rank))
    if attrs.get("keepdims"):
        shape = tuple(1 if i in axes else d for i, d in enumerate(s.shape))
    else:
        shape = tuple(d for i, d in enumerate(s.shape) if i not in axes)
    return [Spec(shape, out_dtype)]


def reduced_grad_operands(dy, xs, axis, keepdims):
    """(dy shaped to broadcast against shape `xs`, the number of elements each of its values stands for):
    ReduceGrad broadcasts the one (a Sum's), or the one divided by the other (a Mean's)."""
    axes = _axes(axis, len(xs))
    dy = np.asarray(dy)
    if not keepdims and axes:
        dy = dy.reshape(tuple(1 if i in axes else d for i, d in enumerate(xs)))
    n = 1
    for a in axes:
        n *= xs[a]
    return dy, n


def _reduce_grad_kernel(dy, x, axis=None, keepdims=False, mean=False):
    xs = x.shape if type(x) is np.ndarray else np.shape(x)
    dy, n = reduced_grad_operands(dy, xs, axis, keepdims)
    out = buffers.empty(xs, dy.dtype)        # big: recycled memory, no fresh pages every step
    if not mean:
        np.copyto(out, dy)
        return out
    # one pass: broadcasting dy into the scaled output gives the bits of a copy followed by `out *= scale`
    if dy.dtype.kind == "f":
        np.multiply(dy, dy.dtype.type(1.0 / max(n, 1)), out=out)
    else:
        np.floor_divide(dy, max(n, 1), out=out)
    return out


def _g_reduce_grad(op, g):
    axis, keepdims = op.get_attr("axis"), op.get_attr("keepdims")
    fn = reduce_mean if op.get_attr("mean") else reduce_sum
    return [fn(g, axis=axis, keepdims=keepdims), None]


REDUCE_GRAD = op("ReduceGrad", _reduce_grad_kernel, lambda s, a: [Spec(s[1].shape, s[0].dtype)],
                 _g_reduce_grad, doc="Broadcast a reduced gradient back to the input's shape.")


def reduce_grad(dy, x, axis, keepdims, mean=False):
    if _is_dynamic(axis):
        return execute(REDUCE_GRAD_DYNAMIC, (dy, x, axis), {"keepdims": keepdims, "mean": mean})
    return execute(REDUCE_GRAD, (dy, x), {"axis": axis, "keepdims": keepdims, "mean": mean})


def _axis_of(op):
    """The reduced axes: the static op's attr, or the dynamic op's second input (a tensor)."""
    return op.inputs[1] if len(op.inputs) > 1 else op.get_attr("axis")


def _g_sum(op, dy):
    return [reduce_grad(dy, op.inputs[0], _axis_of(op), op.get_attr("keepdims"))]


def _g_mean(op, dy):
    return [reduce_grad(dy, op.inputs[0], _axis_of(op), op.get_attr("keepdims"), mean=True)]


def _g_extreme(op, dy):
    x, y = op.inputs[0], op.outputs[0]
    axis, keepdims = _axis_of(op), op.get_attr("keepdims")
    mask = cast(equal(x, reduce_grad(y, x, axis, keepdims)), dy.dtype)
    count = reduce_grad(reduce_sum(mask, axis=axis, keepdims=keepdims), x, axis, keepdims)
    return [divide(multiply(mask, reduce_grad(dy, x, axis, keepdims)), count)]


def _g_prod(op, dy):
    x, y = op.inputs[0], op.outputs[0]
    axis, keepdims = _axis_of(op), op.get_attr("keepdims")
    return [multiply(reduce_grad(dy, x, axis, keepdims), divide(reduce_grad(y, x, axis, keepdims), x))]


# what np.sum/np.mean call, without their wrapper: its overhead, and NumPy attributing a kernel's
# floating-point warnings to its own module, which eager/fp_semantics.py's filter must not silence
_add_reduce = np.add.reduce
_ARRAY_TYPES = (np.ndarray, np.generic)       # `.size` is np.size without its Python wrapper


def _sum_kernel(x, axis=None, keepdims=False):
    return _add_reduce(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


def _mean_kernel(x, axis=None, keepdims=False):
    if x.dtype.kind in "iu":
        s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
        n = x.size // max(np.size(s), 1) if x.size else 1
        return (np.trunc(s / max(n, 1))).astype(x.dtype)
    s = _add_reduce(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    n = x.size // max(s.size if isinstance(s, _ARRAY_TYPES) else np.size(s), 1)
    return np.true_divide(s, n, dtype=x.dtype) if n else np.true_divide(s, 0, dtype=x.dtype)


def _extreme_kernel(fn):
    def kernel(x, axis=None, keepdims=False):
        if x.size == 0:
            raise ValueError(f"cannot reduce an empty tensor of shape {x.shape} with {fn.__name__}")
        return fn(x, axis=axis, keepdims=keepdims)
    return kernel


SUM = op("Sum", _sum_kernel, _infer_reduce_for("Sum"), _g_sum)
MEAN = op("Mean", _mean_kernel, _infer_reduce_for("Mean"), _g_mean)
MAX = op("Max", _extreme_kernel(np.max), _infer_reduce_for("Max"), _g_extreme)
MIN = op("Min", _extreme_kernel(np.min), _infer_reduce_for("Min"), _g_extreme)
PROD = op("Prod", lambda x, axis=None, keepdims=False: np.multiply.reduce(x, axis=axis, keepdims=keepdims, dtype=x.dtype),
          _infer_reduce_for("Prod"), _g_prod)
ANY = op("Any", lambda x, axis=None, keepdims=False: np.any(x, axis=axis, keepdims=keepdims), _infer_reduce_for("Any"))
ALL = op("All", lambda x, axis=None, keepdims=False: np.all(x, axis=axis, keepdims=keepdims), _infer_reduce_for("All"))


# ------------------------------------------------------------------ axes known only at run time
# TF's reductions take the axes as an input tensor; here a static axis is an attr (the common case, which
# shape inference and the passes understand) and an axis known only when the graph runs (a placeholder, a
# loop variable) makes a `ReduceDynamic` op: the same kernels, the output shape inferred as far as it can be.

def _is_dynamic(axis) -> bool:
    return getattr(axis, "_is_symbolic", False) and getattr(axis, "_static_value", None) is None


def _run_axes(axis, ndim: int, opname: str) -> tuple:
    """The run-time axis value as sorted, non-negative, distinct axes (TF's checks)."""
    flat = np.asarray(axis).reshape(-1)
    out = []
    for a in flat.tolist():
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise InvalidArgumentError(f"{opname}: reduction axis {a} is out of range for a tensor of rank {ndim}",
                                       op_name=opname)
        a = a % ndim if ndim else 0
        if a in out:
            raise InvalidArgumentError(f"{opname}: axis {a} appears twice in the reduction axes {flat.tolist()}",
                                       op_name=opname)
        out.append(a)
    return tuple(sorted(out))


def _dynamic_kernel(x, axis, kind, keepdims=False):
    return _STATIC[kind].kernel(x, axis=_run_axes(axis, np.ndim(x), kind), keepdims=keepdims)


def _infer_dynamic(specs, attrs):
    s, a = specs[0], specs[1]
    if attrs["kind"] not in _STATIC:
        raise InvalidArgumentError(f"ReduceDynamic: unknown reduction kind {attrs['kind']!r:.40}",
                                   op_name="ReduceDynamic")
    check_reduce_dtype(attrs["kind"], s.dtype)
    if not a.dtype.is_integer:
        raise InvalidArgumentError(f"{attrs['kind']}: reduction axes must be an integer tensor, got "
                                   f"{a.dtype.name}", op_name=attrs["kind"])
    if a.shape is not None and len(a.shape) > 1:
        raise InvalidArgumentError(f"{attrs['kind']}: reduction axes must be a scalar or a vector, got shape "
                                   f"{list(a.shape)}", op_name=attrs["kind"])
    out_dtype = bool_ if attrs["kind"] in ("Any", "All") else s.dtype
    if s.shape is None:
        return [Spec(None, out_dtype)]
    rank = len(s.shape)
    if attrs.get("keepdims"):
        return [Spec((None,) * rank, out_dtype)]      # which dims become 1 is known only at run time
    if a.shape is not None and (len(a.shape) == 0 or a.shape[0] is not None):
        n = 1 if len(a.shape) == 0 else a.shape[0]
        return [Spec((None,) * max(rank - n, 0), out_dtype)]
    return [Spec(None, out_dtype)]


def _g_dynamic(op, dy):
    grad = _DYNAMIC_GRADS.get(op.get_attr("kind"))
    return [None, None] if grad is None else grad(op, dy) + [None]


REDUCE_DYNAMIC = op("ReduceDynamic", _dynamic_kernel, _infer_dynamic, _g_dynamic, attrs=("kind", "keepdims"),
                    doc="A reduction (attr kind: Sum, Mean, Max, Min, Prod, Any, All) over axes given as an "
                        "input tensor, known only when the graph runs.")


def _reduce_grad_dynamic_kernel(dy, x, axis, keepdims=False, mean=False):
    return _reduce_grad_kernel(dy, x, axis=_run_axes(axis, np.ndim(x), "ReduceGrad"), keepdims=keepdims, mean=mean)


def _g_reduce_grad_dynamic(op, g):
    fn = reduce_mean if op.get_attr("mean") else reduce_sum
    return [fn(g, axis=op.inputs[2], keepdims=op.get_attr("keepdims")), None, None]


REDUCE_GRAD_DYNAMIC = op("ReduceGradDynamic", _reduce_grad_dynamic_kernel,
                         lambda s, a: [Spec(s[1].shape, s[0].dtype)], _g_reduce_grad_dynamic,
                         attrs=("keepdims", "mean"),
                         doc="ReduceGrad with the reduced axes as an input tensor.")


def _reduce(opdef, x, axis, keepdims, name):
    if axis is None and type(x) is Tensor and x._value.dtype.kind in "fiu":   # eager, all axes: numbers pass
        if opdef is not ANY and opdef is not ALL:                             # every check but Any's and All's
            return execute(opdef, (x,), {"axis": None, "keepdims": bool(keepdims)}, name)
    x = convert_to_tensor(x)
    check_reduce_dtype(opdef.name, x.dtype)
    if _is_dynamic(axis):         # the op's inference checks the axes tensor's dtype and rank
        return execute(REDUCE_DYNAMIC, (x, axis), {"kind": opdef.name, "keepdims": bool(keepdims)}, name)
    axis_t = as_attr_tuple(axis, "axis", opdef.name)
    attrs = {"axis": axis_t, "keepdims": bool(keepdims)}
    rank = x.shape.rank
    if rank is not None and axis_t is not None:
        for a in axis_t:
            if not -rank <= a < max(rank, 1):
                raise InvalidArgumentError(
                    f"{opdef.name}: axis {a} is out of range for a tensor of shape {x.shape} (rank {rank})",
                    op_name=opdef.name)
        attrs["axis"] = tuple(sorted(set(a % rank if rank else 0 for a in axis_t)))
    return execute(opdef, (x,), attrs, name)


_STATIC = {o.name: o for o in (SUM, MEAN, MAX, MIN, PROD, ANY, ALL)}
_DYNAMIC_GRADS = {"Sum": _g_sum, "Mean": _g_mean, "Max": _g_extreme, "Min": _g_extreme, "Prod": _g_prod}


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(SUM, input_tensor, axis, keepdims, name)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(MEAN, input_tensor, axis, keepdims, name)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(MAX, input_tensor, axis, keepdims, name)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(MIN, input_tensor, axis, keepdims, name)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(PROD, input_tensor, axis, keepdims, name)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(ANY, input_tensor, axis, keepdims, name)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(ALL, input_tensor, axis, keepdims, name)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) computed stably (composite)."""
    m = stop_gradient(reduce_max(input_tensor, axis=axis, keepdims=True))
    s = reduce_sum(exp(subtract(input_tensor, m)), axis=axis, keepdims=True)
    out = add(log(s), m)
    if not keepdims:
        out = squeeze(out, axis=as_attr_tuple(axis, "axis", "reduce_logsumexp") if axis is not None else None)
    return out


def _infer_arg(specs, attrs, opname="ArgMax"):
    s = specs[0]
    check_reduce_dtype(opname, s.dtype)
    if s.shape is None:
        return [Spec(None, attrs["output_type"])]
    axis = attrs["axis"] % max(len(s.shape), 1)
    return [Spec(tuple(d for i, d in enumerate(s.shape) if i != axis), attrs["output_type"])]


def _arg_kernel(fn):
    def kernel(x, axis, output_type):
        if x.shape[axis] == 0:
            raise ValueError(f"cannot take {fn.__name__} along an empty axis of shape {x.shape}")
        return fn(x, axis=axis).astype(output_type.as_numpy_dtype)
    return kernel


ARGMAX = op("ArgMax", _arg_kernel(np.argmax), _infer_arg)
ARGMIN = op("ArgMin", _arg_kernel(np.argmin), lambda specs, attrs: _infer_arg(specs, attrs, "ArgMin"))


def _arg(opdef, x, axis, output_type, name):
    x = convert_to_tensor(x)
    check_reduce_dtype(opdef.name, x.dtype)
    rank = x.shape.rank
    if _is_dynamic(axis):
        raise InvalidArgumentError(f"{opdef.name}: the axis must be known when the graph is built (a Python int "
                                   f"or a constant); got a tensor whose value is only known at run time",
                                   op_name=opdef.name)
    axes = (0,) if axis is None else as_attr_tuple(axis, "axis", opdef.name)       # a graph constant is known: use it
    if len(axes) != 1:
        raise InvalidArgumentError(f"{opdef.name}: axis must be a single int, got {list(axes)}", op_name=opdef.name)
    axis = axes[0]
    if rank is not None and not -rank <= axis < max(rank, 1):
        raise InvalidArgumentError(f"{opdef.name}: axis {axis} is out of range for shape {x.shape}",
                                   op_name=opdef.name)
    if rank:
        axis %= rank
    return execute(opdef, (x,), {"axis": axis, "output_type": as_dtype(output_type)}, name)


def argmax(input, axis=None, output_type=int64, name=None):
    return _arg(ARGMAX, input, axis, output_type, name)


def argmin(input, axis=None, output_type=int64, name=None):
    return _arg(ARGMIN, input, axis, output_type, name)
