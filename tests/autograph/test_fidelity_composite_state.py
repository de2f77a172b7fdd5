"""Composite state (`x['b']`, `y[0]`, `obj.attr`) in staged branches and loops,
and TF's branch errors.

Each program runs eagerly, converted (`autograph.to_graph`) and traced
(`@function`), on fresh inputs each time (the programs mutate them).
"""
import pytest
from hypothesis import given, settings, strategies as st

import autograph
import eager as ek
from state_modes import assert_modes_agree, plain
from tracing import function

SETTINGS = settings(deadline=None, max_examples=12)


def dict_key_in_branches(a):
    x = {"a": a}
    if x["a"] > 0:
        x["b"] = 1
    else:
        x["b"] = -1
    return x


def dict_key_in_while(a):
    y = {"a": a}
    i = ek.constant(0)
    while i < 2:
        y["a"] += 1
        i += 1
    return y["a"]


def list_items_in_while(a):
    y = [a, ek.constant(3)]
    while y[1] <= 10:
        y[0] += 1
        y[1] *= 2
    return y


class Counter:
    def __init__(self):
        self.total = ek.constant(0)
        self.calls = 0


def attribute_in_for(n):
    c = Counter()
    for i in ek.range(n):
        c.total = c.total + i
    return c.total


def nested_and_name_keys(n, k="acc"):
    d = {"inner": {"acc": ek.constant(0)}, "k": 0}
    for i in ek.range(n):
        d["inner"][k] = d["inner"][k] + 2 * i
    return d["inner"]


def composite_under_staged_if_in_loop(n):
    st_ = {"pos": ek.constant(0), "neg": ek.constant(0)}
    for i in ek.range(n):
        if i % 2 == 0:
            st_["pos"] += i
        else:
            st_["neg"] -= i
    return st_


@SETTINGS
@given(st.integers(-5, 5))
def test_dict_key_written_in_both_branches(a):
    assert assert_modes_agree(dict_key_in_branches, lambda: ek.constant(a)) == \
        {"a": a, "b": 1 if a > 0 else -1}


@SETTINGS
@given(st.integers(-5, 5))
def test_subscripts_in_while_loops(a):
    assert assert_modes_agree(dict_key_in_while, lambda: ek.constant(a)) == a + 2
    assert assert_modes_agree(list_items_in_while, lambda: ek.constant(a)) == [a + 2, 12]


@SETTINGS
@given(st.integers(0, 6))
def test_attributes_nested_keys_and_inner_branches(n):
    assert assert_modes_agree(attribute_in_for, ek.constant(n)) == sum(range(n))
    assert assert_modes_agree(nested_and_name_keys, ek.constant(n)) == {"acc": n * (n - 1)}
    assert assert_modes_agree(composite_under_staged_if_in_loop, ek.constant(n)) == \
        {"pos": sum(range(0, n, 2)), "neg": -sum(range(1, n, 2))}


def test_self_attribute_in_method_under_function():
    class Model:
        def __init__(self):
            self.steps = 0

        def run(self, n):
            for i in ek.range(n):
                self.steps += 1
            return self.steps
    m = Model()
    assert plain(function(m.run)(ek.constant(4))) == 4


def test_python_path_is_plain_python():
    # Python conditions: the composites are never touched by the runtime.
    def f(flag):
        d = {}
        if flag:
            d["x"] = 1
        return d
    g = autograph.to_graph(f)
    assert g(True) == {"x": 1} and g(False) == {}


def test_key_defined_in_one_branch_only():
    def f(a):
        x = {"a": a}
        if a > 0:
            x["b"] = 1
        return x
    with pytest.raises(ValueError, match=r"'x\['b'\]' must also be initialized in the else "
                                         r"branch \(at .*test_fidelity_composite_state.py:\d+\)"):
        function(f)(ek.constant(1))


def test_attribute_defined_in_else_only():
    class Box:
        pass

    def f(a):
        b = Box()
        if a > 0:
            pass
        else:
            b.v = a
        return b.v
    with pytest.raises(ValueError, match=r"'b.v' must also be initialized in the main branch"):
        function(f)(ek.constant(1))


def test_composite_dtype_differs_between_branches():
    def f(a):
        x = {}
        if a > 0:
            x["v"] = ek.constant(1)
        else:
            x["v"] = ek.constant(1.5)
        return x
    with pytest.raises(TypeError, match=r"'x\['v'\]' has dtype int32 in the main branch, but "
                                        r"dtype float32 in the else branch"):
        function(f)(ek.constant(1))


def test_composite_dtype_change_in_loop():
    def f(n):
        x = {"v": ek.constant(0)}
        for i in ek.range(n):
            x["v"] = ek.cast(x["v"], ek.float32)
        return x
    with pytest.raises(TypeError, match=r"'x\['v'\]' has dtype int32 before the loop, but dtype "
                                        r"float32 after one iteration"):
        function(f)(ek.constant(2))


def test_composite_first_defined_in_loop():
    def f(n):
        x = {}
        for i in ek.range(n):
            x["last"] = i
        return x["last"]
    g = function(f)
    assert plain(g(ek.constant(3))) == 2
    with pytest.raises(ek.errors.InvalidArgumentError,
                       match=r"loop must iterate at least once to initialize x\['last'\]"):
        g(ek.constant(0))


def test_object_replaced_in_loop_is_not_composite_state():
    # `c` is reassigned in the body: its attribute is not state of the loop.
    def f(n):
        total = ek.constant(0)
        for i in ek.range(n):
            c = Counter()
            c.total = c.total + i
            total += c.total
        return total
    assert assert_modes_agree(f, ek.constant(4)) == 6


# --- TF's branch errors --------------------------------------------------------
def test_branch_none():
    def f(x):
        if x > 0:
            y = None
        else:
            y = 1
        return y
    with pytest.raises(ValueError, match=r"'y' is None at the end of the main branch."):
        function(f)(ek.constant(3))


def test_branch_structure_mismatch():
    def f(x):
        if x > 0:
            y = [x, x]
        else:
            y = [x]
        return y
    with pytest.raises(TypeError, match=r"'y' must have the same nested structure in the main "
                                        r"and else branches"):
        function(f)(ek.constant(3))


def test_branch_leaf_dtype_names_the_path():
    def f(x):
        if x > 0:
            y = {"a": x}
        else:
            y = {"a": ek.cast(x, ek.float32)}
        return y
    with pytest.raises(TypeError, match=r"'y\['a'\]' has dtype int32 in the main branch"):
        function(f)(ek.constant(3))


@pytest.mark.parametrize("value, tag, hint", [
    ([1, 2], "while loop", "compare it"), (3, "while loop", "compare it"),
    ([True, False], "while loop", "reduce_all")])
def test_while_condition_must_be_a_bool_scalar(value, tag, hint):
    def f(x):
        while x:
            x = x - x
        return x
    with pytest.raises(ValueError, match=rf"condition of {tag} expected to be a bool scalar, got a "
                                         rf".* tensor of shape .*{hint}.*test_fidelity_composite"):
        function(f)(ek.constant(value))


def test_if_condition_must_be_a_bool_scalar():
    def f(x):
        if x:
            y = 1
        else:
            y = 2
        return y
    with pytest.raises(ValueError, match=r"condition of if statement expected to be a bool scalar, "
                                         r"got a int32 tensor of shape \(\)"):
        function(f)(ek.constant(3))
    with pytest.raises(ValueError, match=r"condition of if expression expected to be a bool"):
        function(lambda x: 1 if x else 2)(ek.constant(3))
    # A bool tensor with one element is a valid condition (made a scalar).
    assert plain(function(f)(ek.constant([True]))) == 1


def test_append_in_one_staged_branch_is_refused_not_leaked():
    # Both branches are traced: the main branch's append must not show up in
    # the else branch (it used to: [x] was returned for x <= 0).
    def f(x):
        out = []
        if x > 0:
            out.append(x)
        return out
    assert f(ek.constant(-3)) == []
    with pytest.raises(TypeError, match=r"'out' must have the same nested structure in the main "
                                        r"and else branches"):
        function(f)(ek.constant(-3))


def test_unconvertible_branch_output_names_the_composite():
    class Box:
        pass

    def f(x):
        o = Box()
        if x > 0:
            o.a = Box()
        else:
            o.a = Box()
        return 1
    assert f(ek.constant(1)) == 1
    with pytest.raises(ValueError, match=r"'o.a' is a Box at the end of the main branch; a staged "
                                         r"if can only output tensors"):
        function(f)(ek.constant(1))


@pytest.mark.parametrize("fn", [dict_key_in_while, list_items_in_while, attribute_in_for,
                                composite_under_staged_if_in_loop])
def test_composites_in_a_session(fn):
    import numpy as np
    from fidelity_helpers import in_session
    n = np.int32(5)
    assert in_session(fn, [n]) == plain(fn(ek.constant(n)))
