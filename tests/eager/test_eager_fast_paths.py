"""Eager fast paths give the same results and errors as the general paths.

Covers the fused `ResourceApplyGradientDescent` op used by eager plain SGD
(bitwise equal to Mul + AssignSubVariableOp, snapshot reads, failed updates),
gradient rules that skip unneeded inputs (`skip_input_indices`), and the
eager shortcuts in `matmul` / `sum_to_like`.
"""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
from eager import nest
from eager.errors import InvalidArgumentError
from eager.ops.array import sum_to_like
from eager.registry import lookup


def _reference_sgd(w, g, lr):
    """What Mul + AssignSubVariableOp compute: w - (g * lr) with lr in the variable's dtype."""
    return np.subtract(w, np.multiply(g, w.dtype.type(lr)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_sgd_is_bitwise_the_unfused_update(dtype):
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((7, 5)).astype(dtype)
    g = rng.standard_normal((7, 5)).astype(dtype)
    v = ek.Variable(w0)
    ek.optimizers.SGD(0.1).apply_gradients([(ek.constant(g), v)])
    np.testing.assert_array_equal(v.numpy(), _reference_sgd(w0, g, 0.1))
    assert v.numpy().dtype == dtype
    # the general path (momentum-free update written with Mul + AssignSub) agrees bit for bit
    u = ek.Variable(w0)
    u.assign_sub(ek.multiply(ek.constant(g), 0.1))
    np.testing.assert_array_equal(v.numpy(), u.numpy())


def test_fused_sgd_with_tensor_callable_and_variable_learning_rates():
    w0 = np.array([1.0, 2.0, 3.0], np.float32)
    g = ek.constant([0.5, -1.0, 2.0])
    for lr in (ek.constant(0.25, "float64"), lambda: 0.25, ek.Variable(0.25)):
        v = ek.Variable(w0)
        ek.optimizers.SGD(lr).apply_gradients([(g, v)])
        np.testing.assert_array_equal(v.numpy(), _reference_sgd(w0, g.numpy(), 0.25))


def test_fused_sgd_keeps_earlier_reads_and_gradients_unchanged():
    v = ek.Variable([1.0, 2.0])
    g = ek.constant([1.0, 1.0])
    before = v.value()
    held = v.numpy()
    ek.optimizers.SGD(0.5).apply_gradients([(g, v)])
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(held, [1.0, 2.0])
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [0.5, 1.5])


def test_fused_sgd_scalar_and_broadcast_gradients_match_assign_sub():
    s = ek.Variable(3.0)
    ek.optimizers.SGD(0.5).apply_gradients([(ek.constant(2.0), s)])
    assert float(s) == 2.0 and s.numpy().shape == ()
    v = ek.Variable([1.0, 2.0, 3.0])                  # a scalar gradient broadcasts, as assign_sub allows
    ek.optimizers.SGD(0.5).apply_gradients([(ek.constant(2.0), v)])
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0])


def test_fused_sgd_failed_update_leaves_variable_unchanged():
    v = ek.Variable([1.0, 2.0, 3.0])
    with pytest.raises(InvalidArgumentError):
        ek.optimizers.SGD(0.5).apply_gradients([(ek.constant([1.0, 2.0]), v)])
    with pytest.raises(InvalidArgumentError, match="float64"):
        ek.optimizers.SGD(0.5).apply_gradients([(ek.constant([1.0, 2.0, 3.0], "float64"), v)])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])
    op = lookup("ResourceApplyGradientDescent")
    assert op.stateful and not op.differentiable


def test_sgd_in_a_graph_still_uses_assign_sub():
    from tracing import function
    v = ek.Variable([1.0, 2.0])
    opt = ek.optimizers.SGD(0.5)

    @function
    def step(g):
        opt.apply_gradients([(g, v)])

    step(ek.constant([2.0, 2.0]))
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0])
    ops = {o.type for o in step.get_concrete_function(ek.constant([2.0, 2.0])).graph.get_operations()}
    assert "AssignSubVariableOp" in ops and "ResourceApplyGradientDescent" not in ops


# ------------------------------------------------------------------ skipped gradient terms
@pytest.mark.parametrize("fn", [ek.add, ek.subtract, ek.multiply, ek.nn.bias_add])
def test_binary_gradients_with_one_side_unwatched(fn):
    x = ek.constant(np.arange(6.0).reshape(2, 3))
    b = ek.constant([1.0, -2.0, 0.5], "float64")
    with ek.GradientTape(persistent=True) as tape:
        tape.watch([x, b])
        both = fn(x, b)
    dx_both, db_both = tape.gradient(both, [x, b])
    for src, expect in ((x, dx_both), (b, db_both)):
        with ek.GradientTape() as t1:
            t1.watch(src)
            y = fn(x, b)
        g = t1.gradient(y, src)
        np.testing.assert_allclose(g.numpy(), expect.numpy())


def test_xent_gradient_with_constant_labels_matches_watched_labels():
    rng = np.random.default_rng(0)
    logits = ek.constant(rng.standard_normal((4, 3)))
    labels = ek.constant(np.eye(3)[[0, 2, 1, 1]])
    with ek.GradientTape() as t1:
        t1.watch(logits)
        loss = ek.reduce_sum(ek.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    g_only = t1.gradient(loss, logits)
    with ek.GradientTape() as t2:
        t2.watch([logits, labels])
        loss = ek.reduce_sum(ek.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    g_logits, g_labels = t2.gradient(loss, [logits, labels])
    np.testing.assert_allclose(g_only.numpy(), g_logits.numpy())
    assert g_labels is not None
    # second order through the backprop output still works with labels unwatched
    with ek.GradientTape() as outer:
        outer.watch(logits)
        with ek.GradientTape() as inner:
            inner.watch(logits)
            loss = ek.reduce_sum(ek.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        g = inner.gradient(loss, logits)
        s = ek.reduce_sum(ek.multiply(g, g))
    assert outer.gradient(s, logits) is not None


# ------------------------------------------------------------------ eager shortcuts
def test_matmul_fast_path_keeps_errors_and_results():
    a = ek.constant(np.ones((2, 3), np.float32))
    b = ek.constant(np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(ek.matmul(a, b, transpose_b=True).numpy(), np.full((2, 4), 3.0, np.float32))
    with pytest.raises(InvalidArgumentError, match="inner dimensions"):
        ek.matmul(a, b)
    with pytest.raises(InvalidArgumentError, match="rank >= 2"):
        ek.matmul(ek.constant([1.0, 2.0, 3.0]), b)
    with pytest.raises(InvalidArgumentError, match="float64"):
        ek.matmul(a, ek.constant(np.ones((3, 2))))


def test_sum_to_like_eager_identity_and_reduction():
    g = ek.constant(np.ones((2, 3)))
    assert sum_to_like(g, ek.constant(np.zeros((2, 3)))) is g
    np.testing.assert_array_equal(sum_to_like(g, ek.constant(np.zeros(3))).numpy(), [2.0, 2.0, 2.0])


def test_tensor_op_variable_reads_the_variable_and_records_it():
    v = ek.Variable([1.0, 2.0])
    x = ek.constant([10.0, 20.0])
    with ek.GradientTape() as tape:
        y = ek.reduce_sum(ek.multiply(x + v, x - v))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [-2.0, -4.0])
    with pytest.raises(InvalidArgumentError, match="float64"):
        ek.constant([1.0, 2.0], "float64") + v
    s = ek.Variable(ek.constant("b"))
    r = ek.constant("a") + s                      # strings still concatenate (not the numeric fast path)
    assert r.dtype.name == "string" and r.numpy() == b"ab"


def test_xent_fast_path_keeps_shape_and_dtype_errors():
    logits = ek.constant(np.zeros((2, 3), np.float32))
    with pytest.raises(InvalidArgumentError, match="same shape"):
        ek.nn.softmax_cross_entropy_with_logits(labels=ek.constant(np.zeros((2, 4), np.float32)), logits=logits)
    with pytest.raises(InvalidArgumentError):
        ek.nn.softmax_cross_entropy_with_logits(labels=ek.constant(np.zeros((2, 3))), logits=logits)


def test_gradient_source_structures_are_kept():
    a, b = ek.Variable(1.0), ek.Variable(2.0)
    for sources in ([a, b], (a, b), {"a": a, "b": [b]}, [a, [b]]):
        with ek.GradientTape() as tape:
            y = a * 3.0 + b * 5.0
        g = tape.gradient(y, sources)
        assert type(g) is type(sources)
        assert [float(t) for t in nest.flatten(g)] == [3.0, 5.0]
