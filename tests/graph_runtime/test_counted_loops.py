"""Counted While loops (`t < N`, `t + 1`: control_flow/counter.py) run over a Python range, with the same
results as the general loop (the same program with its condition written `N > t`), as eager execution, and
as `@function`: the loop variables' values and dtypes, the reads' errors, `maximum_iterations`, gradients."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError
from graph_runtime.control_flow.plans import compiled_plans
from tracing import function

RNG = np.random.default_rng(5)
XS = RNG.standard_normal((8, 3, 4)).astype(np.float32)
WX = (RNG.standard_normal((4, 5)) * 0.3).astype(np.float32)
WH = (RNG.standard_normal((5, 5)) * 0.3).astype(np.float32)


def rnn(xs, start, stop, dtype="int32", counted=True, max_iter=None, use_t=False):
    """`h = tanh(ta.read(t) @ Wx + h @ Wh)` for t from `start` while `t < stop` (or `stop > t`, which is
    not a counted loop); with `use_t` the body also scales by t (the counter is not only an index)."""
    ta = ek.TensorArray("float32", size=xs.shape[0]).unstack(xs)

    def cond(t, h):
        return t < stop if counted else ek.greater(ek.constant(stop, dtype), t)

    def body(t, h):
        h = ek.tanh(ek.matmul(ta.read(t), WX) + ek.matmul(h, WH))
        if use_t:
            h = h * ek.cast(t, "float32")
        return t + 1, h
    return ek.while_loop(cond, body, [ek.constant(start, dtype), ek.zeros((3, 5))], maximum_iterations=max_iter)


def session_run(**kw):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", XS.shape)
        t, h = rnn(x, **kw)
    with gr.Session(graph=g) as sess:
        out = sess.run([t, h], {x: XS})
    body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    (loop,) = compiled_plans(body, "loop")
    return out, loop.source


def check_same(got, want):
    (t1, h1), (t2, h2) = got, want
    assert np.asarray(t1).dtype == np.asarray(t2).dtype and int(t1) == int(t2)
    np.testing.assert_array_equal(h1, h2)


@pytest.mark.parametrize("start, stop, max_iter", [(0, 8, None), (3, 7, None), (9, 7, None), (7, 7, None),
                                                    (0, 8, 3), (2, 8, 0), (2, 8, -1), (5, 8, 100)])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_counted_loop_matches_general_loop_eager_and_function(start, stop, max_iter, dtype):
    kw = dict(start=start, stop=stop, dtype=dtype, max_iter=max_iter)
    got, source = session_run(**kw)
    assert "for t in range(t0, end):" in source
    general, gsource = session_run(counted=False, **kw)
    assert "while True:" in gsource
    check_same(got, general)
    eager_t, eager_h = rnn(ek.constant(XS), **kw)
    check_same(got, (eager_t.numpy(), eager_h.numpy()))
    fn_t, fn_h = function(lambda x: rnn(x, **kw))(XS)
    check_same(got, (np.asarray(fn_t), np.asarray(fn_h)))


def test_counter_used_as_a_value_keeps_its_steps():
    got, source = session_run(start=1, stop=6, use_t=True)
    assert "for t in range(t0, end):" in source and "v0 + " in source       # v0 stepped as before
    check_same(got, session_run(start=1, stop=6, use_t=True, counted=False)[0])
    t, h = rnn(ek.constant(XS), start=1, stop=6, use_t=True)
    check_same(got, (t.numpy(), h.numpy()))


def test_counted_loop_gradients_equal_the_general_loops():
    def grads(counted):
        g = gr.Graph()
        with g.as_default():
            x = gr.placeholder("float32", XS.shape)
            wx, wh = ek.constant(WX), ek.constant(WH)
            ta = ek.TensorArray("float32", size=XS.shape[0]).unstack(x)

            def body(t, h):
                return t + 1, ek.tanh(ek.matmul(ta.read(t), wx) + ek.matmul(h, wh))
            cond = (lambda t, h: t < 8) if counted else (lambda t, h: ek.greater(ek.constant(8), t))
            _, h = ek.while_loop(cond, body, [ek.constant(0), ek.zeros((3, 5))])
            dw = gr.gradients(ek.reduce_sum(h), [wx, wh])
        with gr.Session(graph=g) as sess:
            return sess.run(dw, {x: XS})
    for a, b in zip(grads(True), grads(False)):
        np.testing.assert_array_equal(a, b)


def test_loops_that_are_not_counted_run_the_general_loop():
    def source(cond, step):
        g = gr.Graph()
        with g.as_default():
            out = ek.while_loop(cond, lambda i, v: (i + step, v * 2.0), [ek.constant(0), ek.constant(1.0)])
        with gr.Session(graph=g) as sess:
            got = sess.run(out)
        body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
        return got, compiled_plans(body, "loop")[0].source
    got, src = source(lambda i, v: i < 7, 2)                       # stepped by two
    assert "while True:" in src and got[0] == 8 and got[1] == 16.0
    got, src = source(lambda i, v: i <= 6, 1)                      # another comparison
    assert "while True:" in src and got[0] == 7 and got[1] == 128.0
    got, src = source(lambda i, v: i < 6, 1)
    assert "for t in range(t0, end):" in src and got[0] == 6 and got[1] == 64.0


def test_a_read_past_the_end_raises_the_reads_error_in_a_counted_loop():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", XS.shape)
        out = rnn(x, start=5, stop=10)
    with gr.Session(graph=g) as sess, pytest.raises(InvalidArgumentError, match="TensorListGetItem.*index 8"):
        sess.run(out, {x: XS})


def read_twice(xs, start, stop, counted=True, product=True):
    """A body whose read is used by the product (unless not `product`) and again, so the read itself runs,
    not only its row's product: its row is taken directly when the loop's range is inside the buffer."""
    ta = ek.TensorArray("float32", size=xs.shape[0]).unstack(xs)

    def body(t, h):
        x_t = ta.read(t)
        z = ek.matmul(h, WH) + (ek.matmul(x_t, WX) if product else 0.0)
        return t + 1, ek.tanh(z) + ek.reduce_sum(x_t)
    cond = (lambda t, h: t < stop) if counted else (lambda t, h: ek.greater(ek.constant(stop), t))
    return ek.while_loop(cond, body, [ek.constant(start), ek.zeros((3, 5))])


def run_read_twice(**kw):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", XS.shape)
        out = read_twice(x, kw.pop("start"), kw.pop("stop"), **kw)
    with gr.Session(graph=g) as sess:
        got = sess.run(out, {x: XS})
    body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    return got, compiled_plans(body, "loop")[0].source


@pytest.mark.parametrize("product", [True, False])
@pytest.mark.parametrize("start, stop", [(0, 8), (2, 5), (6, 6)])
def test_reads_in_range_take_the_row_directly(start, stop, product):
    got, source = run_read_twice(start=start, stop=stop, product=product)
    assert "[t] if rd else" in source
    check_same(got, run_read_twice(start=start, stop=stop, counted=False, product=product)[0])
    t, h = read_twice(ek.constant(XS), start, stop, product=product)
    check_same(got, (t.numpy(), h.numpy()))


@pytest.mark.parametrize("product", [True, False])
@pytest.mark.parametrize("start, stop, index", [(5, 10, 8), (-1, 3, -1)])
def test_reads_out_of_range_raise_the_reads_error(start, stop, index, product):
    with pytest.raises(InvalidArgumentError, match=f"TensorListGetItem.*index {index}"):
        run_read_twice(start=start, stop=stop, product=product)


# ------------------------------------------------------------------ a limit captured by the loop
def rnn_to(xs, n, start=0, max_iter=None, counted=True):
    """The RNN for t from `start` while `t < n`, `n` a tensor the loop captures (or `n > t`: not counted)."""
    ta = ek.TensorArray("float32", size=xs.shape[0]).unstack(xs)

    def body(t, h):
        return t + 1, ek.tanh(ek.matmul(ta.read(t), WX) + ek.matmul(h, WH))
    cond = (lambda t, h: t < n) if counted else (lambda t, h: ek.greater(n, t))
    start = ek.constant(start, n.dtype)
    return ek.while_loop(cond, body, [start, ek.zeros((3, 5))], maximum_iterations=max_iter)


def run_to(n, dtype="int32", **kw):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", XS.shape)
        limit = gr.placeholder(dtype, [])
        out = rnn_to(x, limit, **kw)
    with gr.Session(graph=g) as sess:
        got = sess.run(out, {x: XS, limit: np.asarray(n, dtype)})
    body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    return got, compiled_plans(body, "loop")[0].source


@pytest.mark.parametrize("n, start, max_iter", [(8, 0, None), (6, 2, None), (0, 0, None), (-3, 0, None),
                                                (8, 0, 3), (2, 5, None), (7, 1, 0)])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_a_captured_limit_makes_a_counted_loop(n, start, max_iter, dtype):
    got, source = run_to(n, dtype, start=start, max_iter=max_iter)
    assert "end = int(x" in source and "for t in range(t0, end):" in source
    general, gsource = run_to(n, dtype, start=start, max_iter=max_iter, counted=False)
    assert "while True:" in gsource
    check_same(got, general)
    limit = ek.constant(n, dtype)
    t, h = rnn_to(ek.constant(XS), limit, start=start, max_iter=max_iter)
    check_same(got, (t.numpy(), h.numpy()))
    fn_t, fn_h = function(lambda x, m: rnn_to(x, m, start=start, max_iter=max_iter))(XS, limit)
    check_same(got, (np.asarray(fn_t), np.asarray(fn_h)))


def test_a_captured_limit_past_the_end_raises_the_reads_error():
    with pytest.raises(InvalidArgumentError, match="TensorListGetItem.*index 8"):
        run_to(10)


def test_for_over_a_tensor_range_runs_counted_in_a_function():
    def total(x, n):
        s = ek.zeros((4,))
        for i in ek.range(n):
            s = s + x[i] * ek.cast(i, "float32")
        return s
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    traced = function(total)
    for n in (0, 3, 6):
        want = sum((x[i] * np.float32(i) for i in range(n)), np.zeros(4, np.float32))
        np.testing.assert_array_equal(traced(x, ek.constant(n)).numpy(), want)
        np.testing.assert_array_equal(total(ek.constant(x), ek.constant(n)).numpy(), want)
    graph = traced.get_concrete_function(x, ek.constant(3)).graph
    body = next(o for o in graph.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    assert any("end = int(x" in p.source for p in compiled_plans(body, "loop"))


def test_a_limit_that_is_a_loop_variable_is_not_counted():
    g = gr.Graph()
    with g.as_default():
        out = ek.while_loop(lambda i, m: i < m, lambda i, m: (i + 1, m - 1), [ek.constant(0), ek.constant(9)])
    with gr.Session(graph=g) as sess:
        i, m = sess.run(out)
    body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    assert "while True:" in compiled_plans(body, "loop")[0].source and (i, m) == (5, 4)


# ------------------------------------------------------------------ x[t]: row indexing at the counter
def rnn_getitem(xs, start, stop, counted=True, twice=False):
    """The RNN over `xs[t]` (StridedSlice of Pack(t)); with `twice` the row is read again beside the
    product (the read itself runs, not only its row's product)."""
    def body(t, h):
        x_t = xs[t]
        h = ek.tanh(ek.matmul(x_t, WX) + ek.matmul(h, WH))
        return t + 1, (h + ek.reduce_sum(x_t) if twice else h)
    cond = (lambda t, h: t < stop) if counted else (lambda t, h: ek.greater(ek.constant(stop), t))
    return ek.while_loop(cond, body, [ek.constant(start), ek.zeros((3, 5))])


def run_getitem(start, stop, with_grads=False, **kw):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", XS.shape)
        t, h = rnn_getitem(x, start, stop, **kw)
        fetch = [t, h] + (gr.gradients(ek.reduce_sum(h), [x]) if with_grads else [])
    with gr.Session(graph=g) as sess:
        got = sess.run(fetch, {x: XS})
    body = next(o for o in g.get_operations() if o.type in ("While", "StatelessWhile")).get_attr("body")
    return got, [p.source for p in compiled_plans(body, "loop")]


@pytest.mark.parametrize("twice", [False, True])
@pytest.mark.parametrize("start, stop", [(0, 8), (2, 6), (-3, 2), (-8, 8), (5, 5)])
def test_row_indexing_at_the_counter_takes_rows_and_products_directly(start, stop, twice):
    (t, h), sources = run_getitem(start, stop, twice=twice)
    (src,) = sources
    assert "for t in range(t0, end):" in src and "(v0)" not in src.split("for t in")[1]    # no Pack of t
    assert ("_rr" in src) and (("x0[t] if rd else" in src) == twice)
    if start >= 0:
        assert "v0 + " not in src                   # the counter is stepped once, after the loop
    (gt, gh), gsources = run_getitem(start, stop, counted=False, twice=twice)
    assert "while True:" in gsources[0]
    check_same((t, h), (gt, gh))
    et, eh = rnn_getitem(ek.constant(XS), start, stop, twice=twice)
    check_same((t, h), (et.numpy(), eh.numpy()))
    ft, fh = function(lambda x: rnn_getitem(x, start, stop, twice=twice))(XS)
    check_same((t, h), (np.asarray(ft), np.asarray(fh)))


def test_row_indexing_gradients_equal_the_general_loops():
    got, _ = run_getitem(1, 7, with_grads=True, twice=True)
    want, _ = run_getitem(1, 7, with_grads=True, twice=True, counted=False)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("twice", [False, True])
@pytest.mark.parametrize("start, stop", [(5, 10), (-9, 2)])
def test_row_indexing_out_of_range_raises_the_slices_error(start, stop, twice):
    with pytest.raises(InvalidArgumentError, match="StridedSlice.*out of bounds"):
        run_getitem(start, stop, twice=twice)
