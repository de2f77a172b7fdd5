"""Placement's cost model: estimated compute and transfer times spread heavy independent
branches over devices, keep cheap ops with their inputs, and measured times from traced runs refine it."""
import numpy as np

import eager as ek
import graph_runtime as gr
from graph_runtime.cost_model import compute_us


def _devices_of(md) -> dict:
    """op name -> device, from a run's partition graphs."""
    return {n["name"]: n["device"] for gd in md.partition_graphs for n in gd["nodes"]}


def _partition_run(sess, fetch, feeds):
    md = gr.RunMetadata()
    out = sess.run(fetch, feeds, options=gr.RunOptions(output_partition_graphs=True), run_metadata=md)
    return out, _devices_of(md)


def test_estimates_from_static_shapes():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, (400, 300), name="a")
        b = gr.placeholder(ek.float32, (300, 200), name="b")
        mm = ek.matmul(a, b, name="mm")
        s = ek.sin(mm, name="s")
    assert compute_us(mm.op) > 2 * 400 * 200 * 300 / 2000.0          # 2*m*n*k flops at 2 GFLOP/s
    assert compute_us(s.op) < compute_us(mm.op) / 50
    assert compute_us(mm.op, {"mm": 5.0}) == 5.0                      # a measurement wins


def test_heavy_independent_branches_spread_and_cheap_ops_stay():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (300, 300), name="x")
        left = ek.matmul(ek.matmul(x, x, name="l1"), x, name="l2")
        right = ek.matmul(ek.matmul(x, x, name="r1"), x, name="r2")
        small = ek.sin(gr.placeholder(ek.float32, (3,), name="y"), name="small")
        out = ek.reduce_sum(left + right, name="out")
    xv = np.eye(300, dtype=np.float32)
    feeds = {x: xv, "y:0": np.ones(3, np.float32)}
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, optimize=False)) as sess:
        (got, _), where = _partition_run(sess, [out, small], feeds)
    np.testing.assert_allclose(got, 600.0)
    assert where["l1"] == where["l2"] and where["r1"] == where["r2"] and where["l1"] != where["r1"]
    assert where["small"].endswith("CPU:0")


def test_measured_times_from_a_traced_run_move_a_slow_op():
    g = gr.Graph()
    with g.as_default():
        n = gr.placeholder(ek.int32, (), name="n")

        def loop(name):
            return ek.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, ek.sin(a)),
                                 (ek.constant(0), ek.ones((8,))), name=name)[1]
        first, second = loop("first"), loop("second")
        total = ek.reduce_sum(first + second, name="total")
    feeds = {n: 20000}
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, optimize=False)) as sess:
        before, first_where = _partition_run(sess, total, feeds)    # statically the loops look cheap
        md = gr.RunMetadata()
        sess.run(total, feeds, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=md)
        loops = sorted({s.name for s in md.step_stats if s.type.endswith("While")})
        assert len(loops) == 2
        assert all(sess._measured[name] > 1000 for name in loops)      # measured: milliseconds each
        (after,), where = _partition_run(sess, [total], feeds)          # a new run: placed with the measurements
    np.testing.assert_allclose(after, before, rtol=1e-6)
    assert first_where[loops[0]] == first_where[loops[1]]           # both on one device at first
    assert where[loops[0]] != where[loops[1]]
