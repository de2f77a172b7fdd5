"""A `@function` call recorded by a GradientTape runs the function once: its forward saves the values the
gradient reads, and the backward does not run the forward again (side effects happen once per call)."""
import numpy as np
import pytest

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


def test_a_concrete_function_called_under_a_tape_is_differentiable():
    # it used to run its plan without recording, so every gradient came out None
    v = ek.Variable(np.float64(2.0))

    def f(x, scale=1.0):
        return ek.reduce_sum(x * v * x) * scale

    f_traced = function(f)
    by_spec = f_traced.get_concrete_function(ek.TensorSpec([3], ek.float64))
    by_value = f_traced.get_concrete_function(ek.constant(X0), scale=3.0)
    x = ek.constant(X0)
    for cf, kwargs, scale in ((by_spec, {}, 1.0), (by_value, {"scale": 3.0}, 3.0)):
        with ek.GradientTape() as tape:
            tape.watch(x)
            y = cf(x, **kwargs)
        gx, gv = tape.gradient(y, [x, v])
        np.testing.assert_allclose(y.numpy(), f(x, scale).numpy(), rtol=1e-12)
        np.testing.assert_allclose(gx.numpy(), scale * 2 * 2.0 * X0, rtol=1e-12)
        np.testing.assert_allclose(gv.numpy(), scale * np.sum(X0 ** 2), rtol=1e-12)
    with ek.GradientTape() as tape:               # a spec mismatch is still refused before anything runs
        tape.watch(x)
        with pytest.raises(TypeError, match="not compatible"):
            by_spec(ek.constant(X0[:2]))
