"""The one graph-to-plan pipeline (`pipeline.prepare`) and the `bodies` pass."""
import numpy as np

import eager as ek
import graph_runtime as gr
from graph_runtime import pipeline
from graph_runtime.control_flow.plans import compiled_plans
from tracing import function


def _loop_graph():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [4], name="x")

        def body(i, v):
            return i + 1, ek.tanh(v * 0.5 + 0.25) * 2.0 - v
        y = ek.while_loop(lambda i, v: i < 3, body, [ek.constant(0), x])[1]
    return g, x, y


def _op(g, type_):
    return next(o for o in g.get_operations() if o.type == type_)


def _want(xv):
    v = xv.copy()
    for _ in range(3):
        v = np.tanh(v * np.float32(0.5) + np.float32(0.25)) * np.float32(2.0) - v
    return v


def test_optimize_recurses_into_bodies_and_leaves_the_source_alone():
    g, x, y = _loop_graph()
    src_body = _op(g, "StatelessWhile").get_attr("body")
    out, report = gr.optimize(g, [x, y])
    assert report.changes("bodies") == 1
    body = _op(out, "StatelessWhile").get_attr("body")
    assert body is not src_body and "FusedElementwise" in [o.type for o in body.get_operations()]
    assert "FusedElementwise" not in [o.type for o in src_body.get_operations()]


def test_every_runner_goes_through_prepare_with_the_same_result():
    g, x, y = _loop_graph()
    xv = np.linspace(-1, 1, 4).astype(np.float32)
    plan = pipeline.prepare(g, [x], [y])
    assert plan.optimization_report.changes("bodies") == 1
    with gr.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(y, {x: xv}), _want(xv), rtol=1e-6)
    np.testing.assert_allclose(plan(xv)[0], _want(xv), rtol=1e-6)
    f = function(lambda v: ek.while_loop(lambda i, w: i < 3, lambda i, w: (i + 1, ek.tanh(w * 0.5 + 0.25) * 2.0 - w),
                                         [ek.constant(0), v])[1])
    np.testing.assert_allclose(np.asarray(f(xv)), _want(xv), rtol=1e-6)
    assert pipeline.STAGES == ("prune", "residuals", "place", "optimize", "partition", "compile")


def test_disabling_the_bodies_pass_runs_bodies_as_traced():
    g, x, y = _loop_graph()
    xv = np.linspace(-1, 1, 4).astype(np.float32)
    with gr.Session(graph=g, config=gr.SessionConfig(disabled_passes=("bodies",))) as sess:
        np.testing.assert_allclose(sess.run(y, {x: xv}), _want(xv), rtol=1e-6)
        assert not sess.last_optimization_report.stats_for("bodies")
    (plan,) = compiled_plans(_op(g, "StatelessWhile").get_attr("body"))
    assert plan.optimization_report is None
    assert "FusedElementwise" not in [s.op.type for s in plan.steps]

