"""Session(target="ray://local"): a graph partitioned across tasks that are Ray actors.

The same program must give the same results in one process and on the cluster; variables live on
their task and keep their values across runs; partitions travel as plain GraphDef data.
"""
import gc
import json

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import FailedPreconditionError, InvalidArgumentError

from helpers import PS_WORKERS, cluster_config, counter_graph, local_config, mlp_graph


def _data(n=6, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 5)).astype(np.float32), rng.normal(size=(n, 3)).astype(np.float32)


def test_training_steps_match_a_local_session(ray_local):
    xv, tv = _data()
    results = {}
    for mode in ("local", "cluster"):
        g, n = mlp_graph()
        target, config = ("", local_config()) if mode == "local" else ("ray://local", cluster_config())
        with gr.Session(target, graph=g, config=config) as sess:
            sess.run(n["init"])
            losses = [sess.run([n["loss"], n["train"]], {n["x"]: xv, n["t"]: tv})[0] for _ in range(5)]
            results[mode] = (losses, sess.run([n["w1"], n["w2"]]), sess.run(n["y"], {n["x"]: xv}))
    for a, b in zip(results["local"], results["cluster"]):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)
    assert results["cluster"][0][-1] < results["cluster"][0][0]


def test_variables_live_on_their_task_and_keep_their_values(ray_local):
    g = gr.Graph()
    with g.as_default():
        with gr.device("/job:ps/task:0"):
            v = ek.Variable(np.zeros(3, np.float32), name="v")
        with gr.device("/job:worker/task:1"):       # the update follows the variable to the ps
            bump = v.assign_add(ek.ones((3,)))
        init = gr.global_variables_initializer()
    sess = gr.Session("ray://local", graph=g, config=cluster_config(log_device_placement=False))
    try:
        sess.run(init)
        for _ in range(3):
            sess.run(bump)
        np.testing.assert_array_equal(sess.run(v), [3, 3, 3])
        assert not v.is_initialized()       # the driver's Variable holds nothing: the value is on the ps
        assert sess.variable_task(v) == "/job:ps/replica:0/task:0"
        names = [d.name for d in sess.list_devices()]
        assert names == ["/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0",
                         "/job:ps/replica:0/task:0/device:CPU:0"]
    finally:
        sess.close()


def test_partitions_are_plain_graph_defs_with_send_recv_between_tasks(ray_local):
    g, n = mlp_graph()
    xv, tv = _data()
    opts, md = gr.RunOptions(output_partition_graphs=True, trace_level=gr.RunOptions.FULL_TRACE), gr.RunMetadata()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        sess.run(n["loss"], {n["x"]: xv, n["t"]: tv}, options=opts, run_metadata=md)
    assert len(md.partition_graphs) == 3
    json.dumps(md.partition_graphs)          # plain data: no pickled graph, no code
    devices = set()
    kinds = set()
    for gd in md.partition_graphs:
        devices |= {node.get("device") for node in gd["nodes"]}
        kinds |= {node["op"] for node in gd["nodes"]}
    assert {"_Send", "_Recv"} <= kinds
    assert "/job:ps/replica:0/task:0/device:CPU:0" in devices
    stat_devices = {s.device for s in md.step_stats}
    assert {"/job:worker/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"} <= stat_devices
    assert any(s.type == "MatMul" for s in md.step_stats)


def test_eager_variable_and_fed_fetch_and_nested_fetches(ray_local):
    w = ek.Variable(np.full((2,), 2.0, np.float32), name="eager_w")     # made eagerly: its value travels
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (2,), name="x")
        with gr.device("/job:worker/task:1"):
            y = x * w.read_value()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        out = sess.run({"y": y, "x": x, "pair": (y, x)}, {x: np.array([1, 2], np.float32)})
    np.testing.assert_array_equal(out["y"], [2, 4])
    np.testing.assert_array_equal(out["x"], [1, 2])
    np.testing.assert_array_equal(out["pair"][0], [2, 4])


def test_make_callable_and_compression(ray_local):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        with gr.device("/job:worker/task:0"):
            a = x * 3.0
        with gr.device("/job:worker/task:1"):
            y = a + 0.0
    xv = np.array([1.0001, 2.0, 3.3333, 1e-3], np.float32)
    with gr.Session("ray://local", graph=g, config=cluster_config(transfer_compression="float16")) as sess:
        f = sess.make_callable(y, [x])
        got = f(xv)
    np.testing.assert_array_equal(got, (xv * 3).astype(np.float16).astype(np.float32))


def test_a_traced_function_graph_runs_distributed(ray_local):
    from tracing import function

    @function
    def f(x):
        with gr.device("/job:worker/task:0"):
            a = ek.sin(x) * 2.0
        with gr.device("/job:worker/task:1"):
            return ek.reduce_sum(a * a)

    xv = np.linspace(0, 1, 8).astype(np.float32)
    cf = f.get_concrete_function(ek.constant(xv))
    with gr.Session("ray://local", graph=cf.graph, config=cluster_config()) as sess:
        got = sess.run(cf.outputs[0], {cf.inputs[0]: xv})
    np.testing.assert_allclose(got, f(ek.constant(xv)).numpy(), rtol=1e-6)


def test_op_error_on_a_task_keeps_its_class_and_the_steps_writes(ray_local):
    g, n = counter_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        assert sess.run(n["q"], {n["d"]: 2}) == 5
        with pytest.raises(InvalidArgumentError, match="Integer division by zero.*task:1"):
            sess.run(n["q"], {n["d"]: 0})
        assert sess.run(n["v"]) == 12       # the failed step's increment on the ps stays (no rollback, as TF)
        assert sess.run(n["q"], {n["d"]: 1}) == 13    # and the session goes on


def test_configuration_errors_are_clear(ray_local):
    with pytest.raises(ValueError, match="needs a distributed target"):
        gr.Session(config=cluster_config())
    with pytest.raises(ValueError, match="ray://local"):
        gr.Session("ray://", config=cluster_config())
    with pytest.raises(ValueError, match="job 'ps' needs at least one task"):
        gr.ClusterSpec({"ps": 0})
    with pytest.raises(ValueError, match="task_recovery"):
        gr.SessionConfig(task_recovery="sometimes")
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        with gr.device("/job:chief/task:0"):
            y = x + 1.0
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        with pytest.raises(InvalidArgumentError, match="job:chief.*Available devices"):
            sess.run(y, {x: 1.0})
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(y, {x: 1.0})


def test_steps_from_several_threads_run_concurrently_without_losing_updates(ray_local):
    import threading
    g = gr.Graph()
    with g.as_default():
        with gr.device("/job:ps/task:0"):
            c = ek.Variable(np.array(0, np.int64), name="counter")
        with gr.device("/job:worker/task:0"):
            one = ek.constant(np.int64(1)) * ek.constant(np.int64(1))
        bump = c.assign_add(one)           # worker 0 computes the increment, the ps applies it
        init = gr.global_variables_initializer()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(init)
        errors = []

        def work():
            try:
                for _ in range(15):
                    sess.run(bump)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert sess.run(c) == 60


def test_a_large_value_received_from_another_task_is_never_written_in_place(ray_local):
    # Ray hands a large array over without a copy, read-only; the memory pass may have made the consumer
    # write into its input: partitioning turns it back into the out-of-place op on such an edge
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (1 << 18,), name="x")
        with gr.device("/job:worker/task:0"):
            a = ek.sin(x)
        with gr.device("/job:worker/task:1"):
            y = ek.reduce_sum(ek.cos(a))
    xv = np.linspace(0, 1, 1 << 18).astype(np.float32)
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        md = gr.RunMetadata()
        got = sess.run(y, {x: xv}, options=gr.RunOptions(output_partition_graphs=True), run_metadata=md)
    np.testing.assert_allclose(got, np.cos(np.sin(xv)).sum(), rtol=1e-4)
    ops = {n["op"] for gd in md.partition_graphs for n in gd["nodes"]}
    assert "InplaceElementwise" not in ops and "Cos" in ops


def test_an_optimizer_with_slots_trains_on_the_cluster_as_in_one_process(ray_local):
    xv, tv = _data()
    finals = []
    for target, config in (("", local_config()), ("ray://local", cluster_config())):
        g, n = mlp_graph()
        with g.as_default():
            with gr.device("/job:worker/task:1"):
                step = ek.optimizers.SGD(0.05, momentum=0.9).apply_gradients(
                    zip(gr.gradients(n["loss"], [n["w1"], n["w2"]]), [n["w1"], n["w2"]]))
        with gr.Session(target, graph=g, config=config) as sess:
            sess.run(n["init"])
            for _ in range(4):
                sess.run(step, {n["x"]: xv, n["t"]: tv})
            finals.append(sess.run([n["w1"], n["w2"], n["loss"]], {n["x"]: xv, n["t"]: tv}))
    for a, b in zip(*finals):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_traced_step_puts_every_task_on_one_clock(ray_local):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (256, 256), name="x")
        with gr.device("/job:worker/task:0"):
            a = ek.matmul(x, x)
        with gr.device("/job:worker/task:1"):
            y = ek.reduce_sum(ek.tanh(a))
    md = gr.RunMetadata()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(y, {x: np.ones((256, 256), np.float32)})
        sess.run(y, {x: np.ones((256, 256), np.float32)},
                 options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=md)
    send = next(s for s in md.step_stats if s.type == "_Send")
    recv = next(s for s in md.step_stats if s.type == "_Recv")
    assert send.device.endswith("task:0/device:CPU:0") and recv.device.endswith("task:1/device:CPU:0")
    assert recv.start_us + recv.duration_us >= send.start_us      # the value arrives after it was sent
    trace = json.loads(gr.Timeline(md).generate_chrome_trace_format())
    assert any(e["ph"] == "s" for e in trace["traceEvents"]) and any(e["ph"] == "f" for e in trace["traceEvents"])


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "ray", None)          # `import ray` now raises ImportError
    with pytest.raises(ImportError, match=r"graphjit\[distributed\]"):
        gr.Session("ray://local", config=cluster_config())


def test_a_later_session_reuses_closed_sessions_actors_without_their_state(ray_local):
    # the test session keeps closed sessions' actors idle (conftest): reset, then taken by the next session
    def graph():
        g = gr.Graph()
        with g.as_default():
            with gr.device("/job:ps/task:0"):
                v = ek.Variable(np.float32(1.0), name="v")
            bump = v.assign_add(ek.constant(np.float32(4.0)))
            init = gr.global_variables_initializer()
        return g, v, bump, init

    g, v, bump, init = graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as first:
        first.run(init)
        assert first.run(bump) == 5.0
        old = {a._actor_id for a in first._actors.values()}
    g, v, bump, init = graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as second:
        assert {a._actor_id for a in second._actors.values()} & old       # taken from the idle pool
        with pytest.raises(FailedPreconditionError):
            second.run(v)                      # the earlier session's "v" is gone with its session
        second.run(init)
        assert second.run(bump) == 5.0


# the tests that check actors end with their session (they run last: conftest.py)
def test_close_releases_the_actors(actors_stop_on_close):
    ray_local = actors_stop_on_close
    sess = gr.Session("ray://local", config=gr.SessionConfig(cluster=PS_WORKERS))
    actors = list(sess._actors.values())
    sess.close()
    for a in actors:
        with pytest.raises(Exception):
            ray_local.get(a.ping.remote(), timeout=30)


def test_an_unclosed_session_stops_its_actors_when_it_is_collected(actors_stop_on_close):
    ray_local = actors_stop_on_close
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        with gr.device("/job:worker/task:0"):
            y = x + 1.0
        with gr.device("/job:worker/task:1"):
            z = y * 2.0
    sess = gr.Session("ray://local", graph=g, config=cluster_config())
    assert sess.run(z, {x: 1.0}) == 4.0
    actors = list(sess._actors.values())       # the tasks hold each other's handles: Ray alone keeps them
    del sess
    gc.collect()
    for actor in actors:
        with pytest.raises(ray_local.exceptions.RayActorError):
            ray_local.get(actor.ping.remote(), timeout=60)
