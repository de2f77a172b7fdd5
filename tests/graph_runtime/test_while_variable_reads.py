"""A variable read by a while loop's condition and assigned by its body (or by
a body nested in it) is read afresh on every evaluation: eagerly, under
`@function`, in a Session with every optimizer pass on, and after the
loop-invariant pass."""
import numpy as np
import pytest

import autograph
import eager as ek
import graph_runtime as gr
from tracing import function
from pass_helpers import run_graph, single_pass


def _count_to_3(v, **kw):
    return ek.while_loop(lambda i: v.read_value() < 3, lambda i: (v.assign_add(1), i + 1)[1], [0], **kw)


def _nested(v):
    # the inner cond reads v, the inner body assigns it; the outer loop runs twice
    def outer_body(j):
        ek.while_loop(lambda i: v.read_value() < 3 * (j + 1), lambda i: (v.assign_add(1), i + 1)[1], [0])
        return j + 1
    return ek.while_loop(lambda j: j < 2, outer_body, [0])


def _assign_in_branch(v):
    def body(i):
        ek.cond(i >= 0, lambda: v.assign_add(2), lambda: v.assign_add(100))
        return i + 1
    return ek.while_loop(lambda i: v.read_value() < 5, body, [0])


def _outer_cond_inner_assign(v):
    # the outer cond reads v; only a loop nested in the outer body assigns it
    def body(i):
        ek.while_loop(lambda j: j < 2, lambda j: (v.assign_add(1), j + 1)[1], [0])
        return i + 1
    return ek.while_loop(lambda i: v.read_value() < 6, body, [0])


def _loop_in_branch(v):
    return ek.cond(ek.constant(True),
                   lambda: ek.while_loop(lambda i: v.read_value() < 5, lambda i: (v.assign_add(1), i + 1)[1], [0]),
                   lambda: [ek.constant(-1)])


def _in_session(build):
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(0)
        out = build(v)
        read = v.read_value()
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        got = sess.run(out)
        return np.asarray(got).ravel().tolist(), int(sess.run(read))


CASES = [(lambda v: _count_to_3(v, maximum_iterations=10), [3], 3),
         (_count_to_3, [3], 3),
         (_nested, [2], 6),
         (_assign_in_branch, [3], 6),
         (_outer_cond_inner_assign, [3], 6),
         (_loop_in_branch, [5], 5)]


@pytest.mark.parametrize("build,want,final", CASES)
def test_cond_sees_body_assignments_in_every_mode(build, want, final):
    v = ek.Variable(0)
    assert np.asarray(build(v)).ravel().tolist() == want and int(v.numpy()) == final
    v.assign(0)
    assert np.asarray(function(lambda: build(v))()).ravel().tolist() == want
    assert int(v.numpy()) == final
    assert _in_session(build) == (want, final)


def test_cond_read_stays_inside_the_loop():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(0)
        out = _count_to_3(v)
    loop = out[0].op
    cond_types = [op.type for op in loop.get_attr("cond").get_operations()]
    assert "ReadVariableOp" in cond_types


def test_loop_invariant_pass_keeps_reads_of_assigned_variables():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(1.0, name="v")
        w = ek.constant(np.full((2, 2), 0.5, np.float32))

        def body(i, acc):
            # the read feeds pure, speculatable work: still not invariant
            acc = acc + ek.matmul(ek.fill([2, 2], v.read_value()), w)
            v.assign_add(1.0)     # after the read (program order)
            return i + 1, acc
        _, acc = ek.while_loop(lambda i, acc: i < 3, body, (ek.constant(0), ek.zeros((2, 2))))
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
    new, _ = single_pass("loop_invariant", g, [acc.name])
    body_g = [op for op in new.get_operations() if "While" in op.type][0].get_attr("body")
    assert "ReadVariableOp" in [op.type for op in body_g.get_operations()]
    got = run_graph(new, [acc.name])[0]
    np.testing.assert_allclose(got, np.full((2, 2), 1.0 + 2.0 + 3.0))


def test_converted_while_on_a_variable_condition():
    v = ek.Variable(0)

    def f(n):
        i = 0
        while v < n:
            v.assign_add(1)
            i += 1
        return i
    assert int(function(f)(ek.constant(4))) == 4 and int(v.numpy()) == 4
    v.assign(0)
    g = gr.Graph()
    with g.as_default():
        n = gr.placeholder(ek.int32, ())
        out = autograph.to_graph(f)(n)
    with gr.Session(graph=g) as sess:
        assert int(sess.run(out, {n: 5})) == 5
    assert int(v.numpy()) == 5
