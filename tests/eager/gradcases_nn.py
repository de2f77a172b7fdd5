"""Gradient cases for eager/ops/nn.py, nn_conv.py, nn_pool.py, debugging.py and tensor_array.py."""
import numpy as np

import eager as ek
from eager.ops import nn_conv, nn_pool_relu
from eager.dispatch import execute
from gradcheck import GradCase


def grad_of(f, wrt=0):
    """(*xs) -> d(sum f)/d xs[wrt], computed with an inner tape so the outer tape records the gradient ops."""
    def g(*xs):
        with ek.GradientTape() as t:
            t.watch(xs[wrt])
            y = f(*xs)
        return t.gradient(y, xs[wrt])
    return g


def away_from_zero(*shapes):
    """Normal samples pushed away from 0 (kinks of relu & co.)."""
    return lambda rng: [np.sign(a) * (np.abs(a) + 0.1) for a in (rng.standard_normal(s) for s in shapes)]


def distinct(*shapes):
    """Values whose pairwise gaps exceed the finite-difference step (no max-pool ties)."""
    def make(rng):
        out = []
        for s in shapes:
            n = int(np.prod(s))
            out.append((rng.permutation(n) * 0.1 + rng.uniform(0, 0.01, n)).reshape(s))
        return out
    return make


def _labels(shape, axis=-1):
    rng = np.random.default_rng(1)
    p = rng.uniform(0.1, 1.0, shape)
    return ek.constant(p / p.sum(axis=axis, keepdims=True))


_SPARSE = ek.constant(np.array([[0, 2], [1, 1]], dtype=np.int32))
_CONV_INPUT_SIZES = (2, 5, 5, 3)


def _conv(strides, padding, dilations=None):
    return lambda x, f: ek.nn.conv2d(x, f, strides, padding, dilations=dilations)


def _backprop_filter(x, dy):
    return execute(nn_conv.CONV2D_FILTER, (x, ek.constant(np.array([3, 3, 3, 2], np.int32)), dy),
                   {"strides": (2, 2), "padding": "SAME", "dilations": (1, 1)})


_POOL_Z = np.array([-3.0, 0.5, 2.0, -1.0, 1.5, -2.5, 0.25, 3.5, -0.5, -4.0, -1.5, -2.0, 1.0, 2.5, -3.5, 0.75] * 2
                   ).reshape(1, 4, 4, 2)          # windows with a positive maximum and one all negative


def _relu_max_pool_grad(dy):
    z = ek.constant(_POOL_Z)
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    return execute(nn_pool_relu.RELU_MAX_POOL_GRAD, (z, ek.nn.max_pool2d(ek.nn.relu(z), 2, 2, "VALID"), dy), attrs)


def _ta_write_read(x, v):
    ta = ek.TensorArray(ek.float64, size=3)
    ta = ta.unstack(x).write(1, v)
    return [ta.stack(), ta.read(1) * 2.0, ta.read(2)]


def _ta_dynamic(v, w):
    ta = ek.TensorArray(ek.float64, size=0, dynamic_size=True)
    ta = ta.write(0, v).write(2, w).write(0, w * 3.0)
    return ta.stack()


def _ta_unknown_shape(v):
    ta = ek.TensorArray(ek.float64, size=2)
    return ta.write(1, v).stack()


CASES = [
    GradCase("Relu", ek.nn.relu, make_inputs=away_from_zero((3, 4))),
    GradCase("ReluGrad", grad_of(lambda x: ek.nn.relu(x) * x), make_inputs=away_from_zero((3, 4))),
    GradCase("LeakyRelu", lambda x: ek.nn.leaky_relu(x, 0.3), make_inputs=away_from_zero((5,))),
    GradCase("LeakyReluGrad", grad_of(lambda x: ek.nn.leaky_relu(x, 0.3) * x), make_inputs=away_from_zero((5,))),
    GradCase("Elu", ek.nn.elu, make_inputs=away_from_zero((2, 3))),
    GradCase("EluGrad", grad_of(lambda x: ek.nn.elu(x) * x), make_inputs=away_from_zero((2, 3))),
    GradCase("Softmax", ek.nn.softmax, [(3, 4)]),
    GradCase("Softmax", lambda x: ek.nn.softmax(x, axis=0), [(3, 4)], id="softmax_axis0"),
    GradCase("LogSoftmax", ek.nn.log_softmax, [(2, 5)]),
    GradCase("LogSoftmax", lambda x: ek.nn.log_softmax(x, axis=1), [(2, 3, 2)], id="log_softmax_axis1"),
    GradCase("SoftmaxCrossEntropyWithLogits",
             lambda lab, x: ek.nn.softmax_cross_entropy_with_logits(lab, x),
             make_inputs=lambda rng: [rng.uniform(0.1, 1, (3, 4)), rng.standard_normal((3, 4))], id="xent"),
    GradCase("SoftmaxCrossEntropyWithLogits",
             lambda x: ek.nn.softmax_cross_entropy_with_logits(_labels((2, 3, 4), 1), x, axis=1),
             [(2, 3, 4)], id="xent_axis1"),
    GradCase("SoftmaxCrossEntropyWithLogits",
             grad_of(lambda x: ek.nn.softmax_cross_entropy_with_logits(_labels((2, 4)), x)), [(2, 4)],
             id="xent_second_order"),
    GradCase("SparseSoftmaxCrossEntropyWithLogits",
             lambda x: ek.nn.sparse_softmax_cross_entropy_with_logits(_SPARSE, x), [(2, 2, 3)], id="sparse_xent"),
    GradCase("SparseSoftmaxCrossEntropyWithLogits",
             grad_of(lambda x: ek.nn.sparse_softmax_cross_entropy_with_logits(_SPARSE, x)), [(2, 2, 3)],
             id="sparse_xent_second_order"),
    GradCase("BiasAdd", ek.nn.bias_add, [(2, 3, 4), (4,)]),
    GradCase("L2Loss", ek.nn.l2_loss, [(3, 2)]),
    GradCase("Conv2D", _conv(1, "SAME"), [(2, 5, 5, 3), (3, 3, 3, 2)], id="conv_same_s1"),
    GradCase("Conv2D", _conv(2, "VALID"), [(1, 6, 7, 2), (2, 3, 2, 3)], id="conv_valid_s2"),
    GradCase("Conv2D", _conv(2, "SAME"), [(1, 6, 5, 2), (3, 2, 2, 2)], id="conv_same_s2"),
    GradCase("Conv2D", _conv(1, "VALID", dilations=2), [(1, 6, 6, 1), (2, 2, 1, 2)], id="conv_dilated"),
    GradCase("Conv2D", _conv(1, [[0, 0], [1, 0], [0, 2], [0, 0]]), [(1, 4, 4, 1), (2, 2, 1, 1)],
             id="conv_explicit_padding"),
    GradCase("Conv2DBackpropInput",
             lambda f, dy: ek.nn.conv2d_transpose(dy, f, _CONV_INPUT_SIZES, 2, "SAME"), [(3, 3, 3, 2), (2, 3, 3, 2)],
             id="conv_backprop_input"),
    GradCase("Conv2DBackpropFilter", _backprop_filter, [(2, 5, 5, 3), (2, 3, 3, 2)], id="conv_backprop_filter"),
    GradCase("MaxPool", lambda x: ek.nn.max_pool2d(x, 2, 2, "VALID"), make_inputs=distinct((2, 4, 4, 2)),
             id="max_pool_valid"),
    GradCase("MaxPool", lambda x: ek.nn.max_pool2d(x, 3, 2, "SAME"), make_inputs=distinct((1, 5, 4, 2)),
             id="max_pool_same"),
    GradCase("MaxPoolGrad", grad_of(lambda x: ek.nn.max_pool2d(x, 2, 1, "SAME") ** 2),
             make_inputs=distinct((1, 3, 3, 2))),
    GradCase("MaxPoolGradGrad", grad_of(grad_of(lambda x: ek.nn.max_pool2d(x, 2, 1, "SAME") ** 3)),
             make_inputs=distinct((1, 3, 3, 1))),
    GradCase("ReluMaxPoolGrad", _relu_max_pool_grad, [(1, 2, 2, 2)]),
    GradCase("AvgPool", lambda x: ek.nn.avg_pool2d(x, 3, 2, "SAME"), [(2, 5, 4, 2)], id="avg_pool_same"),
    GradCase("AvgPool", lambda x: ek.nn.avg_pool2d(x, [2, 3], [1, 2], "VALID"), [(1, 4, 5, 1)], id="avg_pool_valid"),
    GradCase("AvgPoolGrad", grad_of(lambda x: ek.nn.avg_pool2d(x, 2, 1, "SAME") ** 2), [(1, 3, 3, 2)]),
    GradCase("CheckNumerics", lambda x: ek.debugging.check_numerics(x, "x"), [(3,)]),
    GradCase("TensorListSetItem", _ta_write_read, [(3, 2), (2,)], id="ta_write_read"),
    GradCase("TensorListGetItem", _ta_write_read, [(3, 2), (2,)], id="ta_read"),
    GradCase("TensorListSetItem", _ta_dynamic, [(2,), (2,)], id="ta_dynamic"),
    GradCase("TensorListResizeLike", grad_of(_ta_dynamic), [(2,), (2,)], id="ta_resize_second_order"),
    GradCase("TensorListSetItem", _ta_unknown_shape, [(2, 2)], id="ta_unknown_element_shape"),
    GradCase("TensorListConcat", lambda x: ek.TensorArray(ek.float64, 2).unstack(x).concat(), [(2, 3, 2)]),
]
