"""Symbolic `gradients`: checked against central finite differences of the same graph."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr


def _numeric_grad(sess, y, x, feed, eps=1e-6):
    base = {k: np.array(v, dtype=np.float64) for k, v in feed.items()}
    a = base[x]
    g = np.zeros_like(a)
    flat = a.reshape(-1)
    for i in range(flat.size):
        orig = flat[i]
        flat[i] = orig + eps
        up = float(np.sum(sess.run(y, base)))
        flat[i] = orig - eps
        down = float(np.sum(sess.run(y, base)))
        flat[i] = orig
        g.reshape(-1)[i] = (up - down) / (2 * eps)
    return g


CASES = {
    "mlp": lambda x, w: ek.reduce_sum(ek.tanh(ek.matmul(x, w)) * ek.sigmoid(x[:, :1])),
    "broadcast_div": lambda x, w: ek.reduce_mean(x / (1.5 + ek.square(ek.reduce_sum(w, axis=1)))),
    "exp_log_max": lambda x, w: ek.reduce_max(ek.log(1.0 + ek.exp(ek.matmul(x, w))), axis=0),
    "reshape_transpose": lambda x, w: ek.transpose(ek.reshape(x, [3, 2])) * ek.reduce_sum(w),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    rng = np.random.default_rng(3)
    xv, wv = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [2, 3], name="x")
        w = gr.placeholder(ek.float64, [3, 4], name="w")
        y = CASES[name](x, w)
        gx, gw = gr.gradients(y, [x, w])
    g.verify()
    feed = {x: xv, w: wv}
    with gr.Session(graph=g) as sess:
        got_x, got_w = sess.run([gx, gw], feed)
        np.testing.assert_allclose(got_x, _numeric_grad(sess, y, x, feed), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got_w, _numeric_grad(sess, y, w, feed), rtol=1e-5, atol=1e-7)


def test_gradients_match_the_eager_tape():
    rng = np.random.default_rng(4)
    xv, wv = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    f = CASES["mlp"]
    xt, wt = ek.constant(xv), ek.constant(wv)
    with ek.GradientTape() as tape:
        tape.watch([xt, wt])
        ye = f(xt, wt)
    want = tape.gradient(ye, [xt, wt])
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [2, 3], name="x")
        w = gr.placeholder(ek.float64, [3, 4], name="w")
        grads = gr.gradients(f(x, w), [x, w])
    with gr.Session(graph=g) as sess:
        got = sess.run(grads, {x: xv, w: wv})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-12)


def test_variable_sources_sum_over_reads_and_sgd_step():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(np.array([1.0, 2.0]), name="v")
        loss = ek.reduce_sum(v * v) + ek.reduce_sum(3.0 * v.read_value())
        (dv,) = gr.gradients(loss, [v])
        step = v.assign_sub(0.1 * dv)
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        np.testing.assert_allclose(sess.run(dv), [5.0, 7.0])
        sess.run(step)
        np.testing.assert_allclose(v.numpy(), [0.5, 1.3])


def test_unconnected_grad_ys_and_stop_gradients():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        z = gr.placeholder(ek.float32, [2], name="z")
        i = gr.placeholder(ek.int32, [2], name="i")
        h = x * x
        y = h * 3.0
        gx, gz, gi = gr.gradients(y, [x, z, i])
        (gx2,) = gr.gradients(y, [x], grad_ys=[ek.constant([1.0, 10.0])])
        (gx3,) = gr.gradients(y + x, [x], stop_gradients=[h])
    assert gz is None and gi is None
    with gr.Session(graph=g) as sess:
        feed = {x: [1.0, 2.0]}
        np.testing.assert_allclose(sess.run(gx, feed), [6, 12])
        np.testing.assert_allclose(sess.run(gx2, feed), [6, 120])
        np.testing.assert_allclose(sess.run(gx3, feed), [1, 1])
    assert gx.op.name.startswith("gradients/") and gx2.op.name.startswith("gradients_1/")


def test_gradients_rejects_eager_tensors():
    with pytest.raises(TypeError, match="GradientTape"):
        gr.gradients(ek.constant(1.0), [ek.constant(2.0)])
