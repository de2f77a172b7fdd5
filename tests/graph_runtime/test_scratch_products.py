"""A While body's product read only by a fused kernel runs into a scratch buffer (`np.dot` with `out=`,
control_flow/scratch_products.py): the loop's results and gradients keep their bits (against the same loop
in NumPy, eagerly and under `@function`), whatever the weight's memory layout, and no output shares the
scratch."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.control_flow import scratch_products
from graph_runtime.control_flow.plans import compiled_plans
from tracing import function

RNG = np.random.default_rng(11)
needs_dot = pytest.mark.skipif(not scratch_products.DOT_IS_MATMUL, reason="np.dot is np.matmul from NumPy 2.3")


def data(batch=4, steps=6):
    xs = RNG.standard_normal((steps, batch, 3)).astype(np.float32)
    wx = (RNG.standard_normal((3, 5)) * 0.4).astype(np.float32)
    wh = (RNG.standard_normal((5, 5)) * 0.4).astype(np.float32)
    b = (RNG.standard_normal(5) * 0.1).astype(np.float32)
    return xs, wx, wh, b


def numpy_rnn(xs, wx, wh, b):
    h = np.zeros((xs.shape[1], wh.shape[0]), np.float32)
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
        hs.append(h)
    return h, hs


def rnn(xs, wx, wh, b):
    def body(t, h):
        return t + 1, ek.tanh(ek.matmul(xs[t], wx) + ek.matmul(h, wh) + b)
    return ek.while_loop(lambda t, h: t < xs.shape[0], body, [ek.constant(0), ek.zeros((xs.shape[1], 5))])[1]


def session(xs, wx, wh, b, with_grads=False):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", xs.shape)
        w = [ek.constant(v) for v in (wx, wh, b)]
        h = rnn(x, *w)
        fetch = [h] + (gr.gradients(ek.reduce_sum(h * h), w[:2]) if with_grads else [])
    with gr.Session(graph=g) as sess:
        got = sess.run(fetch, {x: xs})
    body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    sources = [p.source for p in compiled_plans(body, "loop")]
    return got, sources


@needs_dot
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_rnn_forward_keeps_its_bits_with_the_scratch_product(layout):
    xs, wx, wh, b = data()
    if layout == "F":
        wh = np.asfortranarray(wh)
    elif layout == "strided":
        wide = np.zeros((5, 10), np.float32)
        wide[:, ::2] = wh
        wh = wide[:, ::2]
    want, _ = numpy_rnn(xs, wx, wh, b)
    (got,), sources = session(xs, wx, wh, b)
    assert any("_dot" in s and "sc0" in s for s in sources)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(rnn(ek.constant(xs), *map(ek.constant, (wx, wh, b))).numpy(), want)
    np.testing.assert_array_equal(np.asarray(function(rnn)(xs, wx, wh, b)), want)


@needs_dot
def test_gradients_through_the_scratch_product_equal_numpys_bptt():
    xs, wx, wh, b = data()
    h, hs = numpy_rnn(xs, wx, wh, b)
    dh = 2 * h
    dwx, dwh = None, None
    for t in range(xs.shape[0] - 1, -1, -1):
        dz = dh * (1 - hs[t] ** 2)
        prev = hs[t - 1] if t else np.zeros_like(h)
        gx, gh = xs[t].T @ dz, prev.T @ dz
        dwx = gx if dwx is None else dwx + gx
        dwh = gh if dwh is None else dwh + gh
        dh = dz @ wh.T
    (got_h, got_dwx, got_dwh), sources = session(xs, wx, wh, b, with_grads=True)
    assert all("_dot" in s for s in sources)
    np.testing.assert_array_equal(got_h, h)
    np.testing.assert_allclose(got_dwx, dwx, rtol=1e-5, atol=1e-6)   # the order of the sums is the rule's
    np.testing.assert_allclose(got_dwh, dwh, rtol=1e-5, atol=1e-6)


def test_products_with_a_dimension_of_one_keep_matmul():
    xs, wx, wh, b = data(batch=1)
    (got,), sources = session(xs, wx, wh, b)
    assert not any("_dot" in s for s in sources)       # np.dot takes another path for a row vector
    np.testing.assert_array_equal(got, numpy_rnn(xs, wx, wh, b)[0])


@needs_dot
def test_no_result_shares_the_scratch():
    xs, wx, wh, b = data()
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", xs.shape)

        def body(t, h, first):
            h2 = ek.tanh(ek.matmul(h, ek.constant(wh)) + ek.constant(b))
            return t + 1, h2, ek.where(ek.equal(t, 0), h2, first)      # keeps the first iteration's h
        out = ek.while_loop(lambda t, h, f: t < xs.shape[0], body,
                            [ek.constant(0), ek.ones((xs.shape[1], 5)), ek.zeros((xs.shape[1], 5))])
    with gr.Session(graph=g) as sess:
        _, h, first = sess.run(out, {x: xs})
    want = np.ones((xs.shape[1], 5), np.float32)
    hs = []
    for _ in range(xs.shape[0]):
        want = np.tanh(want @ wh + b)
        hs.append(want)
    np.testing.assert_array_equal(h, hs[-1])
    np.testing.assert_array_equal(first, hs[0])


def grads_wrt_start(xs, wx, wh, b, h0, residual=False):
    """Session gradients of sum(h * h) for the RNN started at `h0`, with respect to (wx, wh, h0); the backward
    walk's sources."""
    g = gr.Graph()
    with g.as_default():
        x, start = gr.placeholder("float32", xs.shape), gr.placeholder("float32", h0.shape)
        w = [ek.constant(wx), ek.constant(wh)]

        def body(t, h):
            z = ek.tanh(ek.matmul(x[t], w[0]) + ek.matmul(h, w[1]) + b)
            return t + 1, (z + h if residual else z)
        h = ek.while_loop(lambda t, h: t < xs.shape[0], body, [ek.constant(0), start])[1]
        fetch = [h] + gr.gradients(ek.reduce_sum(h * h), w + [start])
    with gr.Session(graph=g) as sess:
        got = sess.run(fetch, {x: xs, start: h0})
    vjp = next(o for o in g.get_operations() if o.type == "WhileGrad").get_attr("vjp")
    return got, [p.source for p in compiled_plans(vjp, "grad_loop")]


@needs_dot
def test_the_backward_walk_carries_dz_times_wh_in_a_scratch_with_the_same_bits(monkeypatch):
    xs, wx, wh, b = data(steps=9)
    h0 = RNG.standard_normal((xs.shape[1], 5)).astype(np.float32)
    got, sources = grads_wrt_start(xs, wx, wh, b, h0)
    assert any("_dot" in s and "sc0" in s for s in sources)
    monkeypatch.setattr(scratch_products, "find_carried", lambda *a, **k: {})
    want, sources = grads_wrt_start(xs, wx, wh, b, h0)
    assert not any("_dot" in s for s in sources)
    for a, e in zip(got, want):                 # the start's cotangent is the last product: the scratch
        np.testing.assert_array_equal(a, e)
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ wx + hs[-1] @ wh + b))
    dh = 2 * hs[-1]
    for t in range(xs.shape[0] - 1, -1, -1):
        dh = (dh * (1 - np.square(hs[t + 1]))) @ wh.T
    np.testing.assert_array_equal(got[3], dh)


@needs_dot
def test_a_carried_value_read_twice_keeps_its_own_arrays():
    xs, wx, wh, b = data(steps=5)
    h0 = RNG.standard_normal((xs.shape[1], 5)).astype(np.float32)
    got, sources = grads_wrt_start(xs, wx, wh, b, h0, residual=True)   # dh feeds tanh's gradient and the sum
    assert not any("sc0" in s for s in sources)
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ wx + hs[-1] @ wh + b) + hs[-1])
    dh = 2 * hs[-1]
    for t in range(xs.shape[0] - 1, -1, -1):
        z = hs[t + 1] - hs[t]
        dh = (dh * (1 - np.square(z))) @ wh.T + dh
    np.testing.assert_allclose(got[3], dh, rtol=1e-5, atol=1e-5)
