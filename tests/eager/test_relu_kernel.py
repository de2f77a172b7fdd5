"""Relu's kernel on big contiguous arrays (rows against a row of zeros, NumPy's SIMD loop) gives the bits of
`np.maximum(x, 0)`: NaN payloads, signed zeros, infinities and subnormals included, at every length and
alignment, out of place and in place, eagerly, under @function and in a Session."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.ops import nn as nn_ops, relu_kernels
from tracing import function

SPECIAL = np.array([0x80000000, 0, 0x7fc00001, 0xffc00002, 0x7f800001, 0xff800003, 0x7f800000, 0xff800000,
                    0x3f800000, 0xbf800000, 1, 0x80000001], np.uint32).view(np.float32)


def _values(n, offset=0, dtype=np.float32):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n + offset).astype(dtype)
    special = SPECIAL if dtype == np.float32 else np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf], dtype)
    x[offset::7] = np.resize(special, x[offset::7].shape)
    return x[offset:]


def _bits(a):
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _expected(x):
    return np.maximum(x, np.zeros((), x.dtype))


@pytest.mark.parametrize("n", [relu_kernels.ZERO_ROW - 1, relu_kernels.ZERO_ROW, relu_kernels.ZERO_ROW + 1,
                               3 * relu_kernels.ZERO_ROW + 5, 200_000])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_relu_bits_equal_numpy_maximum(n, offset):
    x = _values(n, offset)
    want = _bits(_expected(x))
    assert np.array_equal(_bits(nn_ops._relu_kernel(x)), want)
    out = np.empty_like(x)
    assert np.array_equal(_bits(relu_kernels.relu_into(x, out)), want)
    inplace = x.copy()
    assert relu_kernels.relu_into(inplace, inplace) is inplace
    assert np.array_equal(_bits(inplace), want)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64])
def test_relu_other_dtypes(dtype):
    if np.dtype(dtype).kind == "f":
        x = _values(relu_kernels.ZERO_ROW + 11, 1, dtype)
    else:
        x = np.arange(-relu_kernels.ZERO_ROW, relu_kernels.ZERO_ROW + 7, dtype=dtype)
    assert np.array_equal(_bits(nn_ops._relu_kernel(x)), _bits(_expected(x)))


def test_relu_non_contiguous_and_shaped():
    x = _values(2 * 64 * 28 * 16).reshape(2, 64, 28, 16)
    view = x[:, ::2]                                # strided: the plain call
    assert np.array_equal(_bits(nn_ops._relu_kernel(view)), _bits(_expected(view)))
    got = nn_ops._relu_kernel(x)
    assert got.shape == x.shape and np.array_equal(_bits(got), _bits(_expected(x)))


def test_relu_same_bits_eager_function_session():
    xv = _values(64 * 28 * 28 * 4).reshape(64, 28, 28, 4)
    want = _bits(_expected(xv))
    assert np.array_equal(_bits(ek.nn.relu(ek.constant(xv)).numpy()), want)
    # a 1x1 max-pool copies its input bit for bit into a fresh array, which Relu then overwrites in place
    in_place = function(lambda t: ek.nn.relu(ek.nn.max_pool2d(t, 1, 1, "VALID")))
    assert np.array_equal(_bits(in_place(ek.constant(xv)).numpy()), want)
    out_of_place = function(lambda t: ek.nn.relu(ek.reshape(t, [-1])))
    assert np.array_equal(_bits(out_of_place(ek.constant(xv)).numpy()), want.reshape(-1))
    g = gr.Graph()
    with g.as_default():
        p = gr.placeholder(ek.float32, xv.shape)
        y = ek.nn.relu(p)
    with gr.Session(graph=g) as sess:
        assert np.array_equal(_bits(sess.run(y, {p: xv})), want)
