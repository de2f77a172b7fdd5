"""Fusion and differentiation: gradients are built on the unfused graph, fusion runs in the plan."""
from __future__ import annotations

import numpy as np

import eager as ek
import graph_runtime as gr
from graph_runtime import fusion
from tracing import function


def _plan_types(fn, *args) -> list:
    cf = fn.get_concrete_function(*args)
    return [s.op.type for s in cf._plan.steps]


def _loss_and_grads(x, w, b):
    with ek.GradientTape() as tape:
        tape.watch([w, b])
        h = ek.tanh(x * w + b) * 1.5 - x
        loss = ek.reduce_sum(ek.square(h) + ek.sigmoid(h))
    gw, gb = tape.gradient(loss, [w, b])
    return loss, gw, gb


def test_gradient_tape_inside_traced_function():
    rng = np.random.default_rng(1)
    x, w, b = (ek.constant(rng.standard_normal((6, 5)).astype(np.float32)) for _ in range(3))
    with fusion.options(numexpr=False):
        fused = function(_loss_and_grads)
        got = fused(x, w, b)
        assert "FusedElementwise" in _plan_types(fused, x, w, b)
    with fusion.options(enabled=False):
        plain = function(_loss_and_grads)
        ref = plain(x, w, b)
        assert "FusedElementwise" not in _plan_types(plain, x, w, b)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r.numpy(), g.numpy())    # same ufuncs, same order: bitwise
    eager = _loss_and_grads(x, w, b)
    for r, g in zip(eager, got):
        np.testing.assert_allclose(r.numpy(), g.numpy(), rtol=1e-5, atol=1e-6)


def test_outer_tape_through_a_fused_traced_function():
    rng = np.random.default_rng(2)
    x = ek.constant(rng.standard_normal((4, 3)).astype(np.float64))

    @function
    def f(x):
        return ek.reduce_sum(ek.exp(ek.tanh(x) * 0.5) - x * x)

    with ek.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x)
    t = np.tanh(x.numpy())
    expected = np.exp(t * 0.5) * 0.5 * (1 - t * t) - 2 * x.numpy()
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-10)
    assert "FusedElementwise" in _plan_types(f, x)


def test_graph_gradients_then_session_fuses_forward_and_backward():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (8, 4), name="x")
        w = gr.placeholder(ek.float32, (4,), name="w")
        y = ek.reduce_sum(ek.nn.relu(x * w + 1.0) * ek.sigmoid(x))
        (dw,) = gr.gradients(y, [w])
    rng = np.random.default_rng(3)
    feeds = {x: rng.standard_normal((8, 4)).astype(np.float32), w: rng.standard_normal(4).astype(np.float32)}
    with fusion.options(numexpr=False):
        with gr.Session(graph=g) as sess:
            got = sess.run([y, dw], feeds)
            groups = sess.last_optimization_report.stats_for("fusion")[0].details["groups"]
    with gr.Session(graph=g, config=gr.SessionConfig(disabled_passes=("fusion",))) as sess:
        ref = sess.run([y, dw], feeds)
    # one group: the sum's gradient seed is a constant and multiplies by one element (arithmetic rules
    # ones_like_small, mul_reduce_grad), so the backward's elementwise ops join the forward's
    assert groups == 1
    for r, v in zip(ref, got):
        np.testing.assert_array_equal(r, v)


def test_training_loop_under_function_matches_unfused():
    rng = np.random.default_rng(4)
    xv = rng.standard_normal((16, 8)).astype(np.float32)
    yv = rng.standard_normal((16, 1)).astype(np.float32)

    def make():
        w = ek.Variable(np.full((8, 1), 0.1, np.float32))
        b = ek.Variable(np.zeros((1,), np.float32))
        opt = ek.optimizers.SGD(0.05)

        @function
        def step(x, y):
            with ek.GradientTape() as tape:
                pred = ek.tanh(ek.matmul(x, w) + b)
                loss = ek.reduce_mean(ek.square(pred - y))
            grads = tape.gradient(loss, [w, b])
            opt.apply_gradients(zip(grads, [w, b]))
            return loss
        return step, w

    with fusion.options(numexpr=False):
        step_f, w_f = make()
        losses_f = [float(step_f(xv, yv).numpy()) for _ in range(5)]
    with fusion.options(enabled=False):
        step_u, w_u = make()
        losses_u = [float(step_u(xv, yv).numpy()) for _ in range(5)]
    assert losses_f == losses_u
    np.testing.assert_array_equal(w_f.numpy(), w_u.numpy())
