"""A While body's `ta.read(i) @ W` computed a block of rows at a time (control_flow/row_products.py): the
same bits as row by row (NumPy, eager, Session, @function, gradients), whatever order the rows are read in,
and the read's own error for a row outside the TensorArray."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.control_flow import row_products
from graph_runtime.control_flow.plans import compiled_plans
from tracing import function

RNG = np.random.default_rng(5)


def rnn(xs, wx, wh, b, steps=None, order=lambda t, n: t):
    """tanh RNN reading row `order(t, n)` of a TensorArray of xs at step t, for `steps` steps."""
    n = xs.shape[0]
    steps = n if steps is None else steps
    ta = ek.TensorArray(xs.dtype, size=n).unstack(xs)

    def body(t, h):
        return t + 1, ek.tanh(ek.matmul(ta.read(order(t, n)), wx) + ek.matmul(h, wh) + b)
    h0 = ek.zeros((xs.shape[1], wh.shape[0]), dtype=xs.dtype)
    return ek.while_loop(lambda t, h: t < steps, body, [ek.constant(0), h0])[1]


def inputs(dtype, steps):
    return [(RNG.standard_normal(s) * sc).astype(dtype) for s, sc in
            (((steps, 3, 4), 1.0), ((4, 5), 0.3), ((5, 5), 0.3), ((5,), 0.1))]


def numpy_rnn(xs, wx, wh, b, steps=None, order=lambda t, n: t):
    h = np.zeros((xs.shape[1], wh.shape[0]), xs.dtype)
    for t in range(xs.shape[0] if steps is None else steps):
        h = np.tanh(xs[order(t, xs.shape[0])] @ wx + h @ wh + b)
    return h


def session_run(vals, with_grads=False, **kw):
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder(ek.as_dtype(v.dtype), v.shape) for v in vals]
        h = rnn(*phs, **kw)
        fetches = [h] + (gr.gradients(ek.reduce_sum(h), phs) if with_grads else [])
    with gr.Session(graph=g) as sess:
        out = sess.run(fetches, dict(zip(phs, vals)))
    body = next(o for o in g.get_operations() if o.type.endswith("While")).get_attr("body")
    return out, [p.source for p in compiled_plans(body, "loop")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("steps", [1, 7, 100])
def test_block_products_have_the_bits_of_row_by_row_products(dtype, steps):
    vals = inputs(dtype, steps)
    want = numpy_rnn(*vals)
    (got,), sources = session_run(vals)
    assert any("_rows" in s for s in sources)          # the products were computed in blocks
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(rnn(*[ek.constant(v) for v in vals]).numpy(), want)
    np.testing.assert_array_equal(function(rnn)(*[ek.constant(v) for v in vals]).numpy(), want)


@pytest.mark.parametrize("kw", [dict(), dict(steps=5), dict(order=lambda t, n: (7 * t) % n),
                                dict(order=lambda t, n: n - 1 - t), dict(order=lambda t, n: t // 2)])
def test_any_read_order_and_early_exit_give_the_results_and_gradients_of_the_plain_loop(kw, monkeypatch):
    vals = inputs(np.float32, 12)
    got, sources = session_run(vals, with_grads=True, **kw)
    assert any("_rows" in s for s in sources)
    monkeypatch.setattr(row_products, "find", lambda plan, captured, row_reads=(): {})
    want, sources = session_run(vals, with_grads=True, **kw)
    assert not any("_rows" in s for s in sources)
    for a, e in zip(got, want):
        np.testing.assert_array_equal(a, e)
    np.testing.assert_array_equal(got[0], numpy_rnn(*vals, **kw))


def test_a_row_outside_the_tensor_array_raises_the_read_s_error():
    vals = inputs(np.float32, 4)
    with pytest.raises(ek.errors.InvalidArgumentError, match=r"TensorListGetItem: cannot read index 4 of a "
                                                             r"TensorArray of size 4"):
        session_run(vals, steps=5)


def test_blocks_grow_while_reads_are_sequential_and_start_over_otherwise():
    buf = RNG.standard_normal((200, 2, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 2)).astype(np.float32)
    nxt, size, sizes = -1, 1, []
    for t in range(200):
        if t == nxt and queue:
            row = queue.pop()
            nxt += 1
        else:
            queue, nxt, size = row_products.rows_times(buf, w, t, nxt, size)
            sizes.append(len(queue))
            row = queue.pop()
            nxt += 1
        np.testing.assert_array_equal(row, buf[t] @ w)
    assert sizes == [1, 2, 4, 8, 16, 32, 64, 64, 9]
    queue, t, size = row_products.rows_times(buf, w, 50, nxt, size)      # not the next row: one row
    assert (len(queue), t, size) == (1, 50, 1)
    with pytest.raises(ek.errors.InvalidArgumentError, match="index -1"):
        row_products.rows_times(buf, w, -1, 0, 1)
