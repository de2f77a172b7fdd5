"""Placement knows what a transfer costs where it runs: between devices of one process tens of microseconds,
between the tasks of a Ray cluster about a millisecond (measured when the session starts).  So work that
two local devices share is kept on one task, and nobody-placed constants and group ops follow their users
instead of crossing tasks to reach them.
"""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.cost_model import Links
from graph_runtime.pipeline import partition_request
from graph_runtime.runtime import make_request

from helpers import mlp_graph

WORKERS = gr.ClusterSpec({"worker": 2})


def two_branches():
    """Two independent chains of 64x64 matmuls (about 0.3 ms each by the cost model), nothing placed; not
    the same ops (placement puts equal ops, which CSE merges, together)."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (64, 64), name="x")
        left = ek.matmul(ek.matmul(x, x, name="l1"), x, name="l2")
        right = ek.matmul(ek.matmul(x, x, transpose_b=True, name="r1"), x, name="r2")
        out = ek.reduce_sum(left + right, name="out")
    return g, x, out


def _tasks_used(config, graph, fetches, feeds, links) -> list:
    request = make_request(graph, fetches, feeds)
    req = partition_request(graph, request.feeds, request.returns, request.targets, config, links)
    return [p.device for p in req.parts if any(o.type not in ("Placeholder", "_Recv") for o in p.graph._ops)]


def test_in_process_links_spread_two_branches_and_task_links_keep_them_together():
    g, x, out = two_branches()
    config = gr.SessionConfig(cluster=WORKERS, device_count={"CPU": 1}, optimize=False)
    assert len(_tasks_used(config, g, out, [x], Links())) == 2                    # 30 us a transfer: spread
    assert len(_tasks_used(config, g, out, [x], Links([0, 1], remote_us=1000.0))) == 1


def test_constants_and_group_ops_nobody_placed_follow_their_users():
    # the MLP without its worker scopes: everything reads the ps's variables; the learning rate (a constant)
    # and the train op's NoOp (control inputs only) used to go to worker 0, costing two transfers a step
    g, n = mlp_graph(workers=False)
    config = gr.SessionConfig(cluster=gr.ClusterSpec({"ps": 1, "worker": 2}), device_count={"CPU": 1})
    used = _tasks_used(config, g, [n["loss"], n["train"]], [n["x"], n["t"]], Links([0, 1, 2], remote_us=1000.0))
    assert used == ["/job:ps/replica:0/task:0/device:CPU:0"]


def test_a_small_unplaced_graph_stays_on_one_ray_task(ray_local):
    pytest.importorskip("ray")
    g, x, out = two_branches()
    xv = np.eye(64, dtype=np.float32)
    md = gr.RunMetadata()
    with gr.Session("ray://local", graph=g, config=gr.SessionConfig(cluster=WORKERS, optimize=False)) as sess:
        got = sess.run(out, {x: xv}, options=gr.RunOptions(output_partition_graphs=True), run_metadata=md)
    np.testing.assert_allclose(got, 128.0)
    busy = {n["device"] for gd in md.partition_graphs for n in gd["nodes"] if n["op"] == "MatMul"}
    assert len(busy) == 1, busy
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, optimize=False)) as local:
        md = gr.RunMetadata()
        local.run(out, {x: xv}, options=gr.RunOptions(output_partition_graphs=True), run_metadata=md)
    assert len({n["device"] for gd in md.partition_graphs for n in gd["nodes"] if n["op"] == "MatMul"}) == 2
