"""A call with one tensor argument and one tensor result (the call path's inline branch) behaves like any call;
so do calls of several tensors by position (a training step's), which take the general path.

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


# calls with tensors only, by position (a training step's (x, y)): the same guarantees


def _two(a, b):
    return ek.tanh(a) * b, a - b


def test_tensors_only_call_counts_hits_and_returns_the_structure():
    f = function(_two)
    a, b = ek.constant(np.array([0.5, -1.0], np.float32)), ek.constant(np.array([2.0, 3.0], np.float32))
    for _ in range(3):
        got = f(a, b)
        assert type(got) is tuple and len(got) == 2
        for g, w in zip(got, _two(a, b)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert list(f.cache_stats().values()) == [3]
    f(a, ek.constant(np.array([2.0], np.float32)))      # another shape traces again
    assert f.experimental_get_tracing_count() == 2


def test_tensors_only_call_records_on_a_tape_and_inlines():
    f = function(lambda a, b: ek.reduce_sum(ek.tanh(a) * b))
    a, b = ek.constant(np.array([0.1, -0.4], np.float32)), ek.constant(np.array([2.0, 3.0], np.float32))
    f(a, b)
    with ek.GradientTape() as tape:
        tape.watch(a)
        loss = f(a, b)
    np.testing.assert_allclose(tape.gradient(loss, a).numpy(), b.numpy() * (1 - np.tanh(a.numpy()) ** 2),
                               rtol=1e-6)
    outer = function(lambda s, t: f(s, t) * 3.0)
    np.testing.assert_allclose(outer(a, b).numpy(), np.sum(np.tanh(a.numpy()) * b.numpy()) * 3, rtol=1e-6)


def test_tensors_only_call_fills_defaults_and_runs_eagerly_when_asked():
    seen = []

    def g(a, b, scale=2.0):
        seen.append(type(a).__name__)
        return a * b * scale
    h = function(g)
    a, b = ek.constant(np.float32(3.0)), ek.constant(np.float32(4.0))
    assert h(a, b).numpy() == 24.0 and h(a, b, 0.5).numpy() == 6.0     # the default is part of the key
    tracing.run_functions_eagerly(True)
    try:
        assert h(a, b).numpy() == 24.0
    finally:
        tracing.run_functions_eagerly(False)
    assert seen == ["GraphTensor", "GraphTensor", "Tensor"]


def test_tensors_only_call_error_names_the_op():
    g = function(lambda s, t: ek.reshape(s, [3]) + t, reduce_retracing=True)
    t = ek.constant(np.float32(1.0))
    g(ek.constant(np.zeros(3, np.float32)), t)
    for _ in range(2):
        with pytest.raises(ek.errors.InvalidArgumentError, match="while running op `Reshape`.*4 elements"):
            g(ek.constant(np.zeros(4, np.float32)), t)
