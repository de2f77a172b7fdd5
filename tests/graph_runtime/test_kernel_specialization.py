"""Kernels a plan specializes when it is compiled (`extra["specialize"]`, `extra["specialize_shapes"]`):
the same bits as the general kernel, eagerly, under @function and in a Session, and the general kernel
when run-time shapes are not the static ones."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.registry import get
from tracing import function

RNG = np.random.default_rng(5)


def _steps(f, *args):
    return f.get_concrete_function(*args)._plan.steps


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes_run_without_keywords_and_give_the_kernel_s_bits(ta, tb):
    a = RNG.standard_normal((7, 5) if ta else (5, 7)).astype(np.float32)
    b = RNG.standard_normal((3, 7) if tb else (7, 3)).astype(np.float32)
    want = (a.T if ta else a) @ (b.T if tb else b)
    f = function(lambda x, y: ek.matmul(x, y, transpose_a=ta, transpose_b=tb))
    eager = ek.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy()
    g = gr.Graph()
    with g.as_default():
        pa, pb = gr.placeholder("float32", a.shape), gr.placeholder("float32", b.shape)
        out = ek.matmul(pa, pb, transpose_a=ta, transpose_b=tb)
    with gr.Session(graph=g) as sess:
        session = sess.run(out, {pa: a, pb: b})
    for got in (eager, np.asarray(f(a, b)), session):
        np.testing.assert_array_equal(got, want)
    (step,) = [s for s in _steps(f, ek.constant(a), ek.constant(b)) if s.op.type == "MatMul"]
    assert step.kernel is not get("MatMul").kernel and not step.attrs


@pytest.mark.parametrize("gshape,bshape", [((5, 3, 4), (4,)), ((5, 3, 4), (3, 1)), ((6, 1, 4), (1, 4)),
                                           ((3, 4), (1, 4)), ((2, 3), ())])
def test_sum_to_like_with_static_shapes_is_specialized_and_exact(gshape, bshape):
    """The gradient of a broadcast add sums the cotangent back to the smaller shape (SumToLike)."""
    x = RNG.standard_normal(gshape).astype(np.float32)
    w = RNG.standard_normal(gshape).astype(np.float32)
    b = RNG.standard_normal(bshape).astype(np.float32)

    def grad_b(xv, bv):
        with ek.GradientTape() as tape:
            tape.watch(bv)
            loss = ek.reduce_sum((xv + bv) * w)
        return tape.gradient(loss, bv)
    eager = grad_b(ek.constant(x), ek.constant(b)).numpy()
    f = function(grad_b)
    traced = np.asarray(f(ek.constant(x), ek.constant(b)))
    results = {}
    for known in (True, False):        # unknown dims: the general kernel, decided at run time
        g = gr.Graph()
        with g.as_default():
            px = gr.placeholder("float32", gshape if known else [None] * len(gshape))
            pb = gr.placeholder("float32", bshape if known else [None] * len(bshape))
            (db,) = gr.gradients(ek.reduce_sum((px + pb) * w), [pb])
        with gr.Session(graph=g) as sess:
            results[known] = sess.run(db, {px: x, pb: b})
    np.testing.assert_array_equal(results[True], results[False])
    np.testing.assert_array_equal(traced, results[True])
    np.testing.assert_array_equal(eager, results[True])
    assert np.shape(results[True]) == bshape
    (step,) = [s for s in _steps(f, ek.constant(x), ek.constant(b)) if s.op.type == "SumToLike"]
    assert step.kernel is not get("SumToLike").kernel


def test_a_specialized_sum_to_like_takes_the_general_path_for_other_shapes():
    """A value whose run-time shape is not its static one (a kernel that broadcasts differently than
    inference said) is still reduced correctly, never silently with the static axes."""
    kernel = get("SumToLike").extra["specialize_shapes"]({}, [(4, 3), (3,)], [(3,)])
    g = RNG.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_array_equal(kernel(g, np.zeros(3, np.float32)), np.add.reduce(g, 0))
    g5 = RNG.standard_normal((5, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(kernel(g5, np.zeros((2, 3), np.float32)), np.add.reduce(g5, 0))
