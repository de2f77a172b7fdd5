"""Op arguments and scopes behave as in TensorFlow in every mode:
lists and tuples holding tensors are packed implicitly, and
`name_scope('')` resets to the root scope."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import autograph
import eager as ek
import graph_runtime as gr
from tracing import function

SETTINGS = settings(deadline=None, max_examples=20)


def every_mode(fn, *arrays):
    """fn's result eagerly, converted, under @function and in a Session, as numpy."""
    ts = [ek.constant(a) for a in arrays]
    out = [fn(*ts), autograph.to_graph(fn)(*ts), function(fn)(*ts)]
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder(t.dtype, t.shape) for t in ts]
        fetch = fn(*phs)
    with gr.Session(graph=g) as sess:
        out.append(sess.run(fetch, dict(zip(phs, [np.asarray(t) for t in ts]))))
    return [np.asarray(o) for o in out]


# --- implicit pack ------------------------------------------------------------
def concat_list(i):
    v = ek.zeros([2], dtype=ek.int32)
    return ek.concat((v, [i]), 0)


def test_concat_of_list_holding_a_tensor_and_a_python_int():
    for got in every_mode(concat_list, np.int32(7)):
        assert got.tolist() == [0, 0, 7]


def nested_pack(a, b):
    m = ek.convert_to_tensor([[a, 1], (2, b)])       # numbers take the tensors' dtype
    return m + [[b, a], [a, b]]                       # operand lists pack too


@SETTINGS
@given(st.integers(-50, 50), st.integers(-50, 50))
def test_nested_lists_of_tensors_and_numbers_pack_in_every_mode(a, b):
    want = np.array([[a + b, 1 + a], [2 + a, 2 * b]])
    for got in every_mode(nested_pack, np.int32(a), np.int32(b)):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)


@SETTINGS
@given(st.floats(-4, 4), st.integers(1, 4))
def test_shape_lists_holding_tensors(x, n):
    def f(v, k):
        return ek.reshape(ek.fill([k, 2], v), [k * 2]) * ek.cast(ek.stack([k, k])[0], ek.float32)
    for got in every_mode(f, np.float32(x), np.int32(n)):
        np.testing.assert_allclose(got, np.full([2 * n], np.float32(x) * n), rtol=1e-6)


def test_gradient_flows_through_a_packed_list():
    x = ek.constant(3.0)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.reduce_sum(ek.convert_to_tensor([x, 2.0 * x]) * [1.0, 10.0])
    assert float(tape.gradient(y, x)) == 21.0


def test_mixed_tensor_dtypes_still_raise():
    def f(i, x):
        return ek.convert_to_tensor([i, x])
    with pytest.raises(TypeError, match="Cannot convert a list containing a tensor of dtype"):
        f(ek.constant(1), ek.constant(1.0))
    with pytest.raises(TypeError, match="dtype float32 to int32"):
        function(f)(ek.constant(1), ek.constant(1.0))
    with pytest.raises(TypeError, match="int32 to float32"):
        ek.convert_to_tensor([ek.constant(1)], dtype=ek.float32)


def test_mismatched_shapes_in_a_packed_list_raise():
    @function
    def f(x):
        return ek.convert_to_tensor([x, ek.zeros([3])])
    with pytest.raises(ek.errors.InvalidArgumentError):
        f(ek.zeros([2]))


# --- name_scope('') ------------------------------------------------------------
def test_empty_name_scope_resets_to_root_eagerly():
    with ek.name_scope("outer"):
        with ek.name_scope("") as scope:
            assert scope == ""
            v = ek.Variable(1.0, name="v")
        with ek.name_scope("outer2/") as abs_scope:      # absolute: not nested in outer/
            assert abs_scope == "outer2/"
            w = ek.Variable(1.0, name="w")
        u = ek.Variable(1.0, name="u")
    assert (v.name.split(":")[0], w.name.split(":")[0], u.name.split(":")[0]) == ("v", "outer2/w", "outer/u")


def test_empty_name_scope_resets_to_root_in_graphs_and_functions():
    g = gr.Graph()
    with g.as_default():
        with gr.name_scope("layer"):
            a = ek.constant(1.0, name="a")
            with gr.name_scope(""):
                b = ek.constant(2.0, name="b")
            c = ek.constant(3.0, name="c")
    assert [t.op.name for t in (a, b, c)] == ["layer/a", "b", "layer/c"]

    @function
    def f(x):
        with ek.name_scope("blk"):
            with ek.name_scope(""):
                return x + 1
    assert int(f(ek.constant(1))) == 2
    with pytest.raises(ValueError, match="needs a string"):
        with ek.name_scope(None):
            pass


@SETTINGS
@given(st.integers(0, 3), st.integers(0, 3))
def test_nested_int_arguments_holding_tensors(a, b):
    def f(x, n, m):
        return ek.pad(x, [[n, m]]) + ek.cast(ek.reduce_sum(ek.zeros([n + 1, m + 1])), ek.float32)
    x = np.arange(3, dtype=np.float32)
    for got in every_mode(f, x, np.int32(a), np.int32(b)):
        np.testing.assert_array_equal(got, np.pad(x, [[a, b]]))
