"""The bias_relu pass: `Relu(AddV2(a, b))` of a dense layer as one BiasRelu; the bits of the pair (NaN payloads,
two NaNs meeting, signed zeros, infinities), with the NumPy kernel and the compiled one, eagerly, under @function
and in a Session with and without the pass."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from graph_runtime import bias_relu as br
from graph_runtime.passes import bias_relu
from tracing import function

from dense_relu_helpers import bits, compile_at_once, data, rewrites
from pass_helpers import count_type, optimized

OFF = gr.SessionConfig(disabled_passes=("bias_relu",))


@pytest.fixture
def compiled_at_once(monkeypatch):
    return compile_at_once(monkeypatch, br)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 5), (64, 256), (33, 17), (0, 4)])
@pytest.mark.parametrize("nans", [False, True])
def test_compiled_kernel_gives_the_numpy_bits(shape, dtype, nans, compiled_at_once):
    if nans:
        a, b = data(shape, 1, dtype), data(shape[1:], 2, dtype)       # NaN + NaN somewhere: NumPy's kernel
    else:
        a = np.random.default_rng(3).standard_normal(shape).astype(dtype)
        b = np.random.default_rng(4).standard_normal(shape[1:]).astype(dtype)
        a.reshape(-1)[::5] = -0.0
        b[::3] = -0.0                                                   # -0 + -0 = -0: relu gives +0
    with np.errstate(all="ignore"):
        want, got = br.numpy_kernel(a, b), br.native_call(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("shape", [(4, 5), (64, 256), (600, 500)])     # 0-d zero, zeros array, rows of zeros
def test_numpy_kernel_gives_the_pair_bits(shape):
    a, b = data(shape, 5), data(shape[1:], 6)
    with np.errstate(all="ignore"):
        want = np.maximum(np.add(a, b), np.zeros((), np.float32))
        got = br.numpy_kernel(a, b)
    assert np.array_equal(bits(got), bits(want))


def _layer(x, w, b):
    return [ek.nn.relu(ek.matmul(x, w) + b)]


@pytest.mark.parametrize("compiled", [False, True])
def test_bits_equal_everywhere(compiled, request):
    calls = request.getfixturevalue("compiled_at_once") if compiled else None
    feeds = [data((16, 12), 1), np.random.default_rng(2).standard_normal((12, 24)).astype(np.float32),
             data((24,), 3)]
    ref = _layer(*[ek.constant(v) for v in feeds])[0].numpy()
    fn = function(_layer)
    runs = [fn(*[ek.constant(v) for v in feeds])[0].numpy() for _ in range(3)]
    g = gr.Graph()
    with g.as_default():
        ps = [gr.placeholder(ek.float32, v.shape, name=n) for v, n in zip(feeds, "xwb")]
        fetches = _layer(*ps)
    for config in (None, OFF):
        with gr.Session(graph=g, config=config) as sess:
            runs += [sess.run(fetches[0], dict(zip(ps, feeds))) for _ in range(3)]
    assert all(np.array_equal(bits(r), bits(ref)) for r in runs)
    out, report = optimized(g, [fetches[0].name])
    assert count_type(out, "BiasRelu") == rewrites() and count_type(out, "AddV2") == 0     # fused otherwise
    if compiled:
        assert calls, "the compiled kernel never ran"


def _graph(build, rows=4):
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, (rows, 5), name="a")
        b = gr.placeholder(ek.float32, (5,), name="b")
        fetches = build(a, b)
    return g, [t.name for t in fetches]


@pytest.mark.parametrize("build", [
    lambda a, b: [ek.nn.relu(b + a)],                       # the bias first: left alone
    lambda a, b: [ek.nn.relu(a + b), (a + b) * 2.0],         # the sum read elsewhere (CSE makes it one)
    lambda a, b: [ek.nn.relu(a + ek.reshape(b, (1, 5)))],   # not a rank-1 bias
])
def test_left_alone(build):
    g, names = _graph(build)
    out, _ = optimized(g, names)
    assert count_type(out, "BiasRelu") == 0


def test_a_layer_of_a_million_elements_stays_fused():
    g, names = _graph(lambda a, b: [ek.nn.relu(a + b)], rows=(1 << 20) // 5 + 1)
    out, _ = optimized(g, names)
    assert count_type(out, "BiasRelu") == 0


def test_switch_turns_it_off():
    g, names = _graph(lambda a, b: [ek.nn.relu(a + b)])
    bias_relu.set_enabled(False)
    try:
        out, _ = optimized(g, names)
    finally:
        bias_relu.set_enabled(None)
    assert count_type(out, "BiasRelu") == 0
    with native.options(enabled=False):        # NumPy only: the fused kernel stays (module docstring of the pass)
        assert count_type(optimized(g, names)[0], "BiasRelu") == 0
    assert count_type(optimized(g, names)[0], "BiasRelu") == rewrites()
