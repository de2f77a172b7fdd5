"""A capture that a While body's fused kernel broadcasts (an RNN's bias) is expanded once per loop run
(control_flow/broadcast_captures.py): the loop's results and gradients keep their bits (against NumPy, the
loop without the expansion, eagerly and under `@function`); inputs the kernel does not broadcast into a
full-shape ufunc, unknown shapes and big copies are left alone."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.control_flow import broadcast_captures
from graph_runtime.control_flow.plans import compiled_plans
from tracing import function

RNG = np.random.default_rng(5)


def data(batch=4, steps=6, bias_shape=(5,)):
    xs = RNG.standard_normal((steps, batch, 3)).astype(np.float32)
    wx = (RNG.standard_normal((3, 5)) * 0.4).astype(np.float32)
    wh = (RNG.standard_normal((5, 5)) * 0.4).astype(np.float32)
    b = (RNG.standard_normal(bias_shape) * 0.3).astype(np.float32)
    return xs, wx, wh, b


def numpy_rnn(xs, wx, wh, b):
    h = np.zeros((xs.shape[1], wh.shape[0]), np.float32)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
    return h


def rnn(xs, wx, wh, b):
    def body(t, h):
        return t + 1, ek.tanh(ek.matmul(xs[t], wx) + ek.matmul(h, wh) + b)
    return ek.while_loop(lambda t, h: t < xs.shape[0], body, [ek.constant(0), ek.zeros((xs.shape[1], 5))])[1]


def session(xs, wx, wh, b, with_grads=False, bias_shape=None, cell=rnn):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", xs.shape)
        bias = gr.placeholder("float32", bias_shape if bias_shape is not None else b.shape)
        w = [ek.constant(wx), ek.constant(wh)]
        h = cell(x, *w, bias)
        fetch = [h] + (gr.gradients(ek.reduce_sum(h * h), w + [bias]) if with_grads else [])
    with gr.Session(graph=g) as sess:
        got = sess.run(fetch, {x: xs, bias: b})
    body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    return got, [p.source for p in compiled_plans(body, "loop")]


@pytest.mark.parametrize("bias_shape", [(5,), (1, 5)])
def test_rnn_bias_expanded_once_keeps_the_bits(bias_shape):
    xs, wx, wh, b = data(bias_shape=bias_shape)
    want = numpy_rnn(xs, wx, wh, b)
    (got,), sources = session(xs, wx, wh, b)
    assert any("_bcast" in s for s in sources)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(rnn(ek.constant(xs), *map(ek.constant, (wx, wh, b))).numpy(), want)
    np.testing.assert_array_equal(np.asarray(function(rnn)(xs, wx, wh, b)), want)


def test_gradients_equal_the_loop_without_the_expansion(monkeypatch):
    xs, wx, wh, b = data()
    got, sources = session(xs, wx, wh, b, with_grads=True)
    assert all("_bcast" in s for s in sources)
    monkeypatch.setattr(broadcast_captures, "MAX_ELEMENTS", 0)
    want, sources = session(xs, wx, wh, b, with_grads=True)
    assert not any("_bcast" in s for s in sources)
    for a, e in zip(got, want):
        np.testing.assert_array_equal(a, e)


def test_an_input_the_kernel_uses_at_its_own_shape_is_not_expanded():
    xs, wx, wh, b = data()

    def cell(x, wx, wh, b):
        def body(t, h):
            return t + 1, ek.tanh(ek.matmul(x[t], wx) + ek.matmul(h, wh) + ek.sin(b) * 2.0)
        return ek.while_loop(lambda t, h: t < xs.shape[0], body, [ek.constant(0), ek.zeros((xs.shape[1], 5))])[1]
    (got,), sources = session(xs, wx, wh, b, cell=cell)
    assert not any("_bcast" in s for s in sources)         # sin(b) is computed at b's shape
    h = np.zeros((xs.shape[1], 5), np.float32)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + np.sin(b) * np.float32(2.0))
    np.testing.assert_array_equal(got, h)


def test_unknown_shapes_and_big_copies_are_not_expanded(monkeypatch):
    xs, wx, wh, b = data()
    (got,), sources = session(xs, wx, wh, b, bias_shape=(None,))
    assert not any("_bcast" in s for s in sources)
    np.testing.assert_array_equal(got, numpy_rnn(xs, wx, wh, b))
    monkeypatch.setattr(broadcast_captures, "MAX_ELEMENTS", xs.shape[1] * 5 - 1)
    (got,), sources = session(xs, wx, wh, b)
    assert not any("_bcast" in s for s in sources)
    np.testing.assert_array_equal(got, numpy_rnn(xs, wx, wh, b))


def test_the_expanded_copy_is_a_contiguous_array_of_its_own():
    b = np.arange(5, dtype=np.float32)
    got = broadcast_captures.expand(b, (3, 5))
    assert got.flags.c_contiguous and got.flags.owndata and got.shape == (3, 5)
    np.testing.assert_array_equal(got, np.broadcast_to(b, (3, 5)))
    with pytest.raises(ValueError):
        broadcast_captures.expand(b, (3, 4))
