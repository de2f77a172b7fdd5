"""Staged paths of the runtime operators, on eager tensors treated as symbolic.

Same results as plain Python on integer inputs (hypothesis), plus the error
paths of staged if/while: undefined in one branch, dtype/shape changes.
"""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import eager as ek
import autograph
import ag_cases as cases
from sim_graph import simulated_graph  # noqa: F401  (fixture)

SETTINGS = settings(deadline=None, max_examples=15,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
STAGED_CASES = [cases.if_else, cases.if_no_else, cases.early_return, cases.return_in_nested_if,
                cases.while_loop_sum, cases.while_break_continue, cases.while_return,
                cases.for_range, cases.for_continue, cases.for_return, cases.cond_expr,
                cases.nested_return, cases.for_break_else]


def _value(x):
    if isinstance(x, ek.Tensor):
        return x.numpy().tolist()
    if isinstance(x, (tuple, list)):
        return type(x)(_value(v) for v in x)
    return x


@pytest.mark.parametrize("fn", STAGED_CASES, ids=lambda f: f.__name__)
@SETTINGS
@given(x=st.integers(-12, 12))
def test_staged_matches_python(simulated_graph, fn, x):  # noqa: F811
    assert _value(autograph.to_graph(fn)(ek.constant(x))) == fn(x)


@SETTINGS
@given(st.integers(-3, 3), st.integers(-3, 3))
def test_staged_logical(simulated_graph, a, b):  # noqa: F811
    def f(a, b):
        return (a > 0 and b > 0, a > 0 or b > 0, not a > 0)
    got = autograph.to_graph(f)(ek.constant(a), ek.constant(b))
    assert _value(got) == list(f(a, b)) or _value(got) == f(a, b)


def test_branch_defined_in_one_branch_only(simulated_graph):  # noqa: F811
    def f(x):
        if x > 0:
            y = x
        return y
    with pytest.raises(ValueError, match=r"'y' must also be initialized in the else branch"
                                         r" \(at .*test_ag_staged_simulated.py:\d+\)"):
        autograph.to_graph(f)(ek.constant(1))


def test_branch_dtype_mismatch(simulated_graph):  # noqa: F811
    def f(x):
        if x > 0:
            y = ek.constant(1)
        else:
            y = ek.constant(1.5)
        return y
    with pytest.raises(TypeError, match="'y' has dtype int32 in the main branch, but dtype "
                                        "float32 in the else branch"):
        autograph.to_graph(f)(ek.constant(1))


def test_missing_return_in_else_branch(simulated_graph):  # noqa: F811
    def f(x):
        if x > 0:
            return x
    with pytest.raises(ValueError, match="else branch must also have a return statement"):
        autograph.to_graph(f)(ek.constant(1))


def test_loop_dtype_change(simulated_graph):  # noqa: F811
    def f(n):
        s = ek.constant(0)
        i = 0
        while i < n:
            s = ek.cast(s, ek.float32) + 0.5
            i += 1
        return s
    with pytest.raises(TypeError, match="'s' has dtype int32 before the loop, but dtype "
                                        "float32 after one iteration"):
        autograph.to_graph(f)(ek.constant(3))


def test_loop_shape_change(simulated_graph):  # noqa: F811
    def f(n):
        x = ek.constant([1])
        i = 0
        while i < n:
            x = ek.reshape(ek.stack([x, x]), [-1])
            i += 1
        return x
    with pytest.raises(ValueError, match=r"'x' has shape \(1,\) before the loop, but shape "
                                         r"\(2,\) after one iteration. Use set_loop_options"):
        autograph.to_graph(f)(ek.constant(3))


def test_shape_invariants_allow_growth(simulated_graph):  # noqa: F811
    def f(n):
        x = ek.constant([1])
        i = 0
        while i < n:
            autograph.set_loop_options(shape_invariants=[(x, [None])])
            x = ek.reshape(ek.stack([x, x]), [-1])
            i += 1
        return x
    assert autograph.to_graph(f)(ek.constant(3)).shape.as_list() == [8]


def test_variable_first_defined_in_staged_loop(simulated_graph):  # noqa: F811
    def f(n):
        for i in range(n):
            last = i * 2
        return last
    assert _value(autograph.to_graph(f)(ek.constant(4))) == 6


def test_return_inside_staged_for_range(simulated_graph):  # noqa: F811
    def f(n):
        for i in range(n):
            if i * i >= n:
                return i
        return -1
    g = autograph.to_graph(f)
    for n in (0, 1, 5, 10):
        assert _value(g(ek.constant(n))) == f(n)


def test_staged_list_append_is_stacked(simulated_graph):  # noqa: F811
    def f(n):
        out = []
        for i in range(n):
            out.append(i * 2)
        return out
    assert _value(autograph.to_graph(f)(ek.constant(3))) == [0, 2, 4]


def test_staged_assert(simulated_graph):  # noqa: F811
    def f(x):
        assert x > 0, "x must be positive"
        return x
    with pytest.raises(Exception, match="positive"):
        autograph.to_graph(f)(ek.constant(-1))
