"""Direct eager gradient rules: backprop's shortcut for the hot ops (`extra["eager_grad"]`).

When backprop runs eagerly and no tape records on this thread, nothing will
differentiate the gradient computation, so an op's rule need not be built
from public ops (which convert, check and dispatch each step).  The rules
here are the public rules of MatMul, AddV2, Sub, Mul, Relu, Sum, Mean,
SoftmaxCrossEntropyWithLogits, BiasAdd, Tanh, Sigmoid and Square (the last four
for RNN cells and Keras layers run eagerly) written on the tensors' NumPy values: the very
kernels (`OPDEF.kernel`) the public rules would dispatch, with the same
arguments in the same order, so the results are the same bits.  A rule
returns None for a case it does not handle (another dtype, a gradient
reaching the labels or a second output), and backprop then runs the public
rule; it does the same when a direct rule raises, so errors keep their
public wording (backprop.py).  Three pair rules (`extra["eager_grad_pair"]`,
backprop.py), for an op over a producer whose output nothing else reads:
MaxPool over a Relu, in one ReluMaxPoolGrad pass; Mean over a Square, without
the Mean's input-sized gradient; Mean of every value of a softmax cross
entropy, as one scaled product of its `backprop` output.

Imports the op modules; `backprop.py` imports this module so the rules are
installed wherever gradients are taken.
"""
from __future__ import annotations

import numpy as np

from .. import buffers
from ..tensor import Tensor
from ._define import is_known_zero, sum_to_shape
from .linalg import MATMUL
from .math import ADD, MUL, NEG, SIGMOID, SQUARE, SUB, TANH
from .nn import BIAS_ADD, RELU, RELU_GRAD
from .nn_pool import MAX_POOL
from .nn_pool_relu import RELU_MAX_POOL_GRAD
from .nn_softmax import XENT
from .reduction import MEAN, REDUCE_GRAD, SUM, reduced_grad_operands


def _summed_to(g, like):
    """`sum_to_like(g, like)` on eager values: `g` itself (a Tensor, or an array wrapped) when shapes agree."""
    shape, arr = like._value.shape, g._value if type(g) is Tensor else g
    if arr.shape == shape:
        return g if type(g) is Tensor else Tensor(g)
    return Tensor(sum_to_shape(arr, shape))


def _float_operands(op, dy):
    """(x, y, skip) of a binary op whose operands and gradient share one float dtype, else None."""
    x, y = op.inputs
    dt = dy._value.dtype
    if dt.kind != "f" or x._value.dtype != dt or y._value.dtype != dt:
        return None
    return x, y, getattr(op, "skip_input_indices", ())


def matmul_grad(op, dy):
    """`linalg._g_matmul`: the products it dispatches through `matmul`, then `sum_to_like`."""
    a, b = op.inputs
    av, bv, dv = a._value, b._value, dy._value
    if not av.dtype == bv.dtype == dv.dtype:
        return None
    kernel = MATMUL.kernel
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    skip = getattr(op, "skip_input_indices", ())
    da = db = None
    if 0 not in skip:
        da = kernel(dv, bv, False, not tb) if not ta else kernel(bv, dv, tb, True)
        da = Tensor(da if da.shape == av.shape else sum_to_shape(da, av.shape))    # the product: an array
    if 1 not in skip:
        db = kernel(av, dv, not ta, False) if not tb else kernel(dv, av, True, ta)
        db = Tensor(db if db.shape == bv.shape else sum_to_shape(db, bv.shape))
    return [da, db]


def add_grad(op, dy):
    """`math._g_add`: `sum_to_like(dy, operand)` for each operand."""
    x, y = op.inputs
    d, xv, yv = dy._value, x._value, y._value
    dt = d.dtype
    if dt.kind != "f" or xv.dtype != dt or yv.dtype != dt:      # `_float_operands`, inline: the hot rule
        return None
    skip = getattr(op, "skip_input_indices", ())
    dshape = d.shape
    return [None if 0 in skip else dy if xv.shape == dshape else Tensor(sum_to_shape(d, xv.shape)),
            None if 1 in skip else dy if yv.shape == dshape else Tensor(sum_to_shape(d, yv.shape))]


def sub_grad(op, dy):
    """`math._g_sub`: `negative(dy)` for the second operand."""
    xys = _float_operands(op, dy)
    if xys is None:
        return None
    x, y, skip = xys
    return [None if 0 in skip else _summed_to(dy, x),
            None if 1 in skip else _summed_to(NEG.kernel(dy._value), y)]


def mul_grad(op, dy):
    """`math._g_mul`: dy * y for x, dy * x for y."""
    xys = _float_operands(op, dy)
    if xys is None:
        return None
    x, y, skip = xys
    return [None if 0 in skip else _summed_to(MUL.kernel(dy._value, y._value), x),
            None if 1 in skip else _summed_to(MUL.kernel(dy._value, x._value), y)]


def relu_grad(op, dy):
    """Relu's rule: ReluGrad of (dy, output)."""
    return [Tensor(RELU_GRAD.kernel(dy._value, op.outputs[0]._value))]


def _reduce_grad(mean):
    def rule(op, dy):
        """`reduction._g_sum` / `_g_mean` (static axes): the ReduceGrad they dispatch."""
        attrs = op.attrs
        return [Tensor(REDUCE_GRAD.kernel(dy._value, op.inputs[0]._value, axis=attrs["axis"],
                                          keepdims=attrs["keepdims"], mean=mean))]
    return rule


def xent_grad(op, dloss, gg):
    """`nn_softmax._g_xent` in its usual case: the logits' gradient only (labels are data) and none reaching the
    `backprop` output: ExpandDims of dloss, then Mul by `backprop`."""
    skip = getattr(op, "skip_input_indices", ())
    dl, bp = dloss._value, op.outputs[1]._value
    if 0 not in skip or 1 in skip or dl.dtype != bp.dtype or dl.dtype.kind != "f" or not is_known_zero(gg):
        return None
    axis = op.attrs["axis"]
    d = dl.reshape(dl.shape[:axis] + (1,) + dl.shape[axis:])      # np.expand_dims(dl, axis): the same view
    return [None, Tensor(MUL.kernel(d, bp))]


def bias_add_grad(op, dy):
    """`nn._g_bias_add`: dy itself for the value, `sum_to_like(dy, bias)` for the bias."""
    skip = getattr(op, "skip_input_indices", ())
    return [None if 0 in skip else dy, None if 1 in skip else _summed_to(dy, op.inputs[1])]


def _same_float(dy, t):
    """The arrays of `dy` and `t` when they share one float dtype (the public rules' Mul checks it), else None."""
    d, v = dy._value, t._value
    if d.dtype != v.dtype or d.dtype.kind != "f":
        return None
    return d, v


def tanh_grad(op, dy):
    """Tanh's rule: `multiply(dy, subtract(1, square(y)))`; the 1 takes y's dtype, as `subtract` converts it."""
    dv = _same_float(dy, op.outputs[0])
    if dv is None:
        return None
    d, y = dv
    return [Tensor(MUL.kernel(d, SUB.kernel(y.dtype.type(1), SQUARE.kernel(y))))]


def sigmoid_grad(op, dy):
    """Sigmoid's rule: `multiply(dy, multiply(y, subtract(1, y)))`."""
    dv = _same_float(dy, op.outputs[0])
    if dv is None:
        return None
    d, y = dv
    return [Tensor(MUL.kernel(d, MUL.kernel(y, SUB.kernel(y.dtype.type(1), y))))]


def square_grad(op, dy):
    """Square's rule: `multiply(dy, multiply(x, 2))`; the 2 takes x's dtype, as `multiply` converts it."""
    dv = _same_float(dy, op.inputs[0])
    if dv is None:
        return None
    return [Tensor(_square_grad(*dv))]


def _square_grad(d, x):
    two = x.dtype.type(2)
    if x.nbytes >= buffers.MIN_BYTES and np.broadcast_shapes(d.shape, x.shape) == x.shape:
        # the same two multiplies, the second in place, in recycled memory: no fresh pages every step
        t = MUL.kernel(x, two, out=buffers.empty(x.shape, x.dtype))
        return MUL.kernel(d, t, out=t)
    return MUL.kernel(d, MUL.kernel(x, two))


def mean_square_grad(mean, square, dy):
    """Mean's rule then Square's: Square's rule takes dy / n unbroadcast (each element is the value
    ReduceGrad would have written there), so the input-sized gradient of the Mean is never written."""
    x = square.inputs[0]._value
    d = dy._value
    if d.dtype != x.dtype or d.dtype.kind != "f" or np.shape(mean.inputs[0]._value) != x.shape:
        return None
    d, n = reduced_grad_operands(d, x.shape, mean.attrs["axis"], mean.attrs["keepdims"])
    return Tensor(_square_grad(MUL.kernel(d, d.dtype.type(1.0 / max(n, 1))), x))


def mean_xent_grad(mean, xent, dy):
    """Mean's rule then the cross entropy's, for a Mean of every loss value (a training loss) and logits
    only: ReduceGrad writes the one value dy * (1/n) into every loss slot, and the cross entropy's rule
    multiplies each slot, expanded along the class axis, into `backprop`; multiplying `backprop` by that
    one value gives each product's bits without the loss-sized gradient, its ExpandDims and the zero
    gradient of the `backprop` output."""
    loss, bp, d = xent.outputs[0]._value, xent.outputs[1]._value, dy._value
    axis, n = mean.attrs["axis"], loss.size
    if d.dtype != bp.dtype or d.dtype.kind != "f" or not n or d.size != 1 or \
            not (axis is None or len(axis) == loss.ndim):      # a Mean of some loss values only
        return None
    scaled = MUL.kernel(d, d.dtype.type(1.0 / n))      # ReduceGrad's value (its `max(n, 1)` is n here)
    return Tensor(MUL.kernel(scaled.reshape((1,) * bp.ndim), bp))


def relu_max_pool_grad(pool, relu, dy):
    """MaxPool's rule then Relu's, on h = relu(z): ReluMaxPoolGrad(h, y, dy), defined as
    ReluGrad(MaxPoolGrad(relu(h), y, dy), relu(h)), has their bits, since relu(h) is h bit for bit."""
    return Tensor(RELU_MAX_POOL_GRAD.kernel(pool.inputs[0]._value, pool.outputs[0]._value, dy._value,
                                            **pool.attrs))


def _install():
    for opdef, rule in ((MATMUL, matmul_grad), (ADD, add_grad), (SUB, sub_grad), (MUL, mul_grad),
                        (RELU, relu_grad), (SUM, _reduce_grad(False)), (MEAN, _reduce_grad(True)),
                        (XENT, xent_grad), (BIAS_ADD, bias_add_grad), (TANH, tanh_grad),
                        (SIGMOID, sigmoid_grad), (SQUARE, square_grad)):
        opdef.extra["eager_grad"] = rule
    # producer -> (rule, the producer's input whose gradient the rule gives)
    MAX_POOL.extra["eager_grad_pair"] = {RELU: (relu_max_pool_grad, 0)}
    MEAN.extra["eager_grad_pair"] = {SQUARE: (mean_square_grad, 0), XENT: (mean_xent_grad, 1)}


_install()
