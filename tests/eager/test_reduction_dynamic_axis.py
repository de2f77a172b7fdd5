"""Reductions whose axis is known only when the graph runs (a placeholder, a loop variable), as TF allows;
a graph constant axis is used statically."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError
from tracing import function

X = np.arange(1.0, 25.0).reshape(2, 3, 4) / 7.0
KINDS = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
         "reduce_prod": np.prod}


@pytest.mark.parametrize("name", sorted(KINDS))
@pytest.mark.parametrize("axis", [0, 1, -1, [0, 2], [2, 0]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_fed_axis_gives_numpys_result_and_gradient(name, axis, keepdims):
    fn = getattr(ek, name)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", X.shape)
        a = gr.placeholder("int32", None if np.ndim(axis) == 0 else [len(axis)])
        y = fn(x, axis=a, keepdims=keepdims)
        (dx,) = gr.gradients(ek.reduce_sum(y * y), [x])
        (d2x,) = gr.gradients(ek.reduce_sum(ek.sin(dx)), [x])                     # through ReduceGradDynamic
        y_static = fn(x, axis=axis, keepdims=keepdims)
        (dx_static,) = gr.gradients(ek.reduce_sum(y_static * y_static), [x])
        (d2x_static,) = gr.gradients(ek.reduce_sum(ek.sin(dx_static)), [x])
    assert y.op.type == "ReduceDynamic" and y_static.op.type != "ReduceDynamic"
    with gr.Session(graph=g) as sess:
        got, got_dx, want_dx, got_d2, want_d2 = sess.run([y, dx, dx_static, d2x, d2x_static], {x: X, a: axis})
    want = KINDS[name](X, axis=tuple(np.atleast_1d(axis)), keepdims=keepdims)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got_dx, want_dx, rtol=1e-12)
    np.testing.assert_allclose(got_d2, want_d2, rtol=1e-10, atol=1e-12)


def test_static_rank_is_inferred_when_the_number_of_axes_is_known():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", [2, 3, 4])
        assert ek.reduce_sum(x, axis=gr.placeholder("int32", [])).shape.as_list() == [None, None]
        assert ek.reduce_sum(x, axis=gr.placeholder("int32", [2])).shape.as_list() == [None]
        assert ek.reduce_sum(x, axis=gr.placeholder("int32", []), keepdims=True).shape.as_list() == [None] * 3
        assert ek.reduce_sum(x, axis=gr.placeholder("int32", [None])).shape.rank is None
        assert ek.reduce_sum(x, axis=ek.constant(1)).shape.as_list() == [2, 4]       # a constant stays static


def test_loop_variable_axis_under_function_matches_eager():
    def f(x):
        s = ek.constant(0.0, "float64")
        for i in ek.range(3):
            s += ek.reduce_sum(ek.reduce_max(x, axis=i) ** 2)
        return s
    x = ek.constant(X)
    np.testing.assert_allclose(function(f)(x).numpy(), f(x).numpy(), rtol=1e-12)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    want = tape.gradient(y, x)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y2 = function(f)(x)
    np.testing.assert_allclose(tape.gradient(y2, x).numpy(), want.numpy(), rtol=1e-12)


def test_bad_axes_raise_naming_the_op():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", [2, 3])
        a = gr.placeholder("int32", [None])
        y = ek.reduce_sum(x, axis=a)
        with pytest.raises(InvalidArgumentError, match="reduction axes must be an integer tensor, got float32"):
            ek.reduce_sum(x, axis=gr.placeholder("float32", []))
    with gr.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError, match="Sum: reduction axis 2 is out of range for a tensor of rank 2"):
            sess.run(y, {x: X[0, :2, :3], a: [2]})
        with pytest.raises(InvalidArgumentError, match="axis 1 appears twice"):
            sess.run(y, {x: X[0, :2, :3], a: [1, -1]})


def test_argmax_takes_a_constant_axis_and_refuses_a_run_time_one():
    f = function(lambda x: ek.argmax(x, axis=ek.constant(1)))
    np.testing.assert_array_equal(f(ek.constant(X[0])).numpy(), np.argmax(X[0], axis=1))
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", [2, 3])
        with pytest.raises(InvalidArgumentError, match="ArgMin: the axis must be known when the graph is built"):
            ek.argmin(x, axis=gr.placeholder("int32", []))


def test_a_matrix_of_axes_is_refused_when_the_graph_is_built():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", [2, 3])
        with pytest.raises(InvalidArgumentError, match=r"Sum: reduction axes must be a scalar or a vector, got "
                                                       r"shape \[1, 1\]"):
            ek.reduce_sum(x, axis=gr.placeholder("int32", [1, 1]))
        y = ek.reduce_sum(x, axis=gr.placeholder("int64", []))          # any integer dtype
    with gr.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(y, {y.op.inputs[1]: 1, x: X[0, :2, :3]}), X[0, :2, :3].sum(axis=1))
