"""The pool_activation pass: max_pool(relu(z)) pooled first, its gradient one ReluMaxPoolGrad; same bits as the
unfused graph (eagerly, under @function, in a Session with and without the pass), NaN and signed zeros included."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from graph_runtime.passes import pool_activation
from tracing import function

from pass_helpers import count_type, optimized

WINDOWS = [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME")]
SPECIAL = np.array([0x80000000, 0, 0x7fc00001, 0xffc00002, 0x7f800000, 0xff800000, 0x3f800000, 0xbf800000],
                   np.uint32).view(np.float32)
OFF = gr.SessionConfig(disabled_passes=("pool_activation",))


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _data(seed, shape=(3, 8, 9, 4)):
    rng = np.random.default_rng(seed)
    z = rng.integers(-2, 3, shape).astype(np.float32)
    z[rng.random(shape) < 0.1] = -0.0
    z.reshape(-1)[::23] = np.resize(SPECIAL, z.reshape(-1)[::23].shape)
    return z


def _step(z, c, window):
    """The pooled activations and d(sum(pool(relu(z)) * c))/dz."""
    with ek.GradientTape() as tape:
        tape.watch(z)
        p = ek.nn.max_pool2d(ek.nn.relu(z), *window)
        loss = ek.reduce_sum(p * c)
    return [p, tape.gradient(loss, z)]


def _session_graph(z, c, window, build=_step):
    g = gr.Graph()
    with g.as_default():
        zp, cp = gr.placeholder(ek.float32, z.shape, name="z"), gr.placeholder(ek.float32, c.shape, name="c")
        fetches = build(zp, cp, window)
    return g, zp, cp, fetches


def _all_ways(z, c, window, build=_step):
    eager = [t.numpy() for t in build(ek.constant(z), ek.constant(c), window)]
    traced = [t.numpy() for t in function(lambda a, b: build(a, b, window))(ek.constant(z), ek.constant(c))]
    g, zp, cp, fetches = _session_graph(z, c, window, build)
    runs = {"eager": eager, "@function": traced}
    for name, config in (("session", None), ("session, pass off", OFF)):
        with gr.Session(graph=g, config=config) as sess:
            runs[name] = sess.run(fetches, {zp: z, cp: c})
    return runs


def _assert_all_equal(runs):
    ref = runs["eager"]
    for name, values in runs.items():
        for a, b in zip(values, ref):
            assert np.array_equal(_bits(a), _bits(b)), name


@pytest.mark.parametrize("native_on", [False, True])
@pytest.mark.parametrize("window", WINDOWS)
def test_gradient_bits_equal_everywhere(window, native_on):
    if native_on and not native.available():
        pytest.skip("numba not installed")
    with native.options(enabled=native_on, min_bytes=0):
        for seed in range(2):
            z = _data(seed)
            shape = ek.nn.max_pool2d(ek.constant(z), *window).shape
            c = np.random.default_rng(seed + 7).standard_normal(shape).astype(np.float32)
            c.reshape(-1)[::5] = np.resize(SPECIAL, c.reshape(-1)[::5].shape)     # inf, NaN, -0 in dy
            _assert_all_equal(_all_ways(z, c, window))


def test_the_pass_rewrites_the_training_pattern():
    z = _data(0)
    g, zp, cp, fetches = _session_graph(z, np.ones((3, 4, 4, 4), np.float32), WINDOWS[0])
    names = [t.name for t in fetches]
    out, report = optimized(g, names, {zp: z})
    assert report.changes("pool_activation") == 2
    assert count_type(out, "ReluMaxPoolGrad") == 1
    assert count_type(out, "ReluGrad") == count_type(out, "MaxPoolGrad") == 0
    relu = [op for op in out.get_operations() if op.type == "Relu"]
    assert len(relu) == 1 and relu[0].inputs[0].op.type == "MaxPool"       # relu on the pooled tensor
    pool_activation.set_enabled(False)
    try:
        out_off, report_off = optimized(g, names, {zp: z})
    finally:
        pool_activation.set_enabled(None)
    assert report_off.changes("pool_activation") == 0 and count_type(out_off, "ReluMaxPoolGrad") == 0


def test_inference_graph_pools_first():
    g = gr.Graph()
    with g.as_default():
        zp = gr.placeholder(ek.float32, (2, 6, 6, 3), name="z")
        y = ek.reduce_sum(ek.nn.max_pool2d(ek.nn.relu(zp), 2, 2, "VALID"))
    z = _data(3, (2, 6, 6, 3))
    out, report = optimized(g, [y.name], {zp: z})
    assert report.changes("pool_activation") == 1
    pool = [op for op in out.get_operations() if op.type == "MaxPool"][0]
    assert pool.inputs[0].op.type == "Placeholder"
    with gr.Session(graph=g) as on, gr.Session(graph=g, config=OFF) as off:
        assert np.array_equal(_bits(on.run(y, {zp: z})), _bits(off.run(y, {zp: z})))


def _step_reading_h(z, c, window):
    """h = relu(z) is also read by the loss: it must be made, so nothing is rewritten."""
    with ek.GradientTape() as tape:
        tape.watch(z)
        h = ek.nn.relu(z)
        loss = ek.reduce_sum(ek.nn.max_pool2d(h, *window) * c) + ek.reduce_sum(h)
    return [loss, tape.gradient(loss, z)]


def test_left_alone_when_relu_output_has_other_readers():
    z = _data(1)
    c = np.random.default_rng(1).standard_normal((3, 4, 4, 4)).astype(np.float32)
    runs = _all_ways(z, c, WINDOWS[0], _step_reading_h)
    assert np.array_equal(_bits(runs["session"][1]), _bits(runs["session, pass off"][1]))
    g, zp, cp, fetches = _session_graph(z, c, WINDOWS[0], _step_reading_h)
    _, report = optimized(g, [t.name for t in fetches], {zp: z})
    assert report.changes("pool_activation") == 0


def test_left_alone_when_relu_output_is_fetched():
    g = gr.Graph()
    with g.as_default():
        zp = gr.placeholder(ek.float32, (2, 6, 6, 3), name="z")
        h = ek.nn.relu(zp)
        y = ek.nn.max_pool2d(h, 2, 2, "VALID")
    _, report = optimized(g, [h.name, y.name], {zp: _data(2, (2, 6, 6, 3))})
    assert report.changes("pool_activation") == 0


def _cnn_grads(x, f, window):
    with ek.GradientTape() as tape:
        tape.watch(f)
        p = ek.nn.max_pool2d(ek.nn.relu(ek.nn.conv2d(x, f, 1, "SAME")), *window)
        loss = ek.reduce_mean(ek.square(p))
    return [loss, tape.gradient(loss, f)]


def test_conv_relu_pool_filter_gradient_bits_equal_everywhere():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 12, 12, 2)).astype(np.float32)
    f = rng.standard_normal((3, 3, 2, 5)).astype(np.float32)
    _assert_all_equal(_all_ways(x, f, WINDOWS[0], _cnn_grads))
