"""A call with one tensor argument and one tensor result (the call path's inline branch) behaves like any call.

`Function.__call__` runs such a call's plan itself; these check that it still counts hits, records on a
tape, inlines into an outer trace, honours `run_functions_eagerly`, names the failing op, and that a
new shape, a NumPy argument or a keyword still take the general path.
"""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
import tracing
from tracing import function


def _f(x):
    return ek.tanh(x) * 2.0 + 1.0


def _want(x):
    return np.tanh(x) * np.float32(2.0) + np.float32(1.0)


def test_hits_counted_and_values_equal_eager():
    f = function(_f)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    for _ in range(3):
        np.testing.assert_array_equal(f(ek.constant(x)).numpy(), _f(ek.constant(x)).numpy())
    assert list(f.cache_stats().values()) == [3]
    f(ek.constant(x[:1]))                      # a new shape traces
    assert f.experimental_get_tracing_count() == 2
    f(x)                                       # a NumPy argument: same trace as the tensor of its shape
    assert sorted(f.cache_stats().values()) == [1, 4]


def test_tape_records_the_call():
    f = function(_f)
    x = ek.constant(np.array([0.1, -0.4], np.float32))
    f(x)
    with ek.GradientTape() as tape:
        tape.watch(x)
        loss = ek.reduce_sum(f(x))
    g = tape.gradient(loss, x).numpy()
    np.testing.assert_allclose(g, 2.0 * (1 - np.tanh(x.numpy()) ** 2), rtol=1e-6)


def test_inside_another_trace_and_run_eagerly():
    f = function(_f)
    x = ek.constant(np.array([0.5, 1.5], np.float32))
    f(x)
    outer = function(lambda t: f(t) * 3.0)
    np.testing.assert_allclose(outer(x).numpy(), _want(x.numpy()) * 3, rtol=1e-6)
    seen = []

    def g(t):
        seen.append(type(t).__name__)
        return t + 1.0
    h = function(g)
    h(x)
    tracing.run_functions_eagerly(True)
    try:
        h(x)
    finally:
        tracing.run_functions_eagerly(False)
    assert seen == ["GraphTensor", "Tensor"]     # the trace, then the eager run of the Python function


def test_kernel_error_names_the_op():
    g = function(lambda t: ek.reshape(t, [3]), reduce_retracing=True)
    g(ek.constant(np.zeros(3, np.float32)))
    for _ in range(2):      # the relaxed trace's first call, then a cache hit: the element count is checked
        with pytest.raises(ek.errors.InvalidArgumentError, match="while running op `Reshape`.*4 elements"):
            g(ek.constant(np.zeros(4, np.float32)))
