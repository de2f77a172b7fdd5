"""A `@function` call recorded by a GradientTape runs the function once: its forward saves the values the
gradient reads, and the backward does not run the forward again (side effects happen once per call)."""
import numpy as np

import eager as ek
from tracing import function

X0 = np.array([0.3, -0.2, 0.7])


def _loop(x, count=None):
    def body(i, h):
        if count is not None:
            count.assign_add(1)
        return i + 1, ek.tanh(h * 0.5 + x)
    return ek.reduce_sum(ek.while_loop(lambda i, h: i < 3, body, [ek.constant(0), x])[1] ** 2)


def _eager(x):
    h = x
    for _ in range(3):
        h = ek.tanh(h * 0.5 + x)
    return ek.reduce_sum(h ** 2)


def test_an_assign_inside_a_differentiated_loop_runs_once_per_call():
    count = ek.Variable(0, name="count")
    f = function(lambda x: _loop(x, count))
    x = ek.constant(X0)
    for calls in (1, 2):
        with ek.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        got = tape.gradient(y, x)
        assert int(count.numpy()) == 3 * calls                 # the backward did not run the loop again
    with ek.GradientTape() as tape:
        tape.watch(x)
        want_y = _eager(x)
    np.testing.assert_allclose(y.numpy(), want_y.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got.numpy(), tape.gradient(want_y, x).numpy(), rtol=1e-10)


def test_second_order_through_a_saving_call_matches_eager():
    results = []
    for fn in (function(_loop), _eager):
        x = ek.constant(X0)
        with ek.GradientTape() as t2:
            t2.watch(x)
            with ek.GradientTape() as t1:
                t1.watch(x)
                y = fn(x)
            d = t1.gradient(y, x)
            s = ek.reduce_sum(d * d)
        results.append((y.numpy(), d.numpy(), t2.gradient(s, x).numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_the_call_returns_only_the_functions_outputs():
    f = function(lambda x: (x * 2.0, _loop(x)))
    x = ek.constant(X0)
    with ek.GradientTape() as tape:
        tape.watch(x)
        a, b = f(x)
        total = a + b
    np.testing.assert_allclose(a.numpy(), X0 * 2.0)
    g = tape.gradient(total, x)
    with ek.GradientTape() as tape:
        tape.watch(x)
        ref = x * 2.0 + _eager(x)
    np.testing.assert_allclose(g.numpy(), tape.gradient(ref, x).numpy(), rtol=1e-10)
