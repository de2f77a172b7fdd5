"""tracing.run_functions_eagerly: @function bodies run as plain Python while it is on."""
import numpy as np
import pytest

import eager as ek
import tracing
from tracing import TensorSpec, function


@pytest.fixture
def eagerly():
    tracing.run_functions_eagerly(True)
    yield
    tracing.run_functions_eagerly(False)


def test_python_side_effects_run_every_call_with_values(eagerly):
    seen = []

    @function
    def f(x):
        seen.append(float(x.numpy().sum()))      # .numpy() works: x is an eager tensor
        if x.numpy().sum() > 0:                  # plain Python control flow on values
            return x * 2
        return x

    assert tracing.functions_run_eagerly()
    np.testing.assert_array_equal(f(ek.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    f(ek.constant([-1.0, 0.0]))
    assert seen == [3.0, -1.0]
    assert f.experimental_get_tracing_count() == 0


def test_switching_back_reuses_the_traces():
    calls = []

    @function(input_signature=[TensorSpec([None], ek.float32)])
    def g(x):
        calls.append(1)
        return x + 1.0

    g(ek.constant([1.0]))
    assert g.experimental_get_tracing_count() == 1 and len(calls) == 1
    tracing.run_functions_eagerly(True)
    try:
        g(ek.constant([1.0]))
        g(ek.constant([1.0, 2.0]))
        assert len(calls) == 3 and g.experimental_get_tracing_count() == 1
    finally:
        tracing.run_functions_eagerly(False)
    g(ek.constant([5.0]))
    assert len(calls) == 3                         # the old trace is reused


def test_methods_and_variables_work_eagerly(eagerly):
    class M(ek.Module):
        def __init__(self):
            super().__init__()
            self.v = ek.Variable(1.0)

        @function
        def step(self):
            self.v.assign_add(1.0)
            return self.v.numpy()
    m = M()
    assert m.step() == 2.0 and m.step() == 3.0
