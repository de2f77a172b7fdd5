"""A `@function` call recorded by a GradientTape builds its backward for the inputs the tapes watch, one
backward per set of watched inputs (tracing/call_op.py): an RNN differentiated with respect to its
weights alone saves only what their gradients read, so its loop runs compiled; an input watched after the
call, or a set watched later, still gets its gradient; second order through a partly watched call."""
import numpy as np
import pytest

import eager as ek
from graph_runtime.control_flow import compiled_loop
from tracing import function

from native_marks import compiled_loop_results, needs_native

RNG = np.random.default_rng(5)
STEPS, BATCH, INPUTS, HIDDEN = 7, 16, 8, 64          # the cell's 1024 elements: compiled with numba
XS = RNG.standard_normal((STEPS, BATCH, INPUTS)).astype(np.float32)
WX = (RNG.standard_normal((INPUTS, HIDDEN)) * 0.4).astype(np.float32)
WH = (RNG.standard_normal((HIDDEN, HIDDEN)) * 0.2).astype(np.float32)
B = (RNG.standard_normal(HIDDEN) * 0.3).astype(np.float32)


def rnn_loss(x, wx, wh, b):
    def body(t, h):
        return t + 1, ek.tanh(ek.matmul(x[t], wx) + ek.matmul(h, wh) + b)
    _, h = ek.while_loop(lambda t, h: t < STEPS, body, [ek.constant(0), ek.zeros((BATCH, HIDDEN))])
    return ek.reduce_sum(h * h)


def gradients(f, watch_x: bool):
    x, params = ek.constant(XS), [ek.Variable(WX), ek.Variable(WH), ek.Variable(B)]
    with ek.GradientTape() as tape:
        if watch_x:
            tape.watch(x)
        loss = f(x, *params)
    return [loss] + tape.gradient(loss, params + ([x] if watch_x else []))


@needs_native
def test_an_rnn_differentiated_for_its_weights_alone_runs_the_compiled_loop_with_the_same_bits(monkeypatch):
    if compiled_loop.blas() is None:
        pytest.skip("NumPy's cblas_sgemm not found: no compiled loop")
    results = compiled_loop_results(monkeypatch)
    f = function(rnn_loss)
    weights_only = [gradients(f, watch_x=False) for _ in range(2)]
    assert len(results) == 2 and all(r is not None for r in results)
    every_input = gradients(f, watch_x=True)          # the data's cotangent needs the loop's saved indices
    assert len(results) == 2                          # the Python loop ran, saving them
    for got in weights_only:
        for a, b in zip(got, every_input):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(every_input, gradients(rnn_loss, watch_x=True)):      # eager: NumPy's tanh, not the fast one
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=1e-4)


def small(x, w):
    def body(i, h):
        return i + 1, ek.tanh(h * w + x)
    return ek.reduce_sum(ek.while_loop(lambda i, h: i < 3, body, [ek.constant(0), x])[1] ** 2)


X0, W0 = np.array([0.3, -0.2, 0.7]), np.array([0.5, 1.5, -0.4])


def eager_gradients(x, w):
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = small(x, w)
    return tape.gradient(y, [x, w])


def test_an_input_watched_after_the_call_gets_its_gradient():
    f = function(small)
    x, w = ek.constant(X0), ek.Variable(W0)
    with ek.GradientTape() as tape:
        y = f(x, w)                    # only w is watched (a trainable variable the call reads)
        tape.watch(x)
    got = tape.gradient(y, [x, w])
    for a, b in zip(got, eager_gradients(x, w)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def taped(fn, x, w, watched: str):
    """d/dx and d/dw of `fn` under a tape watching x, w or both (a source the tape did not watch gets a
    gradient where a recorded op reads it, as for eager ops)."""
    with ek.GradientTape(watch_accessed_variables=watched != "x") as tape:
        if watched != "w":
            tape.watch(x)
        y = fn(x, w)
    return tape.gradient(y, [x, w])


@pytest.mark.parametrize("order", [("w", "x", "both"), ("both", "w", "x")])
def test_each_set_of_watched_inputs_gets_its_own_backward(order):
    f = function(small)
    x, w = ek.constant(X0), ek.Variable(W0)
    for watched in order + order:
        want = taped(small, x, w, watched)
        got = taped(f, x, w, watched)
        for a, b in zip(got, want):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_second_order_through_a_call_watching_one_of_its_inputs():
    results = []
    for fn in (function(small), small):
        x, w = ek.constant(X0), ek.Variable(W0)
        with ek.GradientTape() as t2:
            with ek.GradientTape() as t1:
                y = fn(x, w)
            d = t1.gradient(y, w)
            s = ek.reduce_sum(d * d)
        results.append((y.numpy(), d.numpy(), t2.gradient(s, w).numpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
