"""eager.native (the `[native]` extra): compiled conv and pool kernels give the NumPy kernels' bits.

Every comparison runs the same public-API computation twice, native kernels
forced on for every size and forced off, and asks for equal bits: eagerly,
under `@function` and in a Session.  Without numba the forced-on run takes
the NumPy path too; those tests are skipped, the NumPy-only ones still run.
"""
import importlib.util

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from eager.dispatch import execute
from eager.ops import nn_pool
from eager.registry import get
from tracing import function

RNG = np.random.default_rng(11)
needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed (the [native] extra)")

# (x shape, filter shape, strides, padding, dilations)
PROBLEMS = [
    ((2, 8, 8, 1), (3, 3, 1, 4), (1, 1), "SAME", (1, 1)),          # one input channel
    ((2, 7, 6, 3), (3, 3, 3, 5), (1, 1), "SAME", (1, 1)),
    ((1, 9, 8, 2), (3, 2, 2, 3), (2, 2), "VALID", (1, 1)),         # strided, non-square filter
    ((2, 9, 9, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 2)),          # dilated
]


def _conv_pool_grads(x, f, strides, padding, dilations):
    """loss and d(loss)/d(x, f) of conv -> relu -> 2x2 max-pool (the CNN pattern) through the public API."""
    with ek.GradientTape() as tape:
        tape.watch([x, f])
        h = ek.nn.relu(ek.nn.conv2d(x, f, strides, padding, dilations=dilations))
        loss = ek.reduce_sum(ek.square(ek.nn.max_pool2d(h, 2, 2, "VALID")))
    return [loss] + tape.gradient(loss, [x, f])


def _three_ways(x, f, strides, padding, dilations):
    """The same results eagerly, under @function and in a Session, as NumPy arrays."""
    eager = [t.numpy() for t in _conv_pool_grads(ek.constant(x), ek.constant(f), strides, padding, dilations)]
    traced = function(lambda a, b: _conv_pool_grads(a, b, strides, padding, dilations))
    fn = [t.numpy() for t in traced(ek.constant(x), ek.constant(f))]
    g = gr.Graph()
    with g.as_default():
        xp, fp = gr.placeholder(ek.float32, x.shape), gr.placeholder(ek.float32, f.shape)
        fetches = _conv_pool_grads(xp, fp, strides, padding, dilations)
    with gr.Session(graph=g) as sess:
        session = sess.run(fetches, {xp: x, fp: f})
    return eager, fn, session


def _assert_same_bits(a, b):
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        assert np.array_equal(u.view(np.uint32), v.view(np.uint32))


@needs_numba
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: f"{p[0]}x{p[1]}s{p[2]}{p[3]}d{p[4]}")
def test_native_kernels_give_the_numpy_bits_eagerly_traced_and_in_a_session(problem):
    xs, fs, strides, padding, dilations = problem
    x, f = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(fs).astype(np.float32)
    with native.options(enabled=True, min_bytes=0):
        on = _three_ways(x, f, strides, padding, dilations)
    with native.options(enabled=False):
        off = _three_ways(x, f, strides, padding, dilations)
    for a, b in zip(on, off):
        _assert_same_bits(a, b)
    _assert_same_bits(on[0], on[1])
    _assert_same_bits(on[0], on[2])


POOL = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}


def _pool_grad(x, dy):
    y = execute(nn_pool.MAX_POOL, (ek.constant(x),), POOL)
    return execute(nn_pool.MAX_POOL_GRAD, (ek.constant(x), y, ek.constant(dy)), POOL).numpy()


@needs_numba
@pytest.mark.parametrize("shape", [(3, 6, 8, 4), (2, 7, 5, 3)], ids=["covered", "remainder rows and columns"])
def test_native_max_pool_gradient_routes_ties_and_nan_as_numpy_does(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    x[0, :2, :2, 1] = 1.5                           # a four-way tie: the first maximum takes the gradient
    x[1, 2:4, 0:2, 0] = 0.0
    x[1, 3, 1, 0] = -0.0                            # -0 and +0 are equal: the first one wins
    dy = RNG.standard_normal((shape[0], shape[1] // 2, shape[2] // 2, shape[3])).astype(np.float32)
    for nan_at in (None, (1, 0, 0, 2), (1, 0, 1, 2)):    # a NaN first or second in its window
        xn = x.copy()
        if nan_at is not None:
            xn[nan_at] = np.nan
        with native.options(enabled=True, min_bytes=0):
            on = _pool_grad(xn, dy)
        with native.options(enabled=False):
            off = _pool_grad(xn, dy)
        assert np.array_equal(on.view(np.uint32), off.view(np.uint32)), nan_at
    assert on[0, 0, 0, 1] == dy[0, 0, 0, 1] and on[0, 0, 1, 1] == on[0, 1, 0, 1] == on[0, 1, 1, 1] == 0


@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_dtypes_without_native_kernels_take_the_numpy_path(dtype):
    x = (RNG.standard_normal((2, 6, 6, 3)) * 4).astype(dtype)
    dy = (RNG.standard_normal((2, 3, 3, 3)) * 4).astype(dtype)
    assert not native.use(1 << 40, np.dtype(dtype))
    with native.options(enabled=True, min_bytes=0):
        on = _pool_grad(x, dy)
    with native.options(enabled=False):
        off = _pool_grad(x, dy)
    assert on.dtype == dtype and np.array_equal(on, off)


def test_forcing_the_numpy_path_never_uses_native_kernels():
    with native.options(enabled=False):
        assert not native.use(1 << 40)
        x, f = RNG.standard_normal((1, 6, 6, 2)).astype(np.float32), RNG.standard_normal((3, 3, 2, 2)).astype(
            np.float32)
        eager, fn, session = _three_ways(x, f, (1, 1), "SAME", (1, 1))
    _assert_same_bits(eager, fn)
    _assert_same_bits(eager, session)


def test_small_kernels_stay_on_numpy():
    assert not native.use(native.MIN_BYTES - 1)


def test_native_settings_are_checked(monkeypatch):
    with pytest.raises(ValueError, match="set_enabled"):
        native.set_enabled(1)
    monkeypatch.setenv("GRAPHJIT_NATIVE", "yes")
    with native.options():              # restores the setting afterwards
        with pytest.raises(ValueError, match="GRAPHJIT_NATIVE must be 0 or 1"):
            native.set_enabled(None)
        monkeypatch.setenv("GRAPHJIT_NATIVE", "0")
        native.set_enabled(None)
        assert not native.enabled() and not native.use(1 << 40)



SPECIAL_BITS = {np.float32: [0x80000000, 0, 0x7fc00001, 0xffc00002, 0x7f800000, 0xff800000, 0x3f800000],
                np.float64: [1 << 63, 0, 0x7ff8000000000001, 0xfff8000000000002, 0x7ff0 << 48, 0xfff0 << 48,
                             0x3ff0 << 48]}


def _routed_by_scan(x, dy, relu):
    """The pool gradient by definition, window by window: dy (times relu's gradient) at the first element
    greater than all before it in row-major order (a NaN never wins), +0 at the window's other elements."""
    dx = np.zeros_like(x)
    zero = x.dtype.type(0)
    for b, i, j, c in np.ndindex(dy.shape):
        window = [x[b, 2 * i + a, 2 * j + e, c] for a in range(2) for e in range(2)]
        if relu:
            window = [v if (v > zero or v != v) else zero for v in window]
        best, arg = window[0], 0
        for k, v in enumerate(window[1:], 1):
            if v > best:
                best, arg = v, k
        g = dy[b, i, j, c] * (x.dtype.type(1) if best > zero else zero) if relu else dy[b, i, j, c]
        dx[b, 2 * i + arg // 2, 2 * j + arg % 2, c] = g
    return dx


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_name", ["MaxPoolGrad", "ReluMaxPoolGrad"])
def test_native_2x2_pool_gradients_route_every_special_value_by_the_scan(dtype, op_name):
    # the 2x2 kernel routes through integer masks: NaN payloads, signed zeros, infinities in x and in dy
    # and ties must land where the first-maximum scan puts them, bit for bit
    rng = np.random.default_rng(5)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    special = np.array(SPECIAL_BITS[dtype], bits).view(dtype)
    x = rng.integers(-2, 3, (3, 9, 8, 4)).astype(dtype)          # ties and zeros; an uncovered last row
    x.reshape(-1)[::7] = np.resize(special, x.reshape(-1)[::7].shape)
    dy = rng.standard_normal((3, 4, 4, 4)).astype(dtype)
    dy.reshape(-1)[::3] = np.resize(special, dy.reshape(-1)[::3].shape)
    y = get("MaxPool").kernel(np.maximum(x, 0), **POOL)
    with np.errstate(all="ignore"), native.options(enabled=True, min_bytes=0):
        got = get(op_name).kernel(x, y, dy, **POOL)
        want = _routed_by_scan(x, dy, relu=op_name == "ReluMaxPoolGrad")
    assert np.array_equal(got.view(bits), want.view(bits))


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_2x2_max_pool_keeps_numpys_maximum_rule(dtype):
    # NumPy's maximum takes the first NaN (its payload), and b when +0 and -0 tie; the compiled pass must
    # give the NumPy kernel's bits for every such pair, in its tap order, with rows past the last window
    rng = np.random.default_rng(9)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    special = np.array(SPECIAL_BITS[dtype], bits).view(dtype)
    x = rng.integers(-2, 3, (3, 9, 8, 5)).astype(dtype)
    x.reshape(-1)[::3] = np.resize(special, x.reshape(-1)[::3].shape)
    with np.errstate(all="ignore"):
        with native.options(enabled=True, min_bytes=0):
            on = get("MaxPool").kernel(x, **POOL)
        with native.options(enabled=False):
            off = get("MaxPool").kernel(x, **POOL)
    assert on.shape == (3, 4, 4, 5)
    assert np.array_equal(on.view(bits), off.view(bits))
