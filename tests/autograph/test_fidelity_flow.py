"""AutoGraph fidelity: converted and traced code give
Python's (and TensorFlow's) answers for closures over loop and branch state,
and for `return`/`raise` inside `try`.

Each program runs as plain Python, through `autograph.to_graph`, under
`@function` with Python arguments and, where it fits, with tensor arguments
and in a Session (`fidelity_helpers.assert_agree`).
"""
import pytest
from hypothesis import given, settings, strategies as st

import autograph
import eager as ek
from fidelity_helpers import as_python as _py, assert_agree
from tracing import function

SETTINGS = settings(deadline=None, max_examples=15)

# --- closures see the current value of loop and branch state ---------------
def closure_while(n):
    i = 0
    s = 0

    def g():
        return i + 2
    while i < n:
        s = s * 10 + g()
        i += 1
    return s


def closure_for(n):
    s = 0
    k = 0
    f = lambda: k * 3  # noqa: E731
    for k in range(n):
        s = s + f()
    return s


def closure_if(x):
    y = 1

    def g():
        return y * 10
    if x > 0:
        y = x
        z = g()
    else:
        z = g() + 1
    return z + y


def closure_modifies_state(n):
    i = 0
    s = 0

    def bump():
        nonlocal i
        i += 2
    while i < n:
        s += i
        bump()
    return s


def closure_in_test(n):
    i = 0

    def more():
        return i < n
    while more():
        i += 1
    return i


def closure_branch_local(x):
    v = 0

    def g():
        return v
    r = 0
    if x > 0:
        v = 7      # not live after the if: only the closure reads it
        r = g()
    return r


def test_closure_reads_current_loop_value_of_a_while():
    assert closure_while(2) == 23
    assert assert_agree(closure_while, 2) == 23


@SETTINGS
@given(st.integers(-3, 5))
def test_closures_over_state_agree(n):
    for fn in (closure_while, closure_if, closure_branch_local):
        assert_agree(fn, n)
    # Python loops only: a staged loop cannot carry a write made through a call
    # (it raises instead, see test_state_changed_only_through_a_call_is_rejected).
    assert_agree(closure_modifies_state, n, tensors=False)
    assert_agree(closure_for, n, tensors=False)
    assert_agree(closure_in_test, n, session=False)


def test_closure_over_staged_for_target():
    def f(x):
        s = ek.constant(0)
        i = ek.constant(0)
        g = lambda: i * i  # noqa: E731
        for i in ek.range(x):
            s = s + g()
        return s
    assert int(function(f)(ek.constant(4))) == 0 + 1 + 4 + 9
    assert int(f(ek.constant(4))) == 14


def test_closure_name_unbound_before_use_still_fails():
    def f(n):
        def g():
            return j
        for _ in range(n):
            j = 1
        return g()
    assert autograph.to_graph(f)(2) == 1
    # As for any name defined on some paths only: the value is an Undefined
    # marker whose every use raises, naming the variable.
    with pytest.raises(UnboundLocalError, match="'j'"):
        autograph.to_graph(f)(0) + 1


# --- return / raise inside try ----------------------------------------------
def _raise():
    raise ValueError("boom")


def return_raising_in_try():
    try:
        return _raise()
    except ValueError:
        pass
    return 1


def return_in_try_handler(x):
    try:
        if x > 2:
            _raise()
        return x + 1
    except ValueError:
        return -1


def return_both_branches_in_try_finally(x):
    try:
        if x > 0:
            return x * 2
        else:
            return x - 1
    finally:
        pass


def return_in_finally_path(x):
    r = 0
    try:
        if x > 0:
            return x
    finally:
        r = 5
    return r


def test_return_of_raising_call_inside_try():
    assert return_raising_in_try() == 1
    assert autograph.to_graph(return_raising_in_try)() == 1
    assert _py(function(return_raising_in_try)()) == 1


@SETTINGS
@given(st.integers(-4, 4))
def test_returns_inside_try_agree(x):
    assert_agree(return_in_try_handler, x, tensors=False)
    assert_agree(return_in_finally_path, x, tensors=False)
    assert_agree(return_both_branches_in_try_finally, x)


def test_staged_if_returning_on_both_branches_in_try_finally():
    f = function(return_both_branches_in_try_finally)
    with pytest.warns(autograph.AutoGraphWarning):
        assert int(f(ek.constant(3))) == 6
    assert int(f(ek.constant(-3))) == -4


def test_staged_if_returning_on_one_branch_in_try_is_still_rejected():
    def f(x):
        try:
            if x > 0:
                return x
        finally:
            pass
        x = x + 1
    with pytest.raises(ValueError, match="must also have a return"):
        function(f)(ek.constant(1))


def closure_called_after_staged_block(x):
    v = x * 0
    w = x * 0

    def g():
        return v * 10 + w
    if x > 2:
        v = x + 1          # not read again except through g()
    i = 0
    while i < x:
        w = w + i
        i += 1
    return g()


@SETTINGS
@given(st.integers(-2, 5))
def test_closure_called_after_a_staged_block_sees_its_result(x):
    assert_agree(closure_called_after_staged_block, x)


def raise_then_return_in_handler(x):
    try:
        if x > 0:
            raise ValueError("positive")
        return 1
    except ValueError:
        return 2


def return_in_else_clause(x):
    try:
        y = x
    except ValueError:
        return -1
    else:
        return y + 1
    finally:
        x = 0


def return_raising_in_loop_try(x):
    for i in range(3):
        try:
            if i == x:
                return _raise()
        except ValueError:
            continue
    return 5


def return_in_finally_overrides(x):
    try:
        return x
    finally:
        if x > 1:
            return 99


def retry_loop(x):
    while True:
        try:
            return _raise()
        except ValueError:
            x += 1
            if x > 3:
                break
    return x


@SETTINGS
@given(st.integers(-2, 4))
def test_try_return_raise_programs_agree_with_python(x):
    for fn in (raise_then_return_in_handler, return_in_else_clause, return_raising_in_loop_try,
               return_in_finally_overrides, retry_loop):
        assert_agree(fn, x, tensors=False)


def late_binding_for(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i)
    return [g() for g in fs]


def late_binding_while(n):
    fs = []
    i = 0
    while i < n:
        def g(k=i):
            return k + i
        fs.append(g)
        i += 1
    return [g() for g in fs]


@SETTINGS
@given(st.integers(0, 4))
def test_closures_made_in_a_loop_bind_late_as_in_python(n):
    assert_agree(late_binding_for, n, tensors=False)
    assert_agree(late_binding_while, n, tensors=False)


COUNTER = 0


def _advance():
    global COUNTER
    COUNTER += 1


def global_modified_by_call(n):
    s = 0
    while COUNTER < n:
        s += COUNTER
        _advance()
    return s


def test_state_changed_only_through_a_call_is_rejected_when_staged():
    line = closure_modifies_state.__code__.co_firstlineno + 7      # `while i < n:`
    with pytest.raises(ValueError, match=rf"'i' changed while a staged loop was traced, but the loop "
                                         rf"only reads it.*test_fidelity_flow.py:{line}"):
        function(closure_modifies_state)(ek.constant(4))
    global COUNTER
    COUNTER = 0
    assert global_modified_by_call(3) == 0 + 1 + 2
    COUNTER = 0
    with pytest.raises(ValueError, match="'COUNTER' changed while a staged loop was traced"):
        function(global_modified_by_call)(ek.constant(3))
