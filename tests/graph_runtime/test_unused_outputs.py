"""The `unused_outputs` pass: a loop gradient computes only the capture cotangents something reads."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import UnimplementedError
from graph_runtime.passes import run_pass

STEPS, B, I, H = 6, 3, 4, 5


def _data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((STEPS, B, I)), rng.standard_normal((I, H)) * 0.3,
            rng.standard_normal((H, H)) * 0.3)


def _rnn_graph(indexing=False):
    """An RNN reading its inputs from a TensorArray (`indexing`: as `x[t]`); gradients of the weights (and
    of the inputs)."""
    xs, wx, wh = _data()
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", xs.shape, name="xs")
        Wx, Wh = ek.constant(wx), ek.constant(wh)
        ta = ek.TensorArray("float64", size=STEPS).unstack(x)

        def body(t, h):
            return t + 1, ek.tanh(ek.matmul(x[t] if indexing else ta.read(t), Wx) + ek.matmul(h, Wh))

        _, h = ek.while_loop(lambda t, h: t < STEPS, body, [ek.constant(0), ek.zeros((B, H), "float64")])
        loss = ek.reduce_sum(h * h)
        *g_w, g_x = gr.gradients(loss, [Wx, Wh, x])         # one WhileGrad op computes all three
    return g, x, xs, g_w, g_x


def _eager_grads():
    xs, wx, wh = _data()
    x, Wx, Wh = ek.constant(xs), ek.constant(wx), ek.constant(wh)
    with ek.GradientTape() as tape:
        tape.watch([x, Wx, Wh])
        h = ek.zeros((B, H), "float64")
        for t in range(STEPS):
            h = ek.tanh(ek.matmul(x[t], Wx) + ek.matmul(h, Wh))
        loss = ek.reduce_sum(h * h)
    return [g.numpy() for g in tape.gradient(loss, [Wx, Wh, x])]


def _dropped(graph, fetches, what="outputs_dropped"):
    _, report = gr.optimize(graph, fetches)
    return sum(s.details.get(what, 0) for s in report.passes if s.name == "unused_outputs")


def _saves(graph, fetches, feeds, config=None):
    """(what the loop saves per iteration, the unused_outputs pass's notes) when a Session runs `fetches`."""
    md = gr.RunMetadata()
    with gr.Session(graph=graph, config=config) as sess:
        got = sess.run(fetches, feeds, options=gr.RunOptions(output_partition_graphs=True), run_metadata=md)
        report = sess.last_optimization_report
    loop = next(n for gd in md.partition_graphs for n in gd["nodes"] if n["op"] in ("While", "StatelessWhile"))
    saves = [entry["$tuple"][0] for entry in loop["attrs"]["saves"]["$tuple"][0]["$tuple"]]
    notes = {} if report is None else next((p.details for p in report.passes if p.name == "unused_outputs"), {})
    return got, saves, notes


def test_weights_only_gradient_skips_the_input_cotangent_and_matches_eager():
    g, x, xs, g_w, g_x = _rnn_graph()
    want = _eager_grads()
    assert _dropped(g, g_w) == 1
    for cfg in (gr.SessionConfig(), gr.SessionConfig(disabled_passes=("unused_outputs",)),
                gr.SessionConfig(optimize=False)):
        with gr.Session(graph=g, config=cfg) as sess:
            got = sess.run(g_w, {x: xs})
        for a, b in zip(got, want[:2]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_an_output_that_is_fetched_or_consumed_is_kept():
    g, x, xs, g_w, g_x = _rnn_graph()
    want = _eager_grads()
    assert _dropped(g, g_w + [g_x]) == 0                    # the inputs' cotangent is read: nothing to drop
    with gr.Session(graph=g) as sess:
        got = sess.run(g_w + [g_x], {x: xs})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    while_grad = next(op for op in g.get_operations() if op.type == "WhileGrad")
    assert _dropped(g, g_w + [while_grad]) == 0             # the whole op is named: all of it is kept
    with g.as_default(), g.control_dependencies([while_grad]):
        after = ek.constant(1.0) + 0.0
    assert _dropped(g, g_w + [after]) == 0                  # a control dependency on the op keeps it whole


def test_the_pass_run_alone_keeps_the_outputs_it_is_asked_for():
    # run_pass's fetches count as read, as optimize's do: the weights' cotangents are the WhileGrad's own
    # outputs, which nothing else reads (they held no value once)
    g, x, xs, g_w, _ = _rnn_graph()
    out, stats = run_pass("unused_outputs", g, g_w)
    assert stats.details == {"outputs_dropped": 1}            # the inputs' cotangent only
    assert all(t.op.type == "WhileGrad" for t in g_w)
    with gr.Session(graph=out) as sess:
        got = sess.run([out.get_tensor_by_name(t.name) for t in g_w], {out.get_tensor_by_name(x.name): xs})
    for a, b in zip(got, _eager_grads()):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_differentiating_a_pruned_loop_gradient_says_to_differentiate_first():
    g, x, xs, g_w, g_x = _rnn_graph()
    opt, _ = gr.optimize(g, g_w)
    gw0 = opt.get_tensor_by_name(g_w[0].name)
    with opt.as_default(), pytest.raises(UnimplementedError, match=r"pruned .* differentiate the graph before"):
        gr.gradients(ek.reduce_sum(gw0), [opt.get_tensor_by_name(x.name)])


@pytest.mark.parametrize("options", [dict(trace_level=gr.RunOptions.FULL_TRACE), {}], ids=["full_trace", "plain"])
def test_every_executor_runs_the_pruned_op(options):
    g, x, xs, g_w, g_x = _rnn_graph()
    want = _eager_grads()
    for threads in (1, 2):
        with gr.Session(graph=g, config=gr.SessionConfig(inter_op_parallelism_threads=threads)) as sess:
            got = sess.run(g_w, {x: xs}, options=gr.RunOptions(**options))
        for a, b in zip(got, want[:2]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_a_gradient_computing_less_makes_the_loop_save_less():
    # `x[t]`'s gradient reads the index and slice bounds for the cotangent of `x` only: with the weights'
    # gradients alone the loop saves the row, the state and the next state, not them (so it runs compiled,
    # test_compiled_loop.py), with the same results in every configuration
    g, x, xs, g_w, g_x = _rnn_graph(indexing=True)
    want = _eager_grads()
    got, saves, notes = _saves(g, g_w, {x: xs})
    assert notes == {"outputs_dropped": 1, "saves_dropped": 1}
    assert sorted(saves) == ["StridedSlice:0", "Tanh:0", "loop_var_1:0"]
    both, all_saves, notes = _saves(g, g_w + [g_x], {x: xs})
    assert notes == {} and len(all_saves) == 6                   # the index and the two slice bounds too
    for a, b in zip(both, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for cfg in (None, gr.SessionConfig(disabled_passes=("unused_outputs",)), gr.SessionConfig(optimize=False)):
        got, saves, _ = _saves(g, g_w, {x: xs}, cfg)
        assert len(saves) == (3 if cfg is None else 6)
        for a, b in zip(got, want[:2]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
