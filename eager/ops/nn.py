"""The `nn` namespace (`eager.nn`): activations, softmax, losses, bias_add, dropout.

Primitives carry TensorFlow's op names (`Relu`, `Softmax`,
`SoftmaxCrossEntropyWithLogits`, ...) and numerically stable NumPy kernels
(softmax and log-softmax subtract the running max; the cross-entropy ops
compute the loss and its gradient (`backprop`, their second output) in one
pass, as TensorFlow does).  Activation gradients go through small `*Grad`
primitives (`ReluGrad(dy, y) = dy * (y > 0)`), each with its own gradient rule,
so second derivatives work and the eager hot path stays one kernel per op.
Composites (`relu6`, `sigmoid_cross_entropy_with_logits`, `dropout`,
`softplus`, `silu`) are plain Python over public ops.  Softmax and the
softmax cross entropies live in `nn_softmax.py`, convolution and pooling in
`nn_conv.py` and `nn_pool.py`; all are re-exported here.

Imports: numpy, the eager core, `buffers`, `math`, `array`, `random` and the `nn_*` modules.
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
from ._args import float_tensor, numeric_tensor
from ._define import EMPTY, infer_same, infer_same_float
from .array import shape as shape_of, sum_to_like
from .math import (abs as _abs, add, cast, exp, greater_equal, less, log1p, minimum, multiply, negative,
                   reciprocal, sigmoid, subtract, tanh)
from .nn_conv import conv2d, conv2d_transpose
from .nn_pool import avg_pool2d, max_pool2d
from . import nn_pool_relu  # noqa: F401 - declares ReluMaxPoolGrad (made by graph_runtime's pool_activation pass)
from .relu_kernels import ZERO_ROW, relu_into
from .nn_softmax import (log_softmax, softmax, softmax_cross_entropy_with_logits,  # noqa: F401 - tf.nn names
                         sparse_softmax_cross_entropy_with_logits)

__all__ = ["relu", "relu6", "leaky_relu", "elu", "sigmoid", "tanh", "softplus", "silu", "softmax",
           "log_softmax", "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
           "sigmoid_cross_entropy_with_logits", "bias_add", "dropout", "l2_loss", "conv2d", "conv2d_transpose",
           "max_pool2d", "avg_pool2d"]


# ------------------------------------------------------------------ activations
def _pooled(*arrays) -> bool:
    """Big same-shape arrays (not the fusion pass's tracers, which record the plain expression): pool the result."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.nbytes < buffers.MIN_BYTES:    # small: the common, cheap test
        return False
    return all(type(a) is np.ndarray and a.shape == first.shape for a in arrays)


def _relu_grad_kernel(dy, y):
    if not _pooled(dy, y):      # np.greater, not `>`: the fusion pass's tracers then expand this kernel into
        return np.multiply(dy, np.greater(y, 0), dtype=dy.dtype)    # ufunc calls (no opaque call per chunk)
    positive = np.greater(y, 0, out=buffers.empty(y.shape, np.bool_))    # pooled: no fresh pages per step
    return np.multiply(dy, positive, out=buffers.empty(dy.shape, dy.dtype), dtype=dy.dtype)


def _relu_kernel(x):
    if type(x) is not np.ndarray or x.size < ZERO_ROW:      # small, or a fusion recipe's tracer: the plain call
        return np.maximum(x, np.zeros((), x.dtype))
    return relu_into(x, buffers.empty(x.shape, x.dtype) if _pooled(x) else np.empty(x.shape, x.dtype))


def _relu_grad_into(dy, y, out):
    return np.multiply(dy, y > 0, out=out)



# extra["inplace"]: the same computation writing into `out` (the memory pass reuses a dead input's buffer)
RELU_GRAD = op("ReluGrad", _relu_grad_kernel, infer_same,
               lambda op, g: [execute(RELU_GRAD, (g, op.inputs[1]), EMPTY), None], elementwise=True,
               extra={"inplace": _relu_grad_into},
               doc="dy * (y > 0): the gradient of Relu given its output y.")
RELU = op("Relu", _relu_kernel, infer_same,
          lambda op, dy: [execute(RELU_GRAD, (dy, op.outputs[0]), EMPTY)], elementwise=True,
          extra={"inplace": relu_into}, rowwise_exact=True)


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
    return execute(RELU, (numeric_tensor("Relu", features),), EMPTY, name)


def relu6(features, name=None):
    """min(max(features, 0), 6) (composite)."""
    return minimum(relu(features), 6, name=name)


def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, else alpha * features."""
    return execute(LEAKY_RELU, (float_tensor("LeakyRelu", features),), {"alpha": float(alpha)}, name)


def elu(features, name=None):
    """features where positive, else exp(features) - 1."""
    return execute(ELU, (float_tensor("Elu", features),), EMPTY, name)


def softplus(features, name=None):
    """log(1 + exp(features)), computed stably as relu(x) + log1p(exp(-|x|)) (composite)."""
    x = float_tensor("Softplus", features)
    return add(relu(x), log1p(exp(negative(_abs(x)))), name=name)


def silu(features, name=None):
    """features * sigmoid(features) (a.k.a. swish; composite)."""
    x = float_tensor("Silu", features)
    return multiply(x, sigmoid(x), name=name)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss, stable for any logits: max(x, 0) - x * z + log1p(exp(-|x|))."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits: both labels and logits must be given")
    x = float_tensor("SigmoidCrossEntropyWithLogits", logits, "logits")
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
    return execute(L2_LOSS, (float_tensor("L2Loss", t, "t"),), EMPTY, name)


# ------------------------------------------------------------------ dropout
def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zero each element with probability `rate`, scale the rest by 1 / (1 - rate).

    Draws fresh randomness on every call (and on every run of a graph); `seed`
    follows `eager.random`'s seeding rules.
    """
    x = float_tensor("dropout", x, "x")
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
