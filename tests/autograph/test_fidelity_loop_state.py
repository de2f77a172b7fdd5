"""Loop state in staged loops.

Every program runs eagerly, converted (`autograph.to_graph`) and traced
(`@function`); answers are TensorFlow 2.21's.  Error paths check the
exception type and a message naming the user's variable and line.
"""
import collections

import pytest
from hypothesis import given, settings, strategies as st

import autograph
import eager as ek
from state_modes import assert_modes_agree, plain
from tracing import function

SETTINGS = settings(deadline=None, max_examples=12)
P = collections.namedtuple("P", "a b")


# --- 8: variables first created inside a staged loop ------------------------
def dict_built_in_loop(n):
    for i in ek.range(n):
        d = {"k": i, "sq": i * i}
    return d


def range_built_in_loop(n):
    for i in ek.range(n):
        v = ek.range(i)
    return v


def range_built_in_while(n):
    i = ek.constant(0)
    while i < n:
        v = ek.range(i)
        i += 1
    return v


@SETTINGS
@given(st.integers(1, 6))
def test_loop_local_structures_and_relaxed_shapes(n):
    assert assert_modes_agree(dict_built_in_loop, ek.constant(n)) == {"k": n - 1, "sq": (n - 1) ** 2}
    assert assert_modes_agree(range_built_in_loop, ek.constant(n)) == list(range(n - 1))
    assert assert_modes_agree(range_built_in_while, ek.constant(n)) == list(range(n - 1))


def test_loop_local_variable_needs_one_iteration_at_run_time():
    f = function(range_built_in_while)
    assert plain(f(ek.constant(2))) == [0]
    with pytest.raises(ek.errors.InvalidArgumentError,
                       match="loop must iterate at least once to initialize v"):
        f(ek.constant(0))


def test_probe_iteration_has_no_side_effects():
    counter = ek.Variable(0)

    def f(n):
        i = ek.constant(0)
        while i < n:
            counter.assign_add(1)
            last = i
            i += 1
        return last
    assert plain(function(f)(ek.constant(3))) == 2
    assert counter.numpy() == 3      # the body's side effects ran 3 times, not 4


# --- 9: structures as loop variables ------------------------------------------
def list_reassigned(n):
    s = [ek.constant(0), ek.constant(0)]
    for i in ek.range(n):
        s = [s[0], s[1] + i]
    return s


def dict_reassigned(n):
    s = {"a": ek.constant(0)}
    for i in ek.range(n):
        s = {"a": s["a"] + i}
    return s


def nested_structure(n):
    s = (ek.constant(1), {"x": [ek.constant(0.5), 2]})
    i = ek.constant(0)
    while i < n:
        s = (s[0] * 2, {"x": [s[1]["x"][0] + 1.0, s[1]["x"][1] + i]})
        i += 1
    return s


@SETTINGS
@given(st.integers(0, 6))
def test_structures_are_loop_variables(n):
    assert assert_modes_agree(list_reassigned, ek.constant(n)) == [0, sum(range(n))]
    assert assert_modes_agree(dict_reassigned, ek.constant(n)) == {"a": sum(range(n))}
    assert_modes_agree(nested_structure, ek.constant(n))


def test_structure_change_is_a_type_error_naming_the_variable():
    def f(n):
        s = [ek.constant(0)]
        for i in ek.range(n):
            s = [s[0], i]
        return s
    with pytest.raises(TypeError, match=r"'s' does not have the same nested structure after one "
                                        r"iteration.*test_fidelity_loop_state.py:\d+"):
        function(f)(ek.constant(3))


def test_leaf_dtype_change_names_the_path():
    def f(n):
        s = {"a": ek.constant(0)}
        for i in ek.range(n):
            s = {"a": ek.cast(s["a"], ek.float32)}
        return s
    with pytest.raises(TypeError, match=r"'s\['a'\]' has dtype int32 before the loop, but dtype "
                                        r"float32 after one iteration"):
        function(f)(ek.constant(3))


# --- 10: definedness only matters for staged control flow --------------------
def defined_in_previous_iteration(n):
    for i in range(n):
        if i == 0:
            a = 1
        else:
            a = a + 1
    return a


@SETTINGS
@given(st.integers(1, 8))
def test_python_loop_sees_previous_iteration(n):
    assert defined_in_previous_iteration(n) == n
    assert autograph.to_graph(defined_in_previous_iteration)(n) == n
    assert plain(function(defined_in_previous_iteration)(n)) == n


def test_staged_loop_rejects_variable_read_before_definition():
    with pytest.raises(ValueError, match=r"'a' must be defined before the loop \(at .*"
                                         r"test_fidelity_loop_state.py:\d+\)\nNote: AutoGraph tried"):
        function(defined_in_previous_iteration)(ek.constant(3))


# --- 12: shape invariants on structures ---------------------------------------
def partial_namedtuple_invariant(n):
    s = P(ek.zeros([1]), ek.constant(0))
    for i in ek.range(n):
        autograph.set_loop_options(shape_invariants=[(s.a, ek.TensorShape([None]))])
        s = P(ek.concat([s.a, ek.zeros([1])], 0), s.b + 1)
    return s


def structure_invariant_with_none(n):
    s = P(ek.zeros([1]), ek.constant(0))
    for i in ek.range(n):
        autograph.set_loop_options(shape_invariants=[(s, P([None], None))])
        s = P(ek.concat([s.a, ek.zeros([1])], 0), s.b + 1)
    return s


@pytest.mark.parametrize("fn", [partial_namedtuple_invariant, structure_invariant_with_none])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_partial_shape_invariants(fn, n):
    got = function(fn)(ek.constant(n))
    assert isinstance(got, P)
    assert plain(got) == [[0.0] * (n + 1), n]
    assert plain(autograph.to_graph(fn)(ek.constant(n))) == [[0.0] * (n + 1), n]


def test_shape_invariant_must_fit_the_initial_value():
    def f(n):
        x = ek.zeros([2])
        for i in ek.range(n):
            autograph.set_loop_options(shape_invariants=[(x, ek.TensorShape([None, 2]))])
            x = x + 1
        return x
    with pytest.raises(ValueError, match=r"'x' has shape \(2,\) before the loop, which does not "
                                         r"conform with the shape invariant \(None, 2\)"):
        function(f)(ek.constant(3))


def test_shape_outside_invariant_after_one_iteration():
    def f(n):
        s = P(ek.zeros([1]), ek.zeros([2]))
        for i in ek.range(n):
            autograph.set_loop_options(shape_invariants=[(s.a, [None])])
            s = P(ek.concat([s.a, s.a], 0), ek.concat([s.b, s.b], 0))
        return s
    with pytest.raises(ValueError, match=r"'s.b' has shape \(2,\) before the loop, but shape "
                                         r"\(4,\) after one iteration"):
        function(f)(ek.constant(3))


# --- list.append in staged loops -------------------------------------------------
def append_over_range(n):
    out = []
    for i in ek.range(n):
        out.append(i * i)
    return ek.stack(out), len(out)


def append_over_tensor(x):
    out = []
    for v in x:
        out.append(v * 2)
    return ek.stack(out), len(out)


def append_in_while(n):
    out = [ek.constant(-1)]
    i = ek.constant(0)
    while i < n:
        out.append(i)
        i += 1
    return ek.stack(out), len(out)


@SETTINGS
@given(st.integers(1, 6))
def test_list_append_in_staged_loops(n):
    assert assert_modes_agree(append_over_range, ek.constant(n)) == [[i * i for i in range(n)], n]
    x = ek.constant(list(range(n)))
    assert assert_modes_agree(append_over_tensor, x) == [[2 * i for i in range(n)], n]
    assert assert_modes_agree(append_in_while, ek.constant(n)) == [[-1] + list(range(n)), n + 1]


def test_list_append_zero_iterations():
    stacked, length = function(append_in_while)(ek.constant(0))
    assert plain(stacked) == [-1] and plain(length) == 1


# --- 14: TF's errors, naming the variable -------------------------------------
def test_none_before_loop():
    def f(n):
        x = None
        for i in ek.range(n):
            x = i
        return x
    with pytest.raises(ValueError, match=r"'x' is not allowed to be None before the loop \(at "):
        function(f)(ek.constant(3))


def test_none_after_iteration():
    def f(n):
        x = ek.constant(1)
        for i in ek.range(n):
            x = None
        return x
    with pytest.raises(ValueError, match=r"'x' is None at the end of the iteration."):
        function(f)(ek.constant(3))


def test_unsupported_loop_variable_type():
    def f(n):
        x = object()
        for i in ek.range(n):
            x = i
        return x
    with pytest.raises(ValueError, match=r"'x' is a object before a staged loop"):
        function(f)(ek.constant(3))


def test_python_float_into_int_loop_variable_is_refused():
    def f(n):
        s = ek.constant(0)
        for i in ek.range(n):
            s = 1.5
        return s
    with pytest.raises(TypeError, match=r"'s' has dtype int32 before the loop, but dtype float32"):
        function(f)(ek.constant(3))


def test_appended_dtype_must_match_the_list():
    def f(n):
        s = [ek.constant(1)]
        for i in ek.range(n):
            s.append(ek.constant(1.5))
        return s
    with pytest.raises(TypeError, match=r"'s' holds a int32 tensor before the loop, but the loop "
                                        r"appends float32 values"):
        function(f)(ek.constant(2))


def test_numpy_values_are_loop_variables():
    import numpy as np

    def f(n):
        x = np.zeros(2, np.float32)
        for i in ek.range(n):
            x = x + 1.0
        return x
    assert plain(function(f)(ek.constant(3))) == [3.0, 3.0]


@pytest.mark.parametrize("fn", [dict_built_in_loop, list_reassigned, dict_reassigned,
                                nested_structure, append_over_range, append_in_while,
                                partial_namedtuple_invariant])
def test_loop_state_in_a_session(fn):
    import numpy as np
    from fidelity_helpers import in_session
    n = np.int32(4)
    assert in_session(fn, [n]) == plain(fn(ek.constant(n)))
