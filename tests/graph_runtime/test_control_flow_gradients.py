"""Gradients of cond / switch_case / while_loop in graphs, checked against central finite differences,
against the eager tape, and through a tape recording the If/While op itself."""
import io
import sys

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr

RNG = np.random.default_rng(0)


def numeric_check(program, feeds, wrt, eps=1e-6, rtol=1e-5, atol=1e-7):
    """program(*placeholders) -> scalar; gradients() w.r.t. feeds[wrt] vs central differences."""
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder("float64" if np.asarray(v).dtype.kind == "f" else "int32", np.shape(v))
               for v in feeds]
        y = program(*phs)
        grads = gr.gradients(y, [phs[i] for i in wrt])
    sess = gr.Session(graph=g)
    f = lambda vals: float(sess.run(y, dict(zip(phs, vals))))  # noqa: E731
    got = sess.run(grads, dict(zip(phs, feeds)))
    for k, i in enumerate(wrt):
        x0 = np.asarray(feeds[i], np.float64)
        num = np.zeros_like(x0)
        for idx in np.ndindex(x0.shape):
            plus, minus = [list(feeds), list(feeds)]
            xp, xm = x0.copy(), x0.copy()
            xp[idx] += eps
            xm[idx] -= eps
            plus[i], minus[i] = xp, xm
            num[idx] = (f(plus) - f(minus)) / (2 * eps)
        np.testing.assert_allclose(got[k], num, rtol=rtol, atol=atol, err_msg=f"gradient w.r.t. input {i}")
    return got


def cond_prog(x, w):
    return ek.reduce_sum(ek.cond(ek.reduce_sum(x) > 0, lambda: ek.sin(x) * w, lambda: x * x + w))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_gradient(sign):
    numeric_check(cond_prog, [sign * np.array([0.3, 0.7]), np.array([1.5, -0.5])], [0, 1])


@pytest.mark.parametrize("index", [0, 1, 5])
def test_switch_case_gradient(index):
    def prog(i, x, w):
        return ek.reduce_sum(ek.switch_case(i, [lambda: x * w, lambda: ek.exp(x)], default=lambda: w * w))
    numeric_check(prog, [np.int32(index), np.array([0.2, -0.4]), np.array([1.1, 0.9])], [1, 2])


def rnn_prog(n, h0, w, b):
    def body(i, h):
        return i + 1, ek.tanh(h * w + b)
    return ek.reduce_sum(ek.while_loop(lambda i, h: i < n, body, [ek.constant(0), h0])[1])


@pytest.mark.parametrize("steps", [0, 1, 6])
def test_while_gradient(steps):
    got = numeric_check(rnn_prog, [np.int32(steps), np.array([0.1, -0.2, 0.3]), np.array([0.9, 1.1, -0.7]),
                                   np.array([0.05, 0.0, -0.1])], [1, 2, 3])
    if steps == 0:
        np.testing.assert_allclose(got[0], np.ones(3))     # identity: the loop never ran
        np.testing.assert_allclose(got[1], np.zeros(3))


@pytest.mark.parametrize("limit", [0, 2, 50])
def test_while_gradient_with_maximum_iterations(limit):
    def prog(x, w):
        out = ek.while_loop(lambda v: ek.reduce_sum(v) < 20.0, lambda v: v * w + 0.1, [x],
                            maximum_iterations=limit)[0]
        return ek.reduce_sum(out)
    numeric_check(prog, [np.array([0.5, 0.2]), np.array([1.3, 0.8])], [0, 1], rtol=1e-4)


def test_nested_cond_in_while_in_cond_gradient():
    def prog(x, w):
        def loop():
            def body(i, v):
                v = ek.cond(ek.equal(i % 2, 0), lambda: ek.sin(v * w), lambda: v * v + w)
                return i + 1, v
            return ek.while_loop(lambda i, v: i < 5, body, [ek.constant(0), x])[1]
        return ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 0, loop, lambda: x * w))
    numeric_check(prog, [np.array([0.3, -0.6]), np.array([0.7, 0.4])], [0, 1])
    numeric_check(prog, [np.array([0.3, -0.6]), np.array([-0.7, 0.4])], [0, 1])


def test_nested_while_in_while_gradient():
    def prog(x, w):
        def outer(i, v):
            inner = ek.while_loop(lambda j, u: j < i, lambda j, u: (j + 1, ek.tanh(u * w)), [ek.constant(0), v])
            return i + 1, inner[1] + x
        return ek.reduce_sum(ek.while_loop(lambda i, v: i < 4, outer, [ek.constant(0), x])[1])
    numeric_check(prog, [np.array([0.3, -0.6]), np.array([0.9, 1.2])], [0, 1])


def test_gradient_with_respect_to_a_variable_read_inside_the_loop_matches_the_eager_tape():
    w0, x0 = np.array([[0.5, -0.3], [0.2, 0.8]]), np.array([[1.0, -1.0]])

    def step(w, x):
        def body(i, h):
            return i + 1, ek.tanh(ek.matmul(h, w) + x)
        return ek.reduce_sum(ek.while_loop(lambda i, h: i < 4, body, [ek.constant(0), x])[1])

    w = ek.Variable(w0)
    with ek.GradientTape() as tape:
        loss = step(w, ek.constant(x0))
    eager_grad = tape.gradient(loss, w).numpy()

    g = gr.Graph()
    with g.as_default():
        wv = ek.Variable(w0, name="w")
        x = gr.placeholder("float64", (1, 2))
        loss_g = step(wv, x)
        (grad,) = gr.gradients(loss_g, [wv])
        with ek.GradientTape() as tape_g:            # a tape in a graph records the While op itself
            loss_t = step(wv, x)
        grad_t = tape_g.gradient(loss_t, wv)
        init = gr.global_variables_initializer()
    sess = gr.Session(graph=g)
    sess.run(init)
    a, b = sess.run([grad, grad_t], {x: x0})
    np.testing.assert_allclose(a, eager_grad, rtol=1e-10)
    np.testing.assert_allclose(b, eager_grad, rtol=1e-10)


def test_gradient_does_not_repeat_side_effects():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", ())

        def body(i, v):
            ek.print("step", i, output_stream=sys.stdout)
            return i + 1, v * x
        out = ek.while_loop(lambda i, v: i < 3, body, [ek.constant(0), ek.constant(1.0, "float64")])[1]
        (dx,) = gr.gradients(out, [x])
    sess = gr.Session(graph=g)
    buf = io.StringIO()
    old, sys.stdout = sys.stdout, buf
    try:
        val, grad = sess.run([out, dx], {x: 2.0})
    finally:
        sys.stdout = old
    assert buf.getvalue() == "step 0\nstep 1\nstep 2\n"
    assert val == 8.0 and grad == 12.0


def test_integer_values_get_no_gradient():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", ())
        n = gr.placeholder("int32", ())
        i, v = ek.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * x), [ek.constant(0), x])
        assert gr.gradients(v, [n]) == [None]
        assert gr.gradients(ek.cast(i, "float64"), [x]) == [None]
