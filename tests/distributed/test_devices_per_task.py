"""Several devices per task: `SessionConfig(device_count={"CPU": 2})` on a cluster gives every task two devices,
`/job:worker/replica:0/task:0/device:CPU:1`; a run's partitions are per device, and a task runs its devices'
partitions concurrently, exchanging values through its own mailbox, and with other tasks as before.
"""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.distributed.payloads import VariableRegistry, build_task_plan
from graph_runtime.distributed.worker import CONFIG_FIELDS, TaskServer
from graph_runtime.pipeline import partition_request
from graph_runtime.runtime import make_request

from helpers import local_config, one_task

W0, W1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


def chain_graph():
    """x -> sin on task 0 CPU:0 -> *2 on task 0 CPU:1 -> +v on task 1 CPU:1, v on task 1 CPU:0 bumped by 1."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        with gr.device(f"{W1}/device:CPU:0"):
            v = ek.Variable(np.arange(4, dtype=np.float32), name="v")
        with gr.device(f"{W0}/device:CPU:0"):
            a = ek.sin(x, name="a")
        with gr.device(f"{W0}/device:CPU:1"):
            b = ek.multiply(a, 2.0, name="b")
        with gr.device(f"{W1}/device:CPU:1"):
            y = ek.add(b, v.read_value(), name="y")
        bump = v.assign_add(ek.ones((4,)))
        init = gr.global_variables_initializer()
    return g, dict(x=x, v=v, a=a, b=b, y=y, bump=bump, init=init)


def test_one_task_runs_its_two_devices_partitions_together_in_process():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        with gr.device(f"{W0}/device:CPU:0"):
            a = ek.sin(x)
        with gr.device(f"{W0}/device:CPU:1"):
            b = a * 2.0
        with gr.device(f"{W0}/device:CPU:0"):
            y = b + a
    config = gr.SessionConfig(cluster=gr.ClusterSpec({"worker": 1}), device_count={"CPU": 2})
    request = make_request(g, y, [x])
    req = partition_request(g, request.feeds, request.returns, request.targets, config)
    assert [p.device for p in req.parts] == [f"{W0}/device:CPU:0", f"{W0}/device:CPU:1"]
    plan = build_task_plan(req, request.feeds, request.returns, request.container, config.cluster,
                           VariableRegistry(), iter(range(1, 9)), {k: getattr(config, k) for k in CONFIG_FIELDS})
    [part] = plan.parts                             # one task: its two partitions travel together
    task = TaskServer(part.task)
    task.register(part.reg, part.payload)
    xv = np.linspace(0, 1, 4).astype(np.float32)
    status, values, _ = task.run(part.reg, 1, [xv for _ in part.feed_index], 10.0)
    assert status == "ok"
    np.testing.assert_allclose(values[0], np.sin(xv) * 3, rtol=1e-6)


def test_two_devices_per_ray_task_match_one_process(ray_local):
    pytest.importorskip("ray")
    xv = np.linspace(0, 1, 4).astype(np.float32)
    results = {}
    for mode in ("local", "cluster"):
        g, n = chain_graph()
        target, config = (("", local_config()) if mode == "local" else
                          ("ray://local", gr.SessionConfig(cluster=gr.ClusterSpec({"worker": 2}),
                                                           device_count={"CPU": 2})))
        md = gr.RunMetadata()
        with gr.Session(target, graph=g, config=config) as sess:
            sess.run(n["init"])
            sess.run(n["bump"])
            got = sess.run(n["y"], {n["x"]: xv}, run_metadata=md,
                           options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE, output_partition_graphs=True))
            h = sess.partial_run_setup([n["b"], n["y"]], [n["x"]])     # within a task and across tasks
            piecewise = (sess.partial_run(h, n["b"], {n["x"]: xv}), sess.partial_run(h, n["y"]))
            results[mode] = (got, sess.run(n["v"]), *piecewise)
            devices = [d.name for d in sess.list_devices()]
    for a, b in zip(results["cluster"], results["local"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(results["cluster"][3], results["cluster"][0], rtol=1e-6)
    assert devices == [f"{W0}/device:CPU:0", f"{W0}/device:CPU:1", f"{W1}/device:CPU:0", f"{W1}/device:CPU:1"]
    where = {node["name"]: node["device"] for gd in md.partition_graphs for node in gd["nodes"]}
    assert where["a"] == f"{W0}/device:CPU:0" and where["b"] == f"{W0}/device:CPU:1"
    assert where["y"] == f"{W1}/device:CPU:1"
    assert len(md.partition_graphs) == 4                    # within a task and across tasks
    ran = {s.name: s.device for s in md.step_stats}
    assert ran["b"] == f"{W0}/device:CPU:1" and ran["y"] == f"{W1}/device:CPU:1"


def test_an_error_on_one_device_of_a_task_ends_the_step_on_its_other_device():
    g = gr.Graph()
    with g.as_default():
        d = gr.placeholder(ek.int32, (), name="d")
        with gr.device(f"{W0}/device:CPU:1"):
            q = ek.constant(7) // d
        with gr.device(f"{W0}/device:CPU:0"):
            out = q + 1
    config = gr.SessionConfig(cluster=gr.ClusterSpec({"worker": 1}), device_count={"CPU": 2})
    task, part = one_task(g, out, [d], config)
    record = task.run(part.reg, 1, [np.int32(0) for _ in part.feed_index], 30.0)    # CPU:0 waits for q: aborted
    assert record[:2] == ("error", "InvalidArgumentError") and "division by zero" in record[2]
    assert task.run(part.reg, 2, [np.int32(7) for _ in part.feed_index], 30.0)[:2] == ("ok", [2])
