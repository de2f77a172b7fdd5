"""The optimizer seen from traced functions: TensorFlow's reshape bug is not copied; results unchanged."""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
from eager.errors import InvalidArgumentError
from tracing import TensorSpec, function


def test_traced_reshape_of_unknown_length_raises_at_run_time():
    @function(input_signature=[TensorSpec([None], ek.int32)])
    def f(x):
        return ek.reshape(x, [3])

    np.testing.assert_array_equal(f(ek.constant([1, 2, 3])).numpy(), [1, 2, 3])
    with pytest.raises(InvalidArgumentError, match="Reshape"):
        f(ek.constant([1, 2]))          # TensorFlow 2.21 returns [1 2] here


def test_traced_function_with_duplicated_work_is_optimized_and_equal():
    w = ek.constant(np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32))

    def layer(x):
        return ek.tanh(ek.matmul(x, w) * 1.0) + ek.tanh(ek.matmul(x, w)) + ek.tanh(ek.matmul(x, w))

    f = function(layer)
    x = ek.constant(np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32))
    np.testing.assert_allclose(f(x).numpy(), layer(x).numpy(), rtol=1e-6)
    rec = f.trace_log[-1] if hasattr(f, "trace_log") and f.trace_log else None
    if rec is not None and hasattr(rec, "nodes_after"):
        assert rec.nodes_after < rec.nodes_before


def test_traced_side_effects_survive_optimization():
    v = ek.Variable(0.0)

    @function
    def step(x):
        v.assign_add(x * 1.0)           # no output depends on it: it is a target, never pruned
        return x + 0

    step(ek.constant(2.0))
    step(ek.constant(3.0))
    assert float(v.numpy()) == 5.0
