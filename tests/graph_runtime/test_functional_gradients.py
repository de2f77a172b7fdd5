"""Gradients never change the graph they differentiate: running, differentiating, optimizing and exporting
leave every op (type, inputs, attrs, bodies) as built, and gradients built after any number of runs are
right, stateful loop bodies included.  Results match the eager tape in every order of building and running."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function

X0 = np.array([0.3, -0.2, 0.5])
W0 = np.array([1.1, 0.7, -0.4])


def rnn(x, w):
    def body(i, h):
        return i + 1, ek.tanh(h * w + x)
    return ek.reduce_sum(ek.while_loop(lambda i, h: i < 3, body, [ek.constant(0), x])[1])


def branchy(x, w):
    return ek.reduce_sum(ek.cond(ek.reduce_sum(x) > 0, lambda: ek.sin(x * w) * w, lambda: x * x + w))


def nested(x, w):
    return ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 0, lambda: rnn(x, w) * x, lambda: x * w))


def program_graph(program):
    """(graph, x, w, program(x, w)) with x and w float64[3] placeholders."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", [3])
        w = gr.placeholder("float64", [3])
        return g, x, w, program(x, w)


def eager_grad(program, x, w):
    xt, wt = ek.constant(x), ek.constant(w)
    with ek.GradientTape() as tape:
        tape.watch(xt)
        tape.watch(wt)
        y = program(xt, wt)
    return y.numpy(), [g.numpy() for g in tape.gradient(y, [xt, wt])]


def snapshot(graph, seen=None):
    """Everything about every op of `graph` that could be mutated, bodies included, as plain data."""
    seen = set() if seen is None else seen
    out = []
    for op in graph.get_operations():
        attrs = {k: _snap(v, seen) for k, v in op._attrs.items()}
        out.append((op.name, op.type, id(op._attrs), tuple(t.name for t in op.inputs),
                    tuple(c.name for c in op.control_inputs), tuple((o.dtype.name, o.shape.dims) for o in op.outputs),
                    attrs))
    return (len(graph.get_operations()), tuple(t.name for t in graph.inputs), tuple(t.name for t in graph.outputs),
            out)


def _snap(v, seen):
    if isinstance(v, gr.Graph):
        if id(v) in seen:
            return ("graph", id(v))
        seen.add(id(v))
        return ("graph", id(v), snapshot(v, seen))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_snap(x, seen) for x in v))
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes())
    return ("value", id(v), repr(v))


def _stateful_program():
    """A while loop whose body increments a variable, inside a graph with a cond; (graph, x, count, y)."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", [3], name="x")
        count = ek.Variable(0, name="count")

        def body(i, h):
            count.assign_add(1)
            return i + 1, ek.tanh(h * 0.5 + x)
        h = ek.while_loop(lambda i, h: i < 2, body, [ek.constant(0), x])[1]
        y = ek.reduce_sum(ek.cond(ek.reduce_sum(h) > 0, lambda: ek.sin(h) * h, lambda: h * h))
        init = gr.global_variables_initializer()
    return g, x, count, y, init


def _stateful_eager(x):
    h = x
    for _ in range(2):
        h = ek.tanh(h * 0.5 + x)
    return ek.reduce_sum(ek.sin(h) * h) if float(ek.reduce_sum(h).numpy()) > 0 else ek.reduce_sum(h * h)


@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "unoptimized"])
def test_run_differentiate_run_optimize_export_changes_no_op(optimize):
    g, x, count, y, init = _stateful_program()
    before = snapshot(g)
    sess = gr.Session(graph=g, config=gr.SessionConfig(optimize=optimize))
    sess.run(init)
    sess.run(y, {x: X0})
    sess.run(y, {x: X0}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE))
    assert sess.run(count) == 4
    assert snapshot(g) == before
    n_forward = len(g.get_operations())
    with g.as_default():
        (gx,) = gr.gradients(y, [x])               # built after two runs of a stateful loop
    assert snapshot(g)[3][:n_forward] == before[3]    # gradient ops were added; no existing op changed
    after_grad = snapshot(g)
    got_y, got_gx = sess.run([y, gx], {x: X0})
    assert sess.run(count) == 6                     # forward and gradient in one run: the loop ran once
    sess.run(gx, {x: X0})
    assert sess.run(count) == 8                     # the gradient alone runs the loop once, too
    sess.run(y, {x: X0})
    assert sess.run(count) == 10
    gr.optimize(g, [y, gx])
    g.as_graph_def()
    assert snapshot(g) == after_grad
    xt = ek.constant(X0)
    with ek.GradientTape() as tape:
        tape.watch(xt)
        want = _stateful_eager(xt)
    np.testing.assert_allclose(got_y, want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_gx, tape.gradient(want, xt).numpy(), rtol=1e-10)
    eps = 1e-6                                      # and against central differences
    for i in range(3):
        d = np.zeros(3)
        d[i] = eps
        num = (_stateful_eager(ek.constant(X0 + d)).numpy() - _stateful_eager(ek.constant(X0 - d)).numpy()) / (2 * eps)
        np.testing.assert_allclose(got_gx[i], num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("program", [rnn, branchy, nested], ids=["while", "cond", "while_in_cond"])
@pytest.mark.parametrize("trace", [False, True], ids=["plain", "full_trace"])
@pytest.mark.parametrize("optimize", [True, False], ids=["optimized", "unoptimized"])
def test_gradient_built_after_the_forward_ran_matches_eager(program, trace, optimize):
    g, x, w, y = program_graph(program)
    feeds = {x: X0, w: W0}
    opts = gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE) if trace else None
    sess = gr.Session(graph=g, config=gr.SessionConfig(optimize=optimize))
    y_first = sess.run(y, feeds, options=opts)
    forward = sess.make_callable(y, [x, w])                 # a plan compiled before any gradient exists
    before = snapshot(g)
    with g.as_default():
        grads = gr.gradients(y, [x, w])
    want_y, want_g = eager_grad(program, X0, W0)
    got_y, *got_g = sess.run([y] + grads, feeds, options=opts)
    np.testing.assert_allclose(y_first, want_y, rtol=1e-12)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-12)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(forward(X0, W0), want_y, rtol=1e-12)
    assert snapshot(g)[3][:len(before[3])] == before[3]
    assert not any(op.name.endswith("_for_grad") for op in g.get_operations())   # no forward copies
    with g.as_default():
        again = gr.gradients(y, [x])                      # a second gradient reads the same forward op
    np.testing.assert_allclose(sess.run(again[0], feeds), want_g[0], rtol=1e-10, atol=1e-12)


def test_a_forward_plan_saves_nothing_the_gradient_plan_saves_what_it_reads():
    g, x, w, y = program_graph(rnn)
    with g.as_default():
        grads = gr.gradients(y, [x, w])
    (loop,) = [op for op in g.get_operations() if op.type.endswith("While")]
    assert "saves" not in loop.attrs
    with gr.Session(graph=g) as sess:
        got = sess.run(grads, {x: X0, w: W0})
        sess.run(y, {x: X0, w: W0})
    assert "saves" not in loop.attrs
    for a, b in zip(got, eager_grad(rnn, X0, W0)[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_second_order_after_the_forward_ran():
    g, x, w, y = program_graph(rnn)
    sess = gr.Session(graph=g)
    sess.run(y, {x: X0, w: W0})
    with g.as_default():
        (gx,) = gr.gradients(y, [x])
    sess.run(gx, {x: X0, w: W0})
    with g.as_default():
        (gxx,) = gr.gradients(ek.reduce_sum(gx), [x])
    got = sess.run(gxx, {x: X0, w: W0})
    xt, wt = ek.constant(X0), ek.constant(W0)
    with ek.GradientTape() as t2:
        t2.watch(xt)
        with ek.GradientTape() as t1:
            t1.watch(xt)
            yy = rnn(xt, wt)
        inner = ek.reduce_sum(t1.gradient(yy, xt))
    np.testing.assert_allclose(got, t2.gradient(inner, xt).numpy(), rtol=1e-9, atol=1e-12)


def test_a_tape_around_a_function_with_a_stateful_loop_after_plain_calls():
    count = ek.Variable(0, name="count")

    @function
    def f(x):
        def body(i, h):
            count.assign_add(1)
            return i + 1, ek.tanh(h * 0.5 + x)
        return ek.reduce_sum(ek.while_loop(lambda i, h: i < 2, body, [ek.constant(0), x])[1])

    x = ek.constant(X0)
    f(x)
    f(x)                                       # plain calls first: the function's plan ran the loop
    cf = f.get_concrete_function(x)
    before = snapshot(cf.graph)
    for calls in (1, 2):
        with ek.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        got = tape.gradient(y, x)
        assert int(count.numpy()) == 4 + 2 * calls        # once per call; tape.gradient runs no forward
    assert snapshot(cf.graph) == before                   # tape calls add nothing to the traced graph
    with ek.GradientTape() as tape:
        tape.watch(x)
        h = x
        for _ in range(2):
            h = ek.tanh(h * 0.5 + x)
        want = ek.reduce_sum(h)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got.numpy(), tape.gradient(want, x).numpy(), rtol=1e-10)
