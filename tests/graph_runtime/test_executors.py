"""Executors share one schedule and one Step.apply; bodies run through the executor of the outer step."""
import collections

import numpy as np

import eager as ek
import graph_runtime as gr

FULL = gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE)


def _loop_graph():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3], name="x")

        def body(i, v):
            v = ek.cond(ek.reduce_sum(v) > 0, lambda: ek.sin(v) * 2.0, lambda: ek.cos(v) - 1.0)
            return i + 1, v
        y = ek.while_loop(lambda i, v: i < 4, body, [ek.constant(0), x], name="loop")[1]
    return g, x, y


def _expected(xv):
    v = xv.copy()
    for _ in range(4):
        v = np.sin(v) * np.float32(2.0) if v.sum() > 0 else np.cos(v) - np.float32(1.0)
    return v


def test_full_trace_lists_the_body_ops_once_per_iteration():
    g, x, y = _loop_graph()
    xv = np.array([0.5, 1.0, -0.25], np.float32)
    for config in (gr.SessionConfig(), gr.SessionConfig(optimize=False)):
        md = gr.RunMetadata()
        with gr.Session(graph=g, config=config) as sess:
            plain = sess.run(y, {x: xv})
            traced = sess.run(y, {x: xv}, options=FULL, run_metadata=md)
        np.testing.assert_allclose(traced, plain, rtol=1e-6)
        np.testing.assert_allclose(plain, _expected(xv), rtol=1e-5)
        loop = next(o for o in g.get_operations() if o.type == "StatelessWhile").name
        inner = [s for s in md.step_stats if s.name.startswith(loop + "/")]
        by_type = collections.Counter(s.type for s in inner)
        assert by_type["Less"] == 5                      # the cond: 4 true, 1 false
        assert by_type["StatelessIf"] == 4               # the body's cond op, once per iteration
        branch_ops = [s for s in inner if s.name.count("/") >= 2]    # <loop>/<if>/<branch op>
        assert branch_ops and len(branch_ops) % 4 == 0
        outer = [s for s in md.step_stats if s.name == loop]
        assert len(outer) == 1 and outer[0].duration_us >= max(s.duration_us for s in inner)


def test_parallel_and_traced_executors_agree_with_generated_code():
    g, x, y = _loop_graph()
    with g.as_default():
        z = ek.exp(y) + ek.matmul(ek.reshape(x, [1, 3]), ek.ones((3, 3)))
    xv = np.array([-0.5, 0.2, -0.1], np.float32)
    with gr.Session(graph=g) as s1, gr.Session(graph=g, config=gr.SessionConfig(inter_op_parallelism_threads=2)) as s2:
        want = s1.run(z, {x: xv})
        np.testing.assert_array_equal(s2.run(z, {x: xv}), want)
        np.testing.assert_array_equal(s1.run(z, {x: xv}, options=FULL, run_metadata=gr.RunMetadata()), want)
        f = s2.make_callable(z, [x])
        np.testing.assert_array_equal(f(xv), want)
        np.testing.assert_array_equal(f(xv, options=FULL, run_metadata=gr.RunMetadata()), want)


def test_an_error_inside_a_traced_body_names_the_body_op():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [None], name="x")
        y = ek.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, ek.reshape(v, [2])), [ek.constant(0), x])[1]
    with gr.Session(graph=g) as sess:
        for kwargs in ({}, {"options": FULL, "run_metadata": gr.RunMetadata()}):
            try:
                sess.run(y, {x: np.zeros(3, np.float32)}, **kwargs)
            except ek.errors.InvalidArgumentError as e:
                assert "Reshape" in str(e)
            else:
                raise AssertionError("expected InvalidArgumentError")


def test_the_tracing_executor_times_ops_on_the_clock_it_is_given():
    # a profile on a busy machine times each op on the thread's CPU clock instead of the wall clock
    import itertools

    from graph_runtime.executors import TracingExecutor
    from tracing import function

    f = function(lambda a: ek.exp(a) * 2.0 + ek.reduce_sum(a))
    xv = ek.constant(np.arange(3, dtype=np.float32))
    want = f(xv).numpy()
    plan = f.get_concrete_function(xv)._plan
    ticks = itertools.count(0, 1000)                    # every reading 1 us after the one before
    md = gr.RunMetadata()
    got = TracingExecutor(md, clock=lambda: next(ticks)).run(plan, [xv.numpy()])
    np.testing.assert_array_equal(got[0], want)
    assert md.step_stats and all(s.duration_us == 1.0 for s in md.step_stats)
    assert [s.start_us for s in md.step_stats] == [1.0 + 2 * i for i in range(len(md.step_stats))]
    assert md.total_us == 1.0 + 2 * len(md.step_stats)
