"""Second and third derivatives through @function calls under nested eager tapes (PartitionedCall /
PartitionedCallGrad), with and without control flow inside, checked against central finite differences
(float64) and against the same Python function run eagerly."""
import numpy as np
import pytest

import eager as ek
from eager.errors import InvalidArgumentError
from tracing import function

X = np.array([0.3, -0.6])
W = np.array([0.7, 1.1])


def smooth(x, w):
    return ek.reduce_sum(ek.sin(x * w) * x + ek.exp(w) * x * x)


def with_cond(x, w):
    return ek.reduce_sum(ek.cond(ek.reduce_sum(w) > 1.5, lambda: ek.sin(x * w) * x, lambda: x * x * ek.exp(w)))


def with_case(x, w):
    i = ek.cast(ek.reduce_sum(w) > 0, "int32") + ek.cast(ek.reduce_sum(w) > 1.5, "int32")
    return ek.reduce_sum(ek.switch_case(i, [lambda: ek.tanh(x * w), lambda: x * x * w, lambda: ek.sin(x) * w * x]))


def with_while(x, w):
    def body(i, h):
        return i + 1, ek.tanh(h * w + x)
    return ek.reduce_sum(ek.while_loop(lambda i, h: i < 4, body, [ek.constant(0), x])[1] ** 2)


def nested_grad(f, order, x, w, coeffs):
    """s_1 = f(x, w); s_{k+1} = <d s_k / d(x, w), coeffs[k]>; returns (s_order, d s_order / d(x, w)) with
    one eager tape per order, nested."""
    xt, wt = ek.constant(x), ek.constant(w)

    def level(k):
        if k == 1:
            return f(xt, wt)
        with ek.GradientTape() as tape:
            tape.watch([xt, wt])
            s = level(k - 1)
        gx, gw = tape.gradient(s, [xt, wt])
        cx, cw = coeffs[k - 2]
        return ek.reduce_sum(gx * cx) + ek.reduce_sum(gw * cw)

    with ek.GradientTape() as top:
        top.watch([xt, wt])
        s = level(order)
    return s, top.gradient(s, [xt, wt])


def check(f, order, w=W):
    rng = np.random.default_rng(order)
    coeffs = [(rng.standard_normal(2), rng.standard_normal(2)) for _ in range(order)]
    traced = function(f)
    _, got = nested_grad(traced, order, X, w, coeffs)
    _, eager_got = nested_grad(f, order, X, w, coeffs)
    eps = 1e-5
    for i in range(2):
        assert got[i] is not None
        num = np.zeros(2)
        for k in range(2):
            p, m = [X.copy(), w.copy()], [X.copy(), w.copy()]
            p[i][k] += eps
            m[i][k] -= eps
            num[k] = (float(nested_grad(traced, order, *p, coeffs)[0])
                      - float(nested_grad(traced, order, *m, coeffs)[0])) / (2 * eps)
        np.testing.assert_allclose(got[i].numpy(), num, rtol=1e-5, atol=1e-7, err_msg=f"input {i}")
        np.testing.assert_allclose(got[i].numpy(), eager_got[i].numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("f", [smooth, with_cond, with_case, with_while], ids=lambda f: f.__name__)
def test_nested_tapes_around_a_function_call(f, order):
    check(f, order)


def test_both_branches_of_the_traced_cond():
    check(with_cond, 2, w=-W)


def test_outer_tape_around_a_function_that_computes_a_gradient_inside():
    @function
    def inner_grad(x, w):
        with ek.GradientTape() as t:
            t.watch(x)
            y = with_cond(x, w) + with_while(x, w)
        return t.gradient(y, x)

    x, w = ek.constant(X), ek.constant(W)
    with ek.GradientTape() as tape:
        tape.watch([x, w])
        s = ek.reduce_sum(inner_grad(x, w) ** 2)
    got = tape.gradient(s, [x, w])

    def value(xv, wv):
        return float(ek.reduce_sum(inner_grad(ek.constant(xv), ek.constant(wv)) ** 2))
    eps = 1e-6
    for i, base in enumerate([X, W]):
        num = np.zeros(2)
        for k in range(2):
            p, m = [X.copy(), W.copy()], [X.copy(), W.copy()]
            p[i][k] += eps
            m[i][k] -= eps
            num[k] = (value(*p) - value(*m)) / (2 * eps)
        np.testing.assert_allclose(got[i].numpy(), num, rtol=1e-5, atol=1e-7)


def test_second_derivative_with_respect_to_a_variable_read_in_the_function():
    v = ek.Variable(W)

    @function
    def f(x):
        return ek.reduce_sum(ek.cond(ek.reduce_sum(x) < 0, lambda: ek.sin(x * v) * v, lambda: x * v))

    x = ek.constant(X)
    with ek.GradientTape() as outer:
        with ek.GradientTape() as inner:
            y = f(x)
        g = inner.gradient(y, v)
        s = ek.reduce_sum(g * g)
    got = outer.gradient(s, v).numpy()
    # eagerly: sum(sin(x v) v) -> d/dv = x cos(x v) v + sin(x v)
    gv = lambda w: X * np.cos(X * w) * w + np.sin(X * w)  # noqa: E731
    eps = 1e-6
    num = np.array([(np.sum(gv(W + eps * e) ** 2) - np.sum(gv(W - eps * e) ** 2)) / (2 * eps) for e in np.eye(2)])
    np.testing.assert_allclose(got, num, rtol=1e-6)


def test_integer_inputs_get_no_gradient():
    @function
    def f(x, n):
        return ek.reduce_sum(x * x * ek.cast(n, "float64"))

    x, n = ek.constant(X), ek.constant(3)
    with ek.GradientTape() as outer:
        outer.watch(x)
        with ek.GradientTape() as inner:
            inner.watch(x)
            y = f(x, n)
        gx, gn = inner.gradient(y, [x, n])
        s = ek.reduce_sum(gx)
    assert gn is None
    np.testing.assert_allclose(outer.gradient(s, x).numpy(), [6.0, 6.0])


def test_second_order_through_a_shape_changing_loop_in_a_function_is_a_clear_error():
    @function
    def f(x):
        return ek.reduce_sum(ek.while_loop(lambda v: ek.size(v) < 4, lambda v: ek.concat([v, ek.sin(v)], 0), [x],
                                           shape_invariants=[ek.TensorShape([None])])[0] ** 2)

    x = ek.constant([0.5])
    with ek.GradientTape() as outer:
        outer.watch(x)
        with ek.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)            # first order works
        s = ek.reduce_sum(g)
    assert g.shape == (1,)
    with pytest.raises(InvalidArgumentError, match="same shape in every iteration"):
        outer.gradient(s, x)
