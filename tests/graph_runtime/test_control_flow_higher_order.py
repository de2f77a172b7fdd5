"""Second and third derivatives through cond / switch_case / while_loop in graphs (`gradients` of
`gradients`, tapes in traced functions), checked against central finite differences in float64, and
the error paths (ragged loop values, GraphDef round trip of higher-order graphs)."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError

RNG = np.random.default_rng(1)


def _weights(shapes):
    return [RNG.standard_normal(s) for s in shapes]


def higher_order_check(program, feeds, order=2, eps=1e-5, rtol=1e-5, atol=1e-7):
    """`program(*placeholders) -> scalar`.  Builds s_1 = program, s_{k+1} = sum_i <grad s_k wrt x_i, c_i>
    (random c) up to `order`, and checks gradients(s_order) against central differences of s_order."""
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder("float64", np.shape(v)) for v in feeds]
        s = program(*phs)
        for _ in range(order - 1):
            grads = gr.gradients(s, phs)
            assert all(d is not None for d in grads)
            s = ek.add_n([ek.reduce_sum(d * ek.constant(c)) for d, c in zip(grads, _weights([np.shape(v) for v in feeds]))])
        top = gr.gradients(s, phs)
    sess = gr.Session(graph=g)
    got = sess.run(top, dict(zip(phs, feeds)))
    for i, x0 in enumerate(feeds):
        num = np.zeros_like(x0)
        for idx in np.ndindex(x0.shape):
            vals_p, vals_m = [v.copy() for v in feeds], [v.copy() for v in feeds]
            vals_p[i][idx] += eps
            vals_m[i][idx] -= eps
            num[idx] = (sess.run(s, dict(zip(phs, vals_p))) - sess.run(s, dict(zip(phs, vals_m)))) / (2 * eps)
        np.testing.assert_allclose(got[i], num, rtol=rtol, atol=atol, err_msg=f"order {order}, input {i}")
    return got


X = np.array([0.3, -0.6])
W = np.array([0.7, 1.1])


def cond_prog(x, w):
    return ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 1.5, lambda: ek.sin(x * w) * x, lambda: x * x * ek.exp(w)))


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("w", [W, -W])
def test_cond(order, w):
    higher_order_check(cond_prog, [X, w], order)


@pytest.mark.parametrize("index", [0, 1, 7])
def test_switch_case_second_order(index):
    def prog(x, w):
        return ek.reduce_sum(ek.switch_case(ek.constant(index), [lambda: ek.tanh(x * w) * w, lambda: x * x * x],
                                            default=lambda: ek.sin(w) * x * x))
    higher_order_check(prog, [X, W], 2)


def test_cond_returning_a_capture_and_an_integer():
    def prog(x, w):
        a, k = ek.cond(ek.reduce_sum(x) < 0, lambda: (x, ek.constant(1)), lambda: (x * w * w, ek.constant(2)))
        return ek.reduce_sum(a * a * w) + ek.cast(k, "float64")
    higher_order_check(prog, [X, W], 2)


def test_nested_cond():
    def prog(x, w):
        inner = lambda: ek.cond(ek.reduce_sum(x) < 0, lambda: ek.sin(x) * w, lambda: w * w)  # noqa: E731
        return ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 0, lambda: inner() * x, lambda: x))
    higher_order_check(prog, [X, W], 2)
    higher_order_check(prog, [X, W], 3)


def rnn_prog(x, w):
    def body(i, h):
        return i + 1, ek.tanh(h * w + x)
    return ek.reduce_sum(ek.while_loop(lambda i, h: i < 4, body, [ek.constant(0), x])[1] ** 2)


def cond_in_while_prog(x, w):
    def body(i, v):
        return i + 1, ek.cond(ek.equal(i % 2, 0), lambda: ek.sin(v * w), lambda: v * v + w)
    return ek.reduce_sum(ek.while_loop(lambda i, v: i < 4, body, [ek.constant(0), x])[1])


@pytest.mark.parametrize("order", [2, 3])
def test_while(order):
    higher_order_check(rnn_prog, [X, W], order, rtol=1e-4)


@pytest.mark.parametrize("limit", [0, 1, 3])
def test_while_with_maximum_iterations(limit):
    def prog(x, w):
        out = ek.while_loop(lambda v: ek.reduce_sum(v) < 20.0, lambda v: ek.sin(v) * w + v * v, [x],
                            maximum_iterations=limit)[0]
        return ek.reduce_sum(out * w)
    higher_order_check(prog, [X, W], 2)


def test_cond_inside_while():
    higher_order_check(cond_in_while_prog, [X, W], 2)
    higher_order_check(cond_in_while_prog, [X, W], 3, rtol=1e-4)


def test_while_inside_cond_and_nested_while():
    def prog(x, w):
        def loop():
            def outer(i, v):
                inner = ek.while_loop(lambda j, u: j < i, lambda j, u: (j + 1, ek.tanh(u * w)), [ek.constant(0), v])
                return i + 1, inner[1] + x
            return ek.while_loop(lambda i, v: i < 3, outer, [ek.constant(0), x])[1]
        return ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 0, loop, lambda: x * w))
    higher_order_check(prog, [X, W], 2)


def test_while_with_two_float_loop_variables_and_a_matrix():
    m = np.array([[0.5, -0.2], [0.3, 0.4]])

    def prog(x, w, mat):
        def body(i, a, b):
            return i + 1, ek.tanh(ek.matmul(a, mat) + b), b * w
        _, a, b = ek.while_loop(lambda i, a, b: i < 3, body, [ek.constant(0), ek.reshape(x, (1, 2)), w])
        return ek.reduce_sum(a * a) + ek.reduce_sum(b)
    higher_order_check(prog, [X, W, m], 2)


def test_tape_inside_a_traced_graph_records_the_gradient_ops():
    """A tape nested inside another, both in a graph: the inner gradient's Case/While ops are recorded."""
    def hess_diag_sum(x, w):
        with ek.GradientTape() as outer:
            outer.watch(x)
            with ek.GradientTape() as inner:
                inner.watch(x)
                y = ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 0, lambda: ek.sin(x) * w, lambda: x * x)) + rnn_prog(x, w)
            s = ek.reduce_sum(inner.gradient(y, x))
        return outer.gradient(s, x)

    g = gr.Graph()
    with g.as_default():
        x, w = gr.placeholder("float64", (2,)), gr.placeholder("float64", (2,))
        h = hess_diag_sum(x, w)
        dx = gr.gradients(ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 0, lambda: ek.sin(x) * w, lambda: x * x))
                          + rnn_prog(x, w), [x])[0]
    sess = gr.Session(graph=g)
    got = sess.run(h, {x: X, w: W})
    eps = 1e-6
    num = np.zeros(2)
    for k in range(2):
        xp, xm = X.copy(), X.copy()
        xp[k] += eps
        xm[k] -= eps
        num[k] = (sess.run(dx, {x: xp, w: W}).sum() - sess.run(dx, {x: xm, w: W}).sum()) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-5)


def test_second_order_through_a_loop_whose_values_change_shape_is_a_clear_error():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", (None,))
        v = ek.while_loop(lambda v: ek.size(v) < 4, lambda v: ek.concat([v, ek.sin(v)], 0), [x],
                          shape_invariants=[ek.TensorShape([None])])[0]
        y = ek.reduce_sum(v * v)
        (dx,) = gr.gradients(y, [x])
        (d2,) = gr.gradients(ek.reduce_sum(dx * dx), [x])
    sess = gr.Session(graph=g)
    assert sess.run(dx, {x: np.array([0.5])}).shape == (1,)        # first order works
    with pytest.raises(InvalidArgumentError, match=r"while_loop .* same shape in every iteration"):
        sess.run(d2, {x: np.array([0.5])})


def test_higher_order_graph_survives_a_graph_def_round_trip():
    """Includes a VJP graph capturing a nested If's variant output (a placeholder of dtype variant)."""
    g = gr.Graph()
    with g.as_default():
        x, w = gr.placeholder("float64", (2,), name="x"), gr.placeholder("float64", (2,), name="w")
        y = cond_prog(x, w) + rnn_prog(x, w) + cond_in_while_prog(x, w)
        (dx,) = gr.gradients(y, [x])
        (d2,) = gr.gradients(ek.reduce_sum(dx * dx), [x])
        d2 = ek.identity(d2, name="d2")
    want = gr.Session(graph=g).run(d2, {x: X, w: W})
    g2 = gr.Graph()
    with g2.as_default():
        gr.import_graph_def(g.as_graph_def(), name="")
    got = gr.Session(graph=g2).run("d2:0", {"x:0": X, "w:0": W})
    np.testing.assert_allclose(got, want, rtol=1e-12)
