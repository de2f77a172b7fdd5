"""The direct eager rules of BiasAdd, Tanh, Sigmoid and Square give their public rules' results, bit for bit.

An eager RNN cell (tanh of a bias_add), a sigmoid gate and a squared-error
loss: with no tape recording, the backward pass runs these ops' direct rules
(`extra["eager_grad"]`, on NumPy values) and dispatches nothing; an outer
recording tape makes the same gradient run the public rules.  Both must agree
exactly, in every float dtype, and match `@function`'s graph gradients.
"""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
from eager.registry import lookup
from tests.eager.test_direct_gradient_rules import assert_same_bits, dispatched_by_gradient, taped_gradients
from tracing import function

STEPS = 4


def _data(dtype):
    rng = np.random.default_rng(7)
    xs = ek.constant(rng.standard_normal((STEPS, 3, 5)).astype(dtype))
    target = ek.constant(rng.standard_normal((3, 4)).astype(dtype))
    ws = [ek.Variable(rng.standard_normal(s).astype(dtype) * 0.5) for s in ((5, 4), (4, 4), (4,), (4, 4), (4,))]
    return xs, target, ws


def _loss(xs, target, wx, wh, b, wg, bg):
    h = ek.zeros((3, 4), xs.dtype)
    for t in range(STEPS):
        h = ek.tanh(ek.nn.bias_add(ek.matmul(xs[t], wx) + ek.matmul(h, wh), b))
        gate = ek.sigmoid(ek.nn.bias_add(ek.matmul(h, wg), bg))
        h = h * gate
    return ek.reduce_mean(ek.square(h - target))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_direct_rules_equal_the_public_rules_bitwise(dtype):
    xs, target, ws = _data(dtype)
    direct, public = (taped_gradients(public, lambda: _loss(xs, target, *ws), ws) for public in (False, True))
    assert_same_bits(direct, public)


def test_the_rnn_backward_dispatches_no_op():
    xs, target, ws = _data(np.float32)
    names = dispatched_by_gradient(lambda: _loss(xs, target, *ws), ws)
    # StridedSlice (xs[t]) has no direct rule: its public rule is the only op dispatched
    assert set(names) <= {"StridedSliceGrad"}, names
    for name in ("BiasAdd", "Tanh", "Sigmoid", "Square"):
        assert callable(lookup(name).extra.get("eager_grad")), name


def test_eager_gradients_equal_the_traced_ones():
    xs, target, ws = _data(np.float32)
    with ek.GradientTape() as tape:
        loss = _loss(xs, target, *ws)
    eager = tape.gradient(loss, ws)

    @function(autograph=False)
    def traced():
        with ek.GradientTape() as tape:
            loss = _loss(xs, target, *ws)
        return tape.gradient(loss, ws)
    for e, t in zip(eager, traced()):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=2e-6, atol=1e-7)


def test_only_the_bias_gradient_is_computed_when_only_the_bias_is_a_source():
    x = ek.constant(np.ones((2, 3), np.float32))
    b = ek.Variable(np.zeros(3, np.float32))
    with ek.GradientTape() as tape:
        y = ek.reduce_sum(ek.square(ek.nn.bias_add(x, b)))
    np.testing.assert_array_equal(tape.gradient(y, b).numpy(), np.full(3, 4.0, np.float32))


def test_square_of_an_integer_tensor_has_no_gradient_and_the_float_one_does():
    x = ek.constant(np.array([1, 2, 3], np.int32))
    xf = ek.constant(np.array([1.0, -2.0, 3.0], np.float32))
    with ek.GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(xf)
        y, yf = ek.reduce_sum(ek.square(x)), ek.reduce_sum(ek.square(xf))
    assert tape.gradient(y, x) is None
    np.testing.assert_array_equal(tape.gradient(yf, xf).numpy(), [2.0, -4.0, 6.0])



def test_big_square_gradient_in_recycled_memory_keeps_the_public_rules_bits():
    # over 1 MiB Square's direct rule writes its two multiplies into recycled memory (eager.buffers)
    rng = np.random.default_rng(3)
    x = ek.constant(rng.standard_normal((128, 4096)).astype(np.float32))
    w = ek.Variable(np.float32(0.7))
    loss = lambda: ek.reduce_mean(ek.square(ek.nn.relu(x * w)))      # noqa: E731
    direct, public = (taped_gradients(public, loss, [w]) for public in (False, True))
    assert_same_bits(direct, public)
