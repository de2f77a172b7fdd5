"""A compiled plan freezes its control-flow ops' gradient state; a gradient built afterwards gets its own
forward op (issue 14 item 5b).  Results match the eager tape in every order of building and running."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import UnimplementedError

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


def _cf_ops(g):
    return [op for op in g.get_operations() if op.type.lstrip("Stateless") in ("If", "Case", "While")]


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
    states = [op.get_attr("grad_state") for op in _cf_ops(g)]
    frozen = [s for s in states if s.frozen]
    with g.as_default():
        grads = gr.gradients(y, [x, w])
    want_y, want_g = eager_grad(program, X0, W0)
    got_y, *got_g = sess.run([y] + grads, feeds, options=opts)
    np.testing.assert_allclose(y_first, want_y, rtol=1e-12)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-12)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(forward(X0, W0), want_y, rtol=1e-12)
    # an op some plan froze was not changed: its state saves nothing, and a copy took the gradient's requests
    for s in frozen:
        assert not s.active and s.successor is not None
    if not optimize:
        assert frozen                 # the plans ran the user's own ops
    # building a second gradient reuses the copy until a plan freezes it
    n_ops = len(g.get_operations())
    with g.as_default():
        again = gr.gradients(y, [x])
    assert not any(op.name.endswith("_for_grad_1") for op in g.get_operations()[n_ops:])
    np.testing.assert_allclose(sess.run(again[0], feeds), want_g[0], rtol=1e-10, atol=1e-12)


def test_gradient_before_running_needs_no_copy():
    g, x, w, y = program_graph(rnn)
    with g.as_default():
        grads = gr.gradients(y, [x, w])
    with gr.Session(graph=g) as sess:
        got = sess.run(grads, {x: X0, w: W0})
    assert not any(op.name.endswith("_for_grad") for op in g.get_operations())
    for a, b in zip(got, eager_grad(rnn, X0, W0)[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_second_order_after_the_forward_ran():
    g, x, w, y = program_graph(rnn)
    sess = gr.Session(graph=g)
    sess.run(y, {x: X0, w: W0})
    with g.as_default():
        (gx,) = gr.gradients(y, [x])
    sess.run(gx, {x: X0, w: W0})                               # freezes the copy too
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


def _stateful_loop():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", [3])
        count = ek.Variable(0, name="count")

        def body(i, h):
            count.assign_add(1)
            return i + 1, ek.tanh(h * 0.5 + x)
        y = ek.reduce_sum(ek.while_loop(lambda i, h: i < 2, body, [ek.constant(0), x])[1])
        init = gr.global_variables_initializer()
    return g, x, count, y, init


def test_stateful_body_gradient_after_its_op_ran_is_refused_with_the_users_line():
    g, x, count, y, init = _stateful_loop()
    sess = gr.Session(graph=g, config=gr.SessionConfig(optimize=False))    # the plan runs the user's op
    sess.run(init)
    sess.run(y, {x: X0})
    with g.as_default(), pytest.raises(UnimplementedError, match=r"While op .* \(created at .*"
                                       r"test_grad_state_frozen.py:\d+\).*reads or writes state.*before the first"):
        gr.gradients(y, [x])
    assert sess.run(count) == 2                                 # the loop ran once, nothing ran it again


def test_stateful_body_gradient_after_an_optimized_run_runs_the_loop_once_per_step():
    g, x, count, y, init = _stateful_loop()
    sess = gr.Session(graph=g)          # the optimizer ran a copy of the op: the user's op is not frozen
    sess.run(init)
    sess.run(y, {x: X0})
    with g.as_default():
        (gx,) = gr.gradients(y, [x])
    got = sess.run(gx, {x: X0})
    assert sess.run(count) == 4
    xt = ek.constant(X0)
    with ek.GradientTape() as tape:
        tape.watch(xt)
        h = xt
        for _ in range(2):
            h = ek.tanh(h * 0.5 + xt)
        yy = ek.reduce_sum(h)
    np.testing.assert_allclose(got, tape.gradient(yy, xt).numpy(), rtol=1e-10)
