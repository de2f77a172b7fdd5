"""The `nn` namespace (`eager.nn`): activations, softmax, losses, bias_add, dropout.

Primitives carry TensorFlow's op names (`Relu`, `Softmax`,
`SoftmaxCrossEntropyWithLogits`, ...) and numerically stable NumPy kernels
(softmax and log-softmax subtract the running max; the cross-entropy ops
compute the loss and its gradient (`backprop`, their second output) in one
pass, as TensorFlow does).  Activation gradients go through small `*Grad`
primitives (`ReluGrad(dy, y) = dy * (y > 0)`), each with its own gradient rule,
so second derivatives work and the eager hot path stays one kernel per op.
Composites (`relu6`, `sigmoid_cross_entropy_with_logits`, `dropout`,
`softplus`, `silu`) are plain Python over public ops.  Convolution and pooling
live in `nn_conv.py` and `nn_pool.py` and are re-exported here.

Imports: numpy, the eager core, `math`, `reduction`, `array`, `random`.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..convert import convert_to_tensor
from .. import buffers
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from . import random as _random
from ._args import static_int
from ._define import EMPTY, infer_same, infer_same_float, is_known_zero, normalize_axis
from .array import expand_dims, shape as shape_of, sum_to_like
from .math import (abs as _abs, add, cast, exp, greater_equal, less, log1p, minimum, multiply, negative,
                   reciprocal, sigmoid, subtract, tanh)
from .nn_conv import conv2d, conv2d_transpose
from .nn_pool import avg_pool2d, max_pool2d
from .reduction import reduce_sum

__all__ = ["relu", "relu6", "leaky_relu", "elu", "sigmoid", "tanh", "softplus", "silu", "softmax",
           "log_softmax", "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits", "bias_add", "dropout", "l2_loss", "conv2d", "conv2d_transpose",
           "max_pool2d", "avg_pool2d"]


def _float_tensor(opname, x, arg="features"):
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise InvalidArgumentError(f"{opname}: {arg} must be a floating-point tensor, got {t.dtype.name} "
                                   f"(shape {t.shape})", op_name=opname)
    return t


def _numeric_tensor(opname, x, arg="features"):
    t = convert_to_tensor(x)
    if not t.dtype.is_numeric:
        raise InvalidArgumentError(f"{opname}: {arg} must be a numeric tensor, got {t.dtype.name}",
                                   op_name=opname)
    return t


# ------------------------------------------------------------------ activations
def _pooled(*arrays) -> bool:
    """Big same-shape arrays (not the fusion pass's tracers, which record the plain expression): pool the result."""
    first = arrays[0]
    return (all(type(a) is np.ndarray and a.shape == first.shape for a in arrays)
            and first.nbytes >= buffers.MIN_BYTES)


def _relu_grad_kernel(dy, y):
    if not _pooled(dy, y):
        return np.multiply(dy, y > 0, dtype=dy.dtype)
    positive = np.greater(y, 0, out=buffers.empty(y.shape, np.bool_))    # pooled: no fresh pages per step
    return np.multiply(dy, positive, out=buffers.empty(dy.shape, dy.dtype), dtype=dy.dtype)


def _relu_kernel(x):
    if not _pooled(x):
        return np.maximum(x, np.zeros((), x.dtype))
    return _relu_into(x, buffers.empty(x.shape, x.dtype))


def _relu_grad_into(dy, y, out):
    return np.multiply(dy, y > 0, out=out)


def _relu_into(x, out):
    return np.maximum(x, np.zeros((), x.dtype), out=out)


# extra["inplace"]: the same computation writing into `out` (the memory pass reuses a dead input's buffer)
RELU_GRAD = op("ReluGrad", _relu_grad_kernel, infer_same,
               lambda op, g: [execute(RELU_GRAD, (g, op.inputs[1]), EMPTY), None], elementwise=True,
               extra={"inplace": _relu_grad_into},
               doc="dy * (y > 0): the gradient of Relu given its output y.")
RELU = op("Relu", _relu_kernel, infer_same,
          lambda op, dy: [execute(RELU_GRAD, (dy, op.outputs[0]), EMPTY)], elementwise=True,
          extra={"inplace": _relu_into}, rowwise_exact=True)


def _leaky_kernel(x, alpha):
    return np.where(x > 0, x, x * np.asarray(alpha, x.dtype))


def _leaky_grad_kernel(dy, x, alpha):
    return np.where(x > 0, dy, dy * np.asarray(alpha, dy.dtype))


LEAKY_RELU_GRAD = op("LeakyReluGrad", _leaky_grad_kernel, infer_same,
                     lambda op, g: [execute(LEAKY_RELU_GRAD, (g, op.inputs[1]), op.attrs), None],
                     elementwise=True, doc="dy where x > 0 else alpha * dy.")
LEAKY_RELU = op("LeakyRelu", _leaky_kernel, infer_same,
                lambda op, dy: [execute(LEAKY_RELU_GRAD, (dy, op.inputs[0]), op.attrs)], elementwise=True)


def _elu_kernel(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _elu_grad_kernel(dy, y):
    return np.where(y > 0, dy, dy * (y + 1))


def _g_elu_grad(op, g):
    dy, y = op.inputs
    return [execute(ELU_GRAD, (g, y), EMPTY), multiply(multiply(g, dy), cast(less(y, 0), g.dtype))]


ELU_GRAD = op("EluGrad", _elu_grad_kernel, infer_same_float("EluGrad"), _g_elu_grad, elementwise=True,
              doc="dy where y > 0 else dy * (y + 1): the gradient of Elu given its output y.")
ELU = op("Elu", _elu_kernel, infer_same_float("Elu"),
         lambda op, dy: [execute(ELU_GRAD, (dy, op.outputs[0]), EMPTY)], elementwise=True)


def relu(features, name=None):
    """max(features, 0)."""
    if type(features) is Tensor and features._value.dtype.kind in "fiu":      # eager fast path: numeric
        return execute(RELU, (features,), EMPTY, name)
    return execute(RELU, (_numeric_tensor("Relu", features),), EMPTY, name)


def relu6(features, name=None):
    """min(max(features, 0), 6) (composite)."""
    return minimum(relu(features), 6, name=name)


def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, else alpha * features."""
    return execute(LEAKY_RELU, (_float_tensor("LeakyRelu", features),), {"alpha": float(alpha)}, name)


def elu(features, name=None):
    """features where positive, else exp(features) - 1."""
    return execute(ELU, (_float_tensor("Elu", features),), EMPTY, name)


def softplus(features, name=None):
    """log(1 + exp(features)), computed stably as relu(x) + log1p(exp(-|x|)) (composite)."""
    x = _float_tensor("Softplus", features)
    return add(relu(x), log1p(exp(negative(_abs(x)))), name=name)


def silu(features, name=None):
    """features * sigmoid(features) (a.k.a. swish; composite)."""
    x = _float_tensor("Silu", features)
    return multiply(x, sigmoid(x), name=name)


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
    t = _float_tensor("Softmax", logits, "logits")
    return execute(SOFTMAX, (t,), _axis_attr("Softmax", t, axis), name)


def log_softmax(logits, axis=-1, name=None):
    """logits - log(sum(exp(logits), axis)), computed stably."""
    t = _float_tensor("LogSoftmax", logits, "logits")
    return execute(LOG_SOFTMAX, (t,), _axis_attr("LogSoftmax", t, axis), name)


# ------------------------------------------------------------------ cross entropies
def _xent_kernel(labels, logits, axis):
    shifted = _stable_shift(logits, axis)
    e = np.exp(shifted)
    total = _sum_reduce(e, axis=axis, keepdims=True)
    shifted -= np.log(total)                      # now log-softmax
    loss = -_sum_reduce(labels * shifted, axis=axis)
    e /= total                                    # now softmax
    # the exact gradient also for labels that do not sum to 1 (TensorFlow assumes they do)
    return np.asarray(loss, dtype=logits.dtype), e * _sum_reduce(labels, axis=axis, keepdims=True) - labels


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
    logits = _float_tensor("SoftmaxCrossEntropyWithLogits", logits, "logits")
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
    logits = _float_tensor("SparseSoftmaxCrossEntropyWithLogits", logits, "logits")
    labels = convert_to_tensor(labels)
    _infer_sparse_xent([Spec(labels.shape.dims, labels.dtype), Spec(logits.shape.dims, logits.dtype)], EMPTY)
    loss, _ = execute(SPARSE_XENT, (labels, logits), EMPTY, name)
    return loss


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss, stable for any logits: max(x, 0) - x * z + log1p(exp(-|x|))."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits: both labels and logits must be given")
    x = _float_tensor("SigmoidCrossEntropyWithLogits", logits, "logits")
    z = convert_to_tensor(labels, dtype=x.dtype) if not isinstance(labels, Tensor) else labels
    if z.dtype is not x.dtype:
        raise InvalidArgumentError(f"sigmoid_cross_entropy_with_logits: labels ({z.dtype.name}) and logits "
                                   f"({x.dtype.name}) must have the same dtype")
    if not z.shape.is_compatible_with(x.shape):
        raise InvalidArgumentError(f"sigmoid_cross_entropy_with_logits: logits and labels must have the same "
                                   f"shape, got {x.shape} and {z.shape}")
    return add(subtract(relu(x), multiply(x, z)), log1p(exp(negative(_abs(x)))), name=name)


# ------------------------------------------------------------------ bias_add, l2_loss
def _infer_bias_add(specs, attrs):
    v, b = specs
    if v.dtype is not b.dtype:
        raise InvalidArgumentError(f"BiasAdd: value ({v.dtype.name}) and bias ({b.dtype.name}) must have the "
                                   f"same dtype", op_name="BiasAdd")
    if b.shape is not None and len(b.shape) != 1:
        raise InvalidArgumentError(f"BiasAdd: bias must be 1-D, got shape {list(b.shape)}", op_name="BiasAdd")
    if v.shape is not None:
        if len(v.shape) < 2:
            raise InvalidArgumentError(f"BiasAdd: value must have rank >= 2, got shape {list(v.shape)}",
                                       op_name="BiasAdd")
        if b.shape is not None and None not in (v.shape[-1], b.shape[0]) and v.shape[-1] != b.shape[0]:
            raise InvalidArgumentError(f"BiasAdd: bias of shape {list(b.shape)} does not match the last dimension "
                                       f"of value {list(v.shape)}", op_name="BiasAdd")
    return [Spec(v.shape, v.dtype)]


def _g_bias_add(op, dy):
    skip = getattr(op, "skip_input_indices", ())
    return [None if 0 in skip else dy, None if 1 in skip else sum_to_like(dy, op.inputs[1])]


BIAS_ADD = op("BiasAdd", np.add, _infer_bias_add, _g_bias_add)


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, with bias 1-D along the last (channel) dimension."""
    if data_format not in (None, "NHWC", "N...C"):
        raise InvalidArgumentError(f"BiasAdd: only channels-last data_format is supported, got {data_format!r}",
                                   op_name="BiasAdd")
    v = convert_to_tensor(value)
    b = convert_to_tensor(bias, dtype=v.dtype) if not isinstance(bias, Tensor) else bias
    _infer_bias_add([Spec(v.shape.dims, v.dtype), Spec(b.shape.dims, b.dtype)], EMPTY)
    return execute(BIAS_ADD, (v, b), EMPTY, name)


def _l2_loss_kernel(x):
    return np.asarray(np.add.reduce(np.square(x), axis=None) * np.asarray(0.5, x.dtype), dtype=x.dtype)


L2_LOSS = op("L2Loss", _l2_loss_kernel, lambda s, a: [Spec((), s[0].dtype)],
             lambda op, dy: [multiply(op.inputs[0], dy)])


def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    return execute(L2_LOSS, (_float_tensor("L2Loss", t, "t"),), EMPTY, name)


# ------------------------------------------------------------------ dropout
def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zero each element with probability `rate`, scale the rest by 1 / (1 - rate).

    Draws fresh randomness on every call (and on every run of a graph); `seed`
    follows `eager.random`'s seeding rules.
    """
    x = _float_tensor("dropout", x, "x")
    if isinstance(rate, numbers.Real) and not isinstance(rate, bool):
        if not 0 <= rate < 1:
            raise ValueError(f"dropout: rate must be a number in [0, 1), got {rate}")
        if rate == 0:
            return x
    rate_t = convert_to_tensor(rate, dtype=x.dtype) if not isinstance(rate, Tensor) else cast(rate, x.dtype)
    noise = _random.uniform(shape_of(x) if noise_shape is None else noise_shape, dtype=x.dtype, seed=seed)
    keep = cast(greater_equal(noise, rate_t), x.dtype)
    return multiply(multiply(x, keep), reciprocal(subtract(1, rate_t)), name=name)

from .tf_math import batch_normalization, embedding_lookup, gelu, moments  # noqa: E402,F401 - TF's tf.nn names
__all__ += ["batch_normalization", "embedding_lookup", "gelu", "moments"]

from ..namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
