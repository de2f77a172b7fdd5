"""A While body's fused float32 tanh kernel runs as one compiled call when numba is installed
(control_flow/loop_kernels.py): its bits are those of the same fused program with fast_tanh.py's tanh in
NumPy, within 1 ulp a tanh of NumPy's; with native kernels off, small kernels or other programs, NumPy's
kernel and the unfused graph's bits.  Slow-ish (numba's start-up, once per process)."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from graph_runtime import fusion
from graph_runtime.control_flow import loop_kernels
from graph_runtime.control_flow.plans import compiled_plans
from graph_runtime.fusion.fast_tanh import tanh32_numpy

from native_marks import needs_native

# every test here runs the compiled kernel by default (the one about native kernels off compares with it)
pytestmark = [needs_native,
              pytest.mark.skipif(not native.available(), reason="numba (the [native] extra) cannot be imported")]

RNG = np.random.default_rng(23)
BATCH, HIDDEN, STEPS = 16, 64, 7          # 1024 elements: at least MIN_ELEMENTS


def data(bias_shape=(HIDDEN,), batch=BATCH, hidden=HIDDEN):
    xs = RNG.standard_normal((STEPS, batch, 8)).astype(np.float32)
    wx = (RNG.standard_normal((8, hidden)) * 0.4).astype(np.float32)
    wh = (RNG.standard_normal((hidden, hidden)) * 0.2).astype(np.float32)
    b = (RNG.standard_normal(bias_shape) * 0.3).astype(np.float32)
    return xs, wx, wh, b


def numpy_rnn(xs, wx, wh, b, tanh=np.tanh, scale=None):
    h = np.zeros((xs.shape[1], wh.shape[0]), np.float32)
    for t in range(xs.shape[0]):
        z = xs[t] @ wx + h @ wh
        h = tanh((z * scale if scale is not None else z) + b)
    return h


def build(xs, wx, wh, b, scale=None, with_grads=False):
    """`(run, body)`: `run()` runs the RNN (and its gradients) in a new Session; `body` is the loop's body graph."""
    g = gr.Graph()
    with g.as_default():
        x, bias = gr.placeholder("float32", xs.shape), gr.placeholder("float32", b.shape)
        w = [ek.constant(wx), ek.constant(wh)]

        def body(t, h):
            z = ek.matmul(x[t], w[0]) + ek.matmul(h, w[1])
            return t + 1, ek.tanh((z * scale if scale is not None else z) + bias)
        h = ek.while_loop(lambda t, h: t < xs.shape[0], body, [ek.constant(0), ek.zeros((xs.shape[1], wh.shape[0]))])[1]
        fetch = [h] + (gr.gradients(ek.reduce_sum(h), w + [bias]) if with_grads else [])

    def run():
        with gr.Session(graph=g) as sess:
            return sess.run(fetch, {x: xs, bias: b})
    return run, next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")


def session(xs, wx, wh, b, scale=None, with_grads=False):
    run, body = build(xs, wx, wh, b, scale, with_grads)
    return run(), [p.source for p in compiled_plans(body, "loop")], body


@pytest.mark.parametrize("bias_shape", [(HIDDEN,), (1, HIDDEN)])
def test_compiled_rnn_cell_has_the_fast_tanh_bits(bias_shape):
    xs, wx, wh, b = data(bias_shape)
    (got,), sources, _ = session(xs, wx, wh, b)
    assert any(" = kn" in s for s in sources)
    np.testing.assert_array_equal(got, numpy_rnn(xs, wx, wh, b, tanh=tanh32_numpy))
    np.testing.assert_allclose(got, numpy_rnn(xs, wx, wh, b), rtol=1e-5, atol=1e-6)


def test_constants_of_the_program_are_arguments():
    xs, wx, wh, b = data()
    (got,), sources, _ = session(xs, wx, wh, b, scale=0.5)
    assert any(" = kn" in s for s in sources)
    np.testing.assert_array_equal(got, numpy_rnn(xs, wx, wh, b, tanh=tanh32_numpy, scale=np.float32(0.5)))


def test_gradients_through_the_compiled_cell():
    xs, wx, wh, b = data()
    got, sources, _ = session(xs, wx, wh, b, with_grads=True)
    assert all(" = kn" in s for s in sources)
    hs = [np.zeros((BATCH, HIDDEN), np.float32)]
    for t in range(STEPS):
        hs.append(tanh32_numpy(xs[t] @ wx + hs[-1] @ wh + b))
    dh, dwx, dwh, db = np.ones_like(hs[-1]), 0, 0, 0
    for t in range(STEPS - 1, -1, -1):
        dz = dh * (1 - hs[t + 1] ** 2)
        dwx, dwh, db = dwx + xs[t].T @ dz, dwh + hs[t].T @ dz, db + dz.sum(0)
        dh = dz @ wh.T
    for a, e in zip(got, [hs[-1], dwx, dwh, db]):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5)


def test_native_kernels_off_small_kernels_and_other_programs_keep_numpys_bits():
    xs, wx, wh, b = data()
    run, body = build(xs, wx, wh, b)
    (fast,) = run()
    old = native.set_enabled(False)
    try:         # the same body graph: its loop is generated again for these settings
        (got,) = run()
    finally:
        native.set_enabled(old)
    with fusion.options(fast_tanh=False):
        (got_exact,) = run()
    assert sorted(" = kn" in p.source for p in compiled_plans(body, "loop")) == [False, True]   # one key when off
    np.testing.assert_array_equal(got, numpy_rnn(xs, wx, wh, b))
    np.testing.assert_array_equal(got_exact, numpy_rnn(xs, wx, wh, b))
    np.testing.assert_array_equal(fast, numpy_rnn(xs, wx, wh, b, tanh=tanh32_numpy))
    small = data((5,), batch=4, hidden=5)
    (got,), sources, _ = session(*small)
    assert not any(" = kn" in s for s in sources)
    np.testing.assert_array_equal(got, numpy_rnn(*small))
    g = gr.Graph()
    with g.as_default():
        h = ek.while_loop(lambda t, h: t < 3, lambda t, h: (t + 1, ek.exp(h * 0.5) - 1.0),
                          [ek.constant(0), ek.ones((BATCH, HIDDEN))])[1]
    with gr.Session(graph=g) as sess:
        got = sess.run(h)
    want = np.ones((BATCH, HIDDEN), np.float32)
    for _ in range(3):
        want = np.exp(want * np.float32(0.5)) - np.float32(1.0)
    np.testing.assert_array_equal(got, want)


def test_inputs_of_other_shapes_go_to_the_numpy_kernel():
    xs, wx, wh, b = data()
    _, _, body = session(xs, wx, wh, b)
    plan = next(p for p in compiled_plans(body, "plan"))
    step = next(s for s in plan.steps if s.op.type == "FusedElementwise")
    fused = loop_kernels.compile_step(step)
    a, m = RNG.standard_normal((2, BATCH, HIDDEN)).astype(np.float32)
    np.testing.assert_array_equal(fused(a, m, b), tanh32_numpy(a + m + b))
    col = RNG.standard_normal((BATCH, 1)).astype(np.float32)        # broadcasts: NumPy's kernel computes it
    np.testing.assert_array_equal(fused(a, col, b), step.kernel(a, col, b))
    with pytest.raises(ValueError):
        fused(a, m[:3], b)


def test_the_kernel_compiles_while_the_plan_is_built_not_against_the_first_steps_deadline():
    # a shape no other test compiles: numba's compile of a new kernel (0.3 s here with numba warm, 1-3 s
    # cold) used to happen in the loop's first iteration, so the first run of a 5 ms step with a 100 ms
    # deadline raised DeadlineExceededError "While loop" however fast the loop was
    hidden = 88
    xs, wx, wh, b = data((hidden,), batch=8, hidden=hidden)
    g = gr.Graph()
    with g.as_default():
        x, bias = gr.placeholder("float32", xs.shape), gr.placeholder("float32", b.shape)
        w = [ek.constant(wx), ek.constant(wh)]
        h = ek.while_loop(lambda t, h: t < STEPS,
                          lambda t, h: (t + 1, ek.tanh(ek.matmul(x[t], w[0]) + ek.matmul(h, w[1]) + bias)),
                          [ek.constant(0), ek.zeros((8, hidden))])[1]
    new = [s for s in loop_kernels._KERNELS if f"range({hidden})" in s]
    assert not new, "another test compiled this kernel already: pick another shape"
    with gr.Session(graph=g) as sess:
        got = sess.run(h, {x: xs, bias: b}, options=gr.RunOptions(timeout_in_ms=100))
    kernels = [k for s, k in loop_kernels._KERNELS.items() if f"range({hidden})" in s]
    assert len(kernels) == 1 and len(kernels[0].signatures) == 1      # compiled once, for the real call's types
    np.testing.assert_array_equal(got, numpy_rnn(xs, wx, wh, b, tanh=tanh32_numpy))
