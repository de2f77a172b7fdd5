"""Softmax, log-softmax and the softmax cross entropies of the `nn` namespace (re-exported by `nn.py`).

`Softmax` and `LogSoftmax` subtract the running max before `exp` (stable for
any logits).  `SoftmaxCrossEntropyWithLogits` (dense labels) and
`SparseSoftmaxCrossEntropyWithLogits` (integer labels) compute the loss and
its gradient (`backprop`, their second output) in one pass, as TensorFlow
does; their gradient rules add the second-order term when a gradient of the
gradient is asked for.

Imports: numpy, the eager core, `math`, `reduction`, `array`.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import float_tensor, static_int
from ._define import EMPTY, is_known_zero, normalize_axis
from .array import expand_dims
from .math import add, exp, multiply, negative, subtract
from .reduction import reduce_sum


# ------------------------------------------------------------------ softmax
_max_reduce = np.maximum.reduce   # ufunc methods: the same arithmetic as np.max/np.sum, less wrapper overhead
_sum_reduce = np.add.reduce


def _stable_shift(x, axis):
    return x - _max_reduce(x, axis=axis, keepdims=True, initial=-np.inf)


def _softmax_kernel(x, axis):
    e = np.exp(_stable_shift(x, axis))
    e /= _sum_reduce(e, axis=axis, keepdims=True)
    return e


def _log_softmax_kernel(x, axis):
    s = _stable_shift(x, axis)
    s -= np.log(_sum_reduce(np.exp(s), axis=axis, keepdims=True))
    return s


def _infer_axis_op(specs, attrs):
    s = specs[0]
    if s.shape is not None:
        if len(s.shape) == 0:
            raise InvalidArgumentError("softmax: logits must have rank >= 1, got a scalar")
        normalize_axis(attrs["axis"], len(s.shape), "Softmax")
    return [Spec(s.shape, s.dtype)]


def _g_softmax(op, dy):
    y, axis = op.outputs[0], op.get_attr("axis")
    return [multiply(y, subtract(dy, reduce_sum(multiply(dy, y), axis=axis, keepdims=True)))]


def _g_log_softmax(op, dy):
    y, axis = op.outputs[0], op.get_attr("axis")
    return [subtract(dy, multiply(exp(y), reduce_sum(dy, axis=axis, keepdims=True)))]


SOFTMAX = op("Softmax", _softmax_kernel, _infer_axis_op, _g_softmax)
LOG_SOFTMAX = op("LogSoftmax", _log_softmax_kernel, _infer_axis_op, _g_log_softmax)


def _axis_attr(opname, t, axis):
    axis = static_int(axis, "axis", opname)
    r = t.shape.rank
    if r is not None:
        if r == 0:
            raise InvalidArgumentError(f"{opname}: logits must have rank >= 1, got a scalar", op_name=opname)
        axis = normalize_axis(axis, r, opname)
    return {"axis": axis}


def softmax(logits, axis=-1, name=None):
    """exp(logits) / sum(exp(logits), axis), computed stably."""
    t = float_tensor("Softmax", logits, "logits")
    return execute(SOFTMAX, (t,), _axis_attr("Softmax", t, axis), name)


def log_softmax(logits, axis=-1, name=None):
    """logits - log(sum(exp(logits), axis)), computed stably."""
    t = float_tensor("LogSoftmax", logits, "logits")
    return execute(LOG_SOFTMAX, (t,), _axis_attr("LogSoftmax", t, axis), name)


# ------------------------------------------------------------------ cross entropies
def _xent_kernel(labels, logits, axis):
    shifted = logits - _max_reduce(logits, axis=axis, keepdims=True, initial=-np.inf)     # `_stable_shift`
    e = np.exp(shifted)
    total = _sum_reduce(e, axis=axis, keepdims=True)
    shifted -= np.log(total)                      # now log-softmax
    out = shifted if labels.shape == shifted.shape else None      # in place unless labels broadcast
    loss = _sum_reduce(np.multiply(labels, shifted, out=out), axis=axis)
    loss = np.negative(loss, out=loss) if type(loss) is np.ndarray else np.asarray(-loss, dtype=logits.dtype)
    e /= total                                    # now softmax
    # the exact gradient also for labels that do not sum to 1 (TensorFlow assumes they do), rounded as
    # `e * sum(labels) - labels`
    bp = np.multiply(e, _sum_reduce(labels, axis=axis, keepdims=True), out=e if out is not None else None)
    return loss, np.subtract(bp, labels, out=bp if out is not None else None)


def _infer_xent(specs, attrs):
    labels, logits = specs
    if labels.dtype is not logits.dtype:
        raise InvalidArgumentError(f"SoftmaxCrossEntropyWithLogits: labels ({labels.dtype.name}) and logits "
                                   f"({logits.dtype.name}) must have the same dtype",
                                   op_name="SoftmaxCrossEntropyWithLogits")
    if labels.shape is not None and logits.shape is not None and (
            len(labels.shape) != len(logits.shape) or
            any(a is not None and b is not None and a != b for a, b in zip(labels.shape, logits.shape))):
        raise InvalidArgumentError(f"SoftmaxCrossEntropyWithLogits: labels and logits must have the same shape, "
                                   f"got {list(labels.shape)} and {list(logits.shape)}",
                                   op_name="SoftmaxCrossEntropyWithLogits")
    shape = logits.shape if logits.shape is not None else labels.shape
    if shape is None:
        return [Spec(None, logits.dtype), Spec(None, logits.dtype)]
    axis = attrs["axis"] % len(shape)
    return [Spec(tuple(d for i, d in enumerate(shape) if i != axis), logits.dtype), Spec(shape, logits.dtype)]


def _second_order(gg, logits, axis, labels=None):
    """Gradients reaching (logits, labels) through the `backprop` output, or None when gg is zero.

    backprop = softmax(logits) * sum(labels) - labels (sum(labels) = 1 for sparse labels).
    """
    if is_known_zero(gg):
        return None
    sm = softmax(logits, axis=axis)
    gs = reduce_sum(multiply(gg, sm), axis=axis, keepdims=True)
    dlogits = multiply(subtract(gg, gs), sm)
    if labels is None:
        return dlogits, None
    return multiply(dlogits, reduce_sum(labels, axis=axis, keepdims=True)), subtract(gs, gg)


def _g_xent(op, dloss, gg):
    labels, logits = op.inputs
    axis = op.get_attr("axis")
    skip = getattr(op, "skip_input_indices", ())   # labels are usually data: no gradient wanted
    d = expand_dims(dloss, axis)
    dlogits = None if 1 in skip else multiply(d, op.outputs[1])
    dlabels = None if 0 in skip else multiply(d, negative(log_softmax(logits, axis=axis)))
    second = _second_order(gg, logits, axis, labels)
    if second is not None:
        dlogits = None if 1 in skip else add(dlogits, second[0])
        dlabels = None if 0 in skip else add(dlabels, second[1])
    return [dlabels, dlogits]


XENT = op("SoftmaxCrossEntropyWithLogits", _xent_kernel, _infer_xent, _g_xent, num_outputs=2,
          doc="(loss, backprop = softmax(logits) * sum(labels) - labels) along attr `axis`.")


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits), axis): one loss per example (dense labels)."""
    if type(logits) is Tensor and type(labels) is Tensor and type(axis) is int:    # eager fast path
        lv, yv = logits._value, labels._value
        if lv.dtype.kind == "f" and lv.dtype == yv.dtype and lv.shape == yv.shape and -lv.ndim <= axis < lv.ndim:
            loss, _ = execute(XENT, (labels, logits), {"axis": axis % lv.ndim}, name)
            return loss
    logits = float_tensor("SoftmaxCrossEntropyWithLogits", logits, "logits")
    labels = labels if isinstance(labels, Tensor) else convert_to_tensor(labels, dtype=logits.dtype)
    attrs = _axis_attr("SoftmaxCrossEntropyWithLogits", logits, axis)
    if not (type(labels) is Tensor and type(logits) is Tensor and labels._value.shape == logits._value.shape
            and labels._value.dtype == logits._value.dtype):   # eager operands that match need no inference
        _infer_xent([Spec(labels.shape.dims, labels.dtype), Spec(logits.shape.dims, logits.dtype)], attrs)
    loss, _ = execute(XENT, (labels, logits), attrs, name)
    return loss


def _sparse_xent_kernel(labels, logits):
    n = logits.shape[-1]
    if labels.size and (labels.min() < 0 or labels.max() >= n):
        bad = labels[(labels < 0) | (labels >= n)].reshape(-1)[0]
        raise InvalidArgumentError(f"SparseSoftmaxCrossEntropyWithLogits: received a label value of {bad} which "
                                   f"is outside the valid range of [0, {n})",
                                   op_name="SparseSoftmaxCrossEntropyWithLogits")
    logp = _log_softmax_kernel(logits, -1)
    picked = np.take_along_axis(logp, labels[..., None].astype(np.intp), axis=-1)[..., 0]
    backprop = np.exp(logp)
    np.put_along_axis(backprop, labels[..., None].astype(np.intp),
                      np.take_along_axis(backprop, labels[..., None].astype(np.intp), axis=-1) - 1, axis=-1)
    return np.asarray(-picked, dtype=logits.dtype), backprop


def _infer_sparse_xent(specs, attrs):
    labels, logits = specs
    name = "SparseSoftmaxCrossEntropyWithLogits"
    if not labels.dtype.is_integer:
        raise InvalidArgumentError(f"{name}: labels must be an integer tensor, got {labels.dtype.name}",
                                   op_name=name)
    if logits.shape is not None and len(logits.shape) == 0:
        raise InvalidArgumentError(f"{name}: logits must have rank >= 1, got a scalar", op_name=name)
    if labels.shape is not None and logits.shape is not None and (
            len(labels.shape) != len(logits.shape) - 1 or
            any(a is not None and b is not None and a != b for a, b in zip(labels.shape, logits.shape))):
        raise InvalidArgumentError(f"{name}: labels must have the shape of logits without the last dimension, "
                                   f"got labels {list(labels.shape)} and logits {list(logits.shape)}",
                                   op_name=name)
    lshape = None if logits.shape is None else tuple(logits.shape[:-1])
    return [Spec(lshape if lshape is not None else labels.shape, logits.dtype), Spec(logits.shape, logits.dtype)]


def _g_sparse_xent(op, dloss, gg):
    logits = op.inputs[1]
    dlogits = multiply(expand_dims(dloss, -1), op.outputs[1])
    second = _second_order(gg, logits, -1)
    return [None, dlogits if second is None else add(dlogits, second[0])]


SPARSE_XENT = op("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_kernel, _infer_sparse_xent,
                 _g_sparse_xent, num_outputs=2,
                 doc="(loss, backprop) for integer class labels over the last axis of logits.")


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """-log_softmax(logits)[..., labels]: one loss per example (integer class labels)."""
    logits = float_tensor("SparseSoftmaxCrossEntropyWithLogits", logits, "logits")
    labels = convert_to_tensor(labels)
    _infer_sparse_xent([Spec(labels.shape.dims, labels.dtype), Spec(logits.shape.dims, logits.dtype)], EMPTY)
    loss, _ = execute(SPARSE_XENT, (labels, logits), EMPTY, name)
    return loss
