"""The relu_bias_grad pass: a dense layer's ReluGrad and its bias's SumToLike as one ReluGradBiasGrad; the bits of
the unfused pair (NaN payloads, signalling NaNs, signed zeros, dead units summing -0.0), with the NumPy kernel and
the compiled one, eagerly, under @function and in a Session with and without the pass."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from graph_runtime import relu_bias_grad as rbg
from graph_runtime.passes import relu_bias_grad
from tracing import function

from dense_relu_helpers import bits, compile_at_once, data, rewrites
from pass_helpers import count_type, optimized

OFF = gr.SessionConfig(disabled_passes=("relu_bias_grad",))


def _layer_inputs(rows, cols, seed, dtype=np.float32):
    dy, y = data((rows, cols), seed, dtype), np.maximum(data((rows, cols), seed + 1, dtype), dtype(0))
    y[:, 0] = 0.0                           # a dead unit: every g is dy * 0, negative dy gives -0.0 ...
    dy[:, 0] = -np.arange(1, rows + 1)      # ... so its bias gradient sums -0.0s (onto +0.0, as NumPy)
    return dy, y


@pytest.fixture
def compiled_at_once(monkeypatch):
    return compile_at_once(monkeypatch, rbg)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 5), (2, 3), (64, 256), (33, 17), (0, 4)])
def test_compiled_kernel_gives_the_numpy_pair_bits(shape, dtype, compiled_at_once):
    dy, y = _layer_inputs(*shape, seed=sum(shape), dtype=dtype)
    with np.errstate(invalid="ignore"):
        g = np.multiply(dy, y > 0, dtype=dy.dtype)
    want = (g, np.add.reduce(g, (0,), dtype))
    got = rbg.native_call(dy, y)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(bits(a), bits(b))
    assert bits(want[1])[0] == 0 and np.signbit(want[0][:, 0]).all()     # -0.0s sum to +0.0, as NumPy's


def _dense_step(x, w, b, c):
    """h = relu(x @ w + b) and the gradients of sum(h * c) for w and b."""
    with ek.GradientTape() as tape:
        tape.watch([w, b])
        h = ek.nn.relu(ek.matmul(x, w) + b)
        loss = ek.reduce_sum(h * c)
    return [h, *tape.gradient(loss, [w, b])]


def _all_ways(feeds):
    x, w, b, c = feeds
    eager = [t.numpy() for t in _dense_step(*[ek.constant(v) for v in feeds])]
    fn = function(_dense_step)
    traced = [[t.numpy() for t in fn(*[ek.constant(v) for v in feeds])] for _ in range(3)]
    g = gr.Graph()
    with g.as_default():
        ps = [gr.placeholder(ek.float32, v.shape, name=n) for v, n in zip(feeds, "xwbc")]
        fetches = _dense_step(*ps)
    runs = {"eager": eager, **{f"@function {i}": t for i, t in enumerate(traced)}}
    for name, config in (("session", None), ("session, pass off", OFF)):
        with gr.Session(graph=g, config=config) as sess:
            for i in range(3):
                runs[f"{name} {i}"] = sess.run(fetches, dict(zip(ps, feeds)))
    return runs, g, fetches


@pytest.mark.parametrize("compiled", [False, True])
def test_dense_gradients_bits_equal_everywhere(compiled, request):
    calls = request.getfixturevalue("compiled_at_once") if compiled else None
    rng = np.random.default_rng(5)
    x = data((16, 12), 1)
    w = rng.standard_normal((12, 24)).astype(np.float32)
    b = data((24,), 2)
    c = data((16, 24), 3)
    c[:, 1] = -1.0
    x[0] = np.abs(x[0])
    runs, g, fetches = _all_ways([x, w, b, c])
    ref = runs["eager"]
    for name, values in runs.items():
        for a, r in zip(values, ref):
            assert np.array_equal(bits(a), bits(r)), name
    out, report = optimized(g, [t.name for t in fetches])
    assert report.changes("relu_bias_grad") == 2 * rewrites()        # 2 ops replaced
    assert count_type(out, "ReluGradBiasGrad") == rewrites() and count_type(out, "ReluGrad") == 1 - rewrites()
    if compiled:
        assert calls, "the compiled kernel never ran"


def test_switch_and_disabled_pass_leave_the_pair():
    g = gr.Graph()
    with g.as_default():
        ps = [gr.placeholder(ek.float32, s, name=n) for s, n in (((4, 3), "x"), ((3, 5), "w"), ((5,), "b"),
                                                                  ((4, 5), "c"))]
        fetches = _dense_step(*ps)
    names = [t.name for t in fetches]
    relu_bias_grad.set_enabled(False)
    try:
        out, report = optimized(g, names)
    finally:
        relu_bias_grad.set_enabled(None)
    assert report.changes("relu_bias_grad") == 0 and count_type(out, "ReluGradBiasGrad") == 0
    with native.options(enabled=False):        # NumPy only: the pair stays (module docstring of the pass)
        out, report = optimized(g, names)
    assert report.changes("relu_bias_grad") == 0
    out, report = optimized(g, names)
    assert count_type(out, "ReluGradBiasGrad") == rewrites()


def test_one_column_stays_numpy(compiled_at_once):
    # NumPy sums a single column pairwise (a contiguous reduction), not row by row: the kernel keeps NumPy's
    kernel = rbg.promoting_kernel()
    dy, y = data((300, 1), 4), np.abs(data((300, 1), 5))
    with np.errstate(all="ignore"):
        want = rbg.numpy_kernel(dy, y)
        got = [kernel(dy, y) for _ in range(3)]
    for run in got:
        assert all(np.array_equal(bits(a), bits(b)) for a, b in zip(run, want))
    assert not compiled_at_once


def test_a_bits_difference_keeps_numpy(monkeypatch, compiled_at_once):
    monkeypatch.setattr(rbg, "native_call", lambda dy, y: (np.zeros_like(dy), np.zeros(dy.shape[1], dy.dtype)))
    kernel = rbg.promoting_kernel()
    dy, y = _layer_inputs(8, 6, seed=3)
    with np.errstate(all="ignore"):
        want = rbg.numpy_kernel(dy, y)
        got = [kernel(dy, y) for _ in range(3)]
    for run in got:
        assert all(np.array_equal(bits(a), bits(b)) for a, b in zip(run, want))


def test_fetched_bias_gradient_keeps_its_name():
    g = gr.Graph()
    with g.as_default():
        ps = [gr.placeholder(ek.float32, s, name=n) for s, n in (((4, 3), "x"), ((3, 5), "w"), ((5,), "b"),
                                                                  ((4, 5), "c"))]
        h, dw, db = _dense_step(*ps)
    feeds = [data(p.shape.dims, i) for i, p in enumerate(ps)]
    with gr.Session(graph=g) as sess:
        on = sess.run([db, dw], dict(zip(ps, feeds)))
    with gr.Session(graph=g, config=OFF) as sess:
        off = sess.run([db, dw], dict(zip(ps, feeds)))
    assert all(np.array_equal(bits(a), bits(b)) for a, b in zip(on, off))
