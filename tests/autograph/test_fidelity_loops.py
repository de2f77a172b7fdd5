"""AutoGraph fidelity of loops: a Python `while`
whose test turns into a tensor, staged `for` over statically empty tensors,
and generators under `@function`.  Answers are compared with plain Python
(and eager tensors) through `autograph.to_graph`, `@function` and a Session.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import autograph
import eager as ek
from fidelity_helpers import as_python as _py, assert_agree, in_session as _session
from tracing import function

SETTINGS = settings(deadline=None, max_examples=15)

# --- staged for over a statically empty tensor --------------------------------
def sum_rows(x):
    s = ek.constant(0.0)
    n = 0
    for row in x:
        s = s + ek.reduce_sum(row)
        n += 1
    return s, n


def empty_range_loop(x):
    s = x
    out = x * 0
    for i in ek.range(0):
        s = s + i
        if s > 100:
            break
        out = i
    return s, out


@pytest.mark.parametrize("shape", [(0,), (0, 3), (4, 0), (3, 2)])
def test_for_over_tensors_known_empty_or_not(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = (float(x.sum()), shape[0])
    for got in (sum_rows(ek.constant(x)), function(sum_rows)(ek.constant(x)),
                autograph.to_graph(sum_rows)(ek.constant(x))):
        assert (float(got[0]), int(got[1])) == want
    assert _session(sum_rows, [x]) == list(want)


def test_for_over_empty_range_gives_initial_values():
    assert_agree(empty_range_loop, 5, tensors=True)
    assert _py(function(empty_range_loop)(ek.constant(5))) == [5, 0]


def test_loop_target_after_empty_staged_loop_is_undefined_as_in_python():
    def f(x):
        for i in ek.range(0):
            x = x + i
        return x + i
    with pytest.raises(UnboundLocalError, match="'i'"):
        f(ek.constant(1))
    with pytest.raises(UnboundLocalError, match="'i'"):
        function(f)(ek.constant(1))


# --- generators are rejected under @function ----------------------------------
def test_generator_function_is_rejected_by_function():
    def gen(x):
        for i in range(3):
            yield x + i

    with pytest.warns(autograph.AutoGraphWarning):
        with pytest.raises(TypeError, match=r"gen \(defined at .*test_fidelity_loops.py:\d+\) returned a generator"):
            function(gen)(ek.constant(1))
    with pytest.raises(autograph.ConversionError, match="generators"):
        autograph.to_graph(gen)


def test_function_returning_a_generator_is_rejected():
    @function
    def f(x):
        return (x + i for i in range(3))
    with pytest.raises(TypeError, match="returned a generator"):
        f(ek.constant(1))


# --- a while test that turns from Python to tensor -----------------------------
def test_while_test_changing_to_a_tensor_raises_tfs_error():
    def f():
        n = ek.constant(0)
        c = True
        while c:
            c = ek.constant(True)      # never ends in plain Python
        return n
    line = f.__code__.co_firstlineno + 3
    with pytest.raises(NotImplementedError, match=(
            r"condition of while loop started as non-Tensor, then changed to Tensor after 1 "
            rf"Python iteration: 'c' changed from a Python value to a Tensor.*test_fidelity_loops.py:{line}")):
        function(f)()


def test_while_counter_becoming_a_tensor_raises():
    def f(step):
        i = 0
        while i < 10:
            i = i + step
        return i
    assert int(f(ek.constant(3))) == 12          # eager tensors are values: plain Python
    with pytest.raises(NotImplementedError, match="'i' changed from a Python value"):
        function(f)(ek.constant(3))


def break_on_tensor(x):
    i = 0
    s = 0
    while i < 6:
        if x[i] > 2:
            break
        s += x[i]
        i += 1
    return s, i


def return_on_tensor(x):
    i = 0
    while i < 6:
        if x[i] > 2:
            return i * 10
        i += 1
    return -1


@SETTINGS
@given(st.lists(st.integers(-3, 5), min_size=6, max_size=6))
def test_tensor_decided_break_or_return_in_python_while_is_staged(values):
    x = np.array(values, np.int32)
    for fn in (break_on_tensor, return_on_tensor):
        want = _py(fn(ek.constant(x)))
        assert _py(function(fn)(ek.constant(x))) == want
        assert _session(fn, [x]) == want
