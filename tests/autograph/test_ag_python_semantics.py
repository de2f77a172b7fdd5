"""Converted code on Python values behaves exactly like the original."""
import pytest
from hypothesis import given, settings, strategies as st

import autograph
import ag_cases as _cases

SETTINGS = settings(deadline=None, max_examples=40)


@pytest.mark.parametrize("fn", _cases.ONE_ARG, ids=lambda f: f.__name__)
@SETTINGS
@given(st.integers(-20, 20))
def test_one_arg_same_as_python(fn, x):
    if fn is _cases.fib:
        x = abs(x) % 12
    assert autograph.to_graph(fn)(x) == fn(x)


@SETTINGS
@given(st.integers(-3, 3), st.integers(-3, 3))
def test_logical_same_as_python(a, b):
    assert autograph.to_graph(_cases.logical_ops)(a, b) == _cases.logical_ops(a, b)


def test_short_circuit_is_kept():
    calls = []

    def side(v):
        calls.append(v)
        return v

    def f(a):
        return a and side(1) or side(2)
    g = autograph.to_graph(f)
    assert g(0) == f(0)
    assert calls == [2, 2]
    calls.clear()
    assert g(5) == 1 and calls == [1]


def test_chained_comparison_with_call_evaluates_once():
    calls = []

    def mid():
        calls.append(1)
        return 5

    def f(a):
        return 0 < mid() < a
    assert autograph.to_graph(f)(9) is True
    assert calls == [1]


def test_list_aliasing_preserved():
    def f(out, n):
        alias = out
        for i in range(n):
            out.append(i)
        return alias is out
    data = []
    assert autograph.to_graph(f)(data, 3) is True
    assert data == [0, 1, 2]


def test_for_break_does_not_consume_extra_item():
    def f(it):
        for x in it:
            if x == 2:
                break
        return next(it)
    assert autograph.to_graph(f)(iter(range(10))) == f(iter(range(10))) == 3


def test_while_else_and_for_else_without_break():
    def f(n):
        i = 0
        while i < n:
            i += 1
        else:
            i += 100
        for _ in range(n):
            pass
        else:
            i += 1000
        return i
    assert autograph.to_graph(f)(3) == f(3) == 1103


def test_return_none_paths():
    def f(x):
        if x > 0:
            return x
    g = autograph.to_graph(f)
    assert g(3) == 3 and g(-1) is None


def test_globals_and_nonlocals():
    counter = [0]
    state = {"n": 0}

    def f(n):
        total = 0
        for i in range(n):
            if i % 2:
                counter[0] += 1
                total += i
        state["n"] = total
        return total
    assert autograph.to_graph(f)(7) == f(7)


def test_nonlocal_write_through_closure_cells():
    def outer():
        count = 0

        def bump(n):
            nonlocal count
            for _ in range(n):
                if n > 1:
                    count += 1
            return count
        return bump
    b = outer()
    g = autograph.to_graph(b)
    assert g(3) == 3
    assert b(2) == 5  # the original shares the same cell


GLOBAL_COUNT = 0


def _uses_global(n):
    global GLOBAL_COUNT
    for _ in range(n):
        if n > 0:
            GLOBAL_COUNT += 1
    return GLOBAL_COUNT


def test_global_statement():
    global GLOBAL_COUNT
    GLOBAL_COUNT = 0
    assert autograph.to_graph(_uses_global)(4) == 4
    assert GLOBAL_COUNT == 4


def test_undefined_variable_use_raises_unbound():
    def f(x):
        if x > 0:
            y = 1
        return y
    g = autograph.to_graph(f)
    assert g(1) == 1
    # Like TensorFlow, the read itself does not fail: the value is an
    # Undefined marker whose every use raises, naming the variable.
    with pytest.raises(UnboundLocalError, match="'y'"):
        g(-1) + 1
    assert isinstance(g(-1), autograph.Undefined)


def test_assert_python_path():
    g = autograph.to_graph(_cases.asserting)
    assert g(2) == 3
    with pytest.raises(AssertionError, match="non-negative"):
        g(-1)


def test_exceptions_inside_loops_propagate():
    def f(n):
        for i in range(n):
            if i == 2:
                raise KeyError(i)
        return n
    with pytest.raises(KeyError):
        autograph.to_graph(f)(5)


def test_methods_and_super():
    class Base:
        def value(self, x):
            return x + 1

    class Child(Base):
        def value(self, x):
            out = 0
            for i in range(x):
                out += super().value(i)
            return out
    c = Child()
    assert autograph.to_graph(c.value)(4) == c.value(4) == 10
