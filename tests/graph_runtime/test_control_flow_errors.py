"""Every misuse of cond / while_loop / switch_case in a graph raises a clear error naming the value."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError


@pytest.fixture
def graph():
    g = gr.Graph()
    with g.as_default():
        yield g


def test_branch_structure_mismatch(graph):
    p = gr.placeholder("bool", ())
    with pytest.raises(ValueError, match=r"same nested structure: true_fn returns \(\., \.\) but false_fn returns"):
        ek.cond(p, lambda: (1.0, 2.0), lambda: [1.0, 2.0])
    with pytest.raises(ValueError, match="same nested structure"):
        ek.cond(p, lambda: {"a": 1.0}, lambda: {"b": 1.0})
    with pytest.raises(ValueError, match="false_fn returns None"):
        ek.cond(p, lambda: 1.0, lambda: None)


def test_branch_dtype_mismatch_names_the_output(graph):
    p = gr.placeholder("bool", ())
    with pytest.raises(TypeError, match=r"'output\['x'\]' has dtype int32 in true_fn, but dtype float32 in "
                                         r"false_fn"):
        ek.cond(p, lambda: {"x": 1}, lambda: {"x": 1.0})
    with pytest.raises(TypeError, match=r"'output\[1\]' has dtype float32 in branch 0, but dtype int32 in "
                                        r"branch 2"):
        ek.switch_case(ek.constant(0), [lambda: (1.0, 2.0), lambda: (1.0, 2.0), lambda: (1.0, 2)])


def test_branch_rank_mismatch(graph):
    p = gr.placeholder("bool", ())
    with pytest.raises(ValueError, match=r"'output' has shape \(2,\) in true_fn, but shape \(2, 2\) in false_fn"):
        ek.cond(p, lambda: ek.zeros((2,)), lambda: ek.zeros((2, 2)))


def test_bad_selectors(graph):
    with pytest.raises(InvalidArgumentError, match="cond: pred must be a bool scalar, got a float32"):
        ek.cond(gr.placeholder("float32", ()), lambda: 1, lambda: 2)
    with pytest.raises(InvalidArgumentError, match="bool scalar.*shape \\(2,\\).*reduce_all"):
        ek.cond(gr.placeholder("bool", (2,)), lambda: 1, lambda: 2)
    with pytest.raises(InvalidArgumentError, match="branch_index must be a int32 or int64 scalar"):
        ek.switch_case(gr.placeholder("float32", ()), [lambda: 1])
    with pytest.raises(TypeError, match="callable"):
        ek.cond(gr.placeholder("bool", ()), 1, lambda: 2)


def test_loop_dtype_change_is_a_type_error(graph):
    with pytest.raises(TypeError, match=r"'loop_vars\[1\]' has dtype int32 before the loop, but dtype float32 "
                                        r"after one iteration"):
        ek.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, ek.cast(s, "float32")), [0, 0])


def test_loop_structure_change_is_a_value_error(graph):
    with pytest.raises(ValueError, match="same structure as loop_vars"):
        ek.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1,), [0, 0])
    with pytest.raises(ValueError, match="same structure as loop_vars"):
        ek.while_loop(lambda d: d["a"] < 3, lambda d: {"b": d["a"]}, {"a": ek.constant(0)})


def test_loop_shape_change_needs_an_invariant(graph):
    msg = (r"'loop_vars\[0\]' has shape \(1,\) before the loop, but shape \(2,\) after one iteration. "
           r"Use shape_invariants / set_loop_options to set shape invariants.")
    with pytest.raises(ValueError, match=msg):
        ek.while_loop(lambda x: ek.size(x) < 8, lambda x: ek.concat([x, x], 0), [ek.ones((1,))])
    with pytest.raises(ValueError, match=r"has shape invariant \(None, 2\), but shape \(3, 3\)"):
        ek.while_loop(lambda x: ek.size(x) < 8, lambda x: ek.zeros((3, 3)), [ek.ones((1, 2))],
                      shape_invariants=[(None, 2)])
    with pytest.raises(ValueError, match="does not fit its shape invariant"):
        ek.while_loop(lambda x: ek.size(x) < 8, lambda x: x, [ek.ones((1, 2))], shape_invariants=[(3, 2)])
    with pytest.raises(ValueError, match="shape_invariants"):
        ek.while_loop(lambda x, y: True, lambda x, y: (x, y), [ek.ones((1,)), ek.ones((1,))],
                      shape_invariants=[(None,)])


def test_cond_must_return_a_bool_scalar(graph):
    with pytest.raises(InvalidArgumentError, match="cond must return a bool scalar"):
        ek.while_loop(lambda i: i, lambda i: i + 1, [0])


def test_bad_maximum_iterations(graph):
    with pytest.raises(InvalidArgumentError, match="maximum_iterations must be an int32 or int64 scalar"):
        ek.while_loop(lambda i: i < 3, lambda i: i + 1, [0], maximum_iterations=2.5)


def test_none_and_unconvertible_values(graph):
    with pytest.raises(ValueError, match=r"'loop_vars\[1\]' is None"):
        ek.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s), [0, None])
    with pytest.raises(TypeError, match=r"'output' is a object"):
        ek.cond(gr.placeholder("bool", ()), lambda: object(), lambda: object())


def test_variable_creation_inside_a_body(graph):
    with pytest.raises(ValueError, match="created inside a .* body"):
        ek.cond(gr.placeholder("bool", ()), lambda: ek.Variable(1.0).read_value(), lambda: 1.0)


def test_tensor_of_an_unrelated_graph(graph):
    other = gr.Graph()
    with other.as_default():
        z = gr.placeholder("float32", ())
    with pytest.raises(ValueError, match="does not enclose"):
        ek.cond(gr.placeholder("bool", ()), lambda: z, lambda: 1.0)


def test_runtime_error_inside_a_body_names_the_ops(graph):
    x = gr.placeholder("float32", (None,))
    out = ek.while_loop(lambda i: i < 3, lambda i: i + ek.cast(ek.reduce_sum(ek.reshape(x, [2])), "int32"), [0])
    with gr.Session(graph=graph) as sess:
        assert sess.run(out, {x: [1.0, 2.0]}) == [3]
        with pytest.raises(InvalidArgumentError, match=r"while running op `while`.*Reshape"):
            sess.run(out, {x: np.ones(3, np.float32)})


def test_eager_mode_raises_the_same_loop_errors():
    with pytest.raises(TypeError, match=r"loop_vars\[1\].*dtype int32 before the loop, but dtype float32"):
        ek.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, ek.cast(s, "float32")), [0, ek.constant(0)])
    with pytest.raises(ValueError, match="same structure"):
        ek.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1,), [ek.constant(0), ek.constant(0)])
