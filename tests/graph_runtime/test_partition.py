"""Partitioned execution: one graph per device joined by _Send/_Recv, partitions run
concurrently through a rendezvous, A->B->A chains do not deadlock, an error on one device aborts the step."""
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError
from graph_runtime.fusion.groups import find_groups
from graph_runtime.multi_device import MultiDevicePlan
from graph_runtime.pipeline import prepare

TWO = gr.SessionConfig(device_count={"CPU": 2})
CPU = "/job:localhost/replica:0/task:0/device:CPU:{}".format


def _ping_pong():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3], name="x")
        with g.device("/cpu:0"):
            a = ek.exp(x, name="a")
        with g.device("/cpu:1"):
            b = ek.sin(a, name="b")
            b2 = ek.cos(a, name="b2")               # a second consumer of a on CPU:1: still one _Recv
        with g.device("/cpu:0"):
            c = ek.add(b, b2, name="c")             # A -> B -> A
        with g.device("/cpu:1"):
            d = ek.tanh(c, name="d")
    return g, x, [a, c, d]


def test_partitions_have_one_recv_per_tensor_and_destination_and_full_devices():
    g, x, fetches = _ping_pong()
    plan = prepare(g, [x], fetches, config=TWO)
    assert isinstance(plan, MultiDevicePlan) and plan.devices == [CPU(0), CPU(1)]
    by_dev = {p.device: p.graph for p in plan.parts}
    for dev, pg in by_dev.items():
        assert all(o.device == dev for o in pg.get_operations())
    recvs1 = [o for o in by_dev[CPU(1)].get_operations() if o.type == "_Recv"]
    sends0 = [o for o in by_dev[CPU(0)].get_operations() if o.type == "_Send"]
    assert [o.get_attr("key") for o in recvs1 if o.get_attr("key").startswith("a:0")] == [f"a:0;{CPU(0)};{CPU(1)}"]
    assert len([o for o in sends0 if o.get_attr("key").startswith("a:0")]) == 1
    assert {o.name for o in by_dev[CPU(0)].get_operations()} >= {"a", "c"}
    assert {o.name for o in by_dev[CPU(1)].get_operations()} >= {"b", "b2", "d"}


def test_split_run_matches_one_device_and_runs_on_a_device_thread():
    g, x, fetches = _ping_pong()
    xv = np.array([0.1, 0.5, -0.3], np.float32)
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, allow_soft_placement=False)) as s:
        two = s.run(fetches, {x: xv})
    a = np.exp(xv)
    c = np.sin(a) + np.cos(a)
    for got, want in zip(two, [a, c, np.tanh(c)]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    threads = []
    from eager.ops._define import infer_same
    from eager.registry import op
    from eager.dispatch import execute
    where = op("PartitionTestWhere", lambda v: (threads.append(threading.current_thread().name), v)[1],
               infer_same, effect="write")
    g2 = gr.Graph()
    with g2.as_default():
        y = gr.placeholder(ek.float32, [2], name="y")
        with g2.device("/cpu:1"):
            w = execute(where, (y,), {})
        z = ek.exp(y) + 1.0
        out = w + z
    with gr.Session(graph=g2, config=TWO) as s:
        np.testing.assert_allclose(s.run(out, {y: np.zeros(2, np.float32)}), [2, 2])
    assert threads and threads[0].startswith("graphjit-device")


def test_variables_targets_and_control_edges_across_devices():
    g = gr.Graph()
    with g.as_default():
        with g.device("/cpu:1"):
            v = ek.Variable(np.zeros(2, np.float32), name="v")
        with g.device("/cpu:0"):
            inc = ek.constant(np.ones(2, np.float32)) * 3.0
        up = v.assign_add(inc)                         # with v on CPU:1, fed from CPU:0
        with g.control_dependencies([up]):
            with g.device("/cpu:0"):
                after = ek.constant(1.0) + 1.0          # a control edge CPU:1 -> CPU:0
        init = gr.global_variables_initializer()
    with gr.Session(graph=g, config=TWO) as s:
        s.run(init)
        assert s.run(after) == 2.0
        np.testing.assert_array_equal(s.run(v), [3, 3])    # the control edge ran the update first
        assert s.run([up, v])[1].tolist() == [6, 6]        # a target on CPU:1, the variable read after it


def test_two_devices_exchange_one_pair_per_crossing_tensor_and_nothing_else():
    # the partitions' own barrier is the runner joining them: no "done" message travels, yet a variable read
    # after the run sees a write another device made last (a target that nothing on the main device needs)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        with g.device("/cpu:1"):
            v = ek.Variable(np.zeros(3, np.float32), name="v")
            a = ek.sin(x, name="a")
            slow = ek.while_loop(lambda i: i < 2000, lambda i: i + 1, [ek.constant(0)])[0]
            with g.control_dependencies([slow]):
                late = v.assign_add(ek.ones(3), name="late")
        with g.device("/cpu:0"):
            y = ek.cos(a, name="y")
        init = gr.global_variables_initializer()
    md = gr.RunMetadata()
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, optimize=False)) as sess:
        sess.run(init)
        for k in range(1, 4):
            got_y, _, got_v = sess.run([y, late.op, v], {x: np.ones(3, np.float32)},
                                       options=gr.RunOptions(output_partition_graphs=True), run_metadata=md)
            np.testing.assert_allclose(got_y, np.cos(np.sin(np.ones(3))), rtol=1e-6)
            np.testing.assert_array_equal(got_v, [k, k, k])
    transfers = sorted((n["op"], n["attrs"]["key"]) for gd in md.partition_graphs for n in gd["nodes"]
                       if n["op"] in ("_Send", "_Recv"))
    key = f"a:0;{CPU(1)};{CPU(0)}"
    assert [op for op, _ in transfers] == ["_Recv", "_Send"] and {k for _, k in transfers} == {key}


def _gather_on_device_1(weight: int):
    """CPU:0 waits for a gather on CPU:1 (index out of range when i >= 2); `weight` > 0 adds a matmul of that
    size to CPU:1's share, enough to make the step use the device threads rather than run inline."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        i = gr.placeholder(ek.int32, [], name="i")
        m = gr.placeholder(ek.float32, [weight, weight], name="m")
        with g.device("/cpu:1"):
            bad = ek.gather(x, ek.reshape(i, [1]), name="bad")   # index out of range on CPU:1
            heavy = ek.reduce_sum(ek.matmul(m, m)) * 0.0
        with g.device("/cpu:0"):
            out = ek.exp(x, name="e") + ek.reduce_sum(bad) + heavy   # CPU:0 waits for CPU:1's values
    feeds = {x: np.zeros(2, np.float32), m: np.zeros((weight, weight), np.float32)}
    return g, out, i, feeds


@pytest.mark.parametrize("weight", [1, 300], ids=["inline", "device-threads"])
def test_error_on_device_1_aborts_the_step_while_device_0_waits(weight):
    g, out, i, feeds = _gather_on_device_1(weight)
    before = _device_threads()
    with gr.Session(graph=g, config=TWO) as s:
        with pytest.raises(InvalidArgumentError) as e:
            s.run(out, {**feeds, i: 7})
        assert "bad" in str(e.value) and "aborted" not in str(e.value)
        np.testing.assert_allclose(s.run(out, {**feeds, i: 1}), [1, 1])   # the next step works
        # a small pure step runs its partitions on the caller's thread, a heavier one on the device threads
        assert bool(_device_threads() - before) == (weight > 1)


def test_a_small_pure_step_runs_inline_and_gives_what_the_device_threads_give():
    g, x, fetches = _ping_pong()                       # A -> B -> A: the partitions must run together
    with g.as_default():
        x2 = gr.placeholder(ek.float32, [3], name="x2")
        with g.device("/cpu:1"):
            y = ek.sin(x2) * 3.0
        with g.device("/cpu:0"):
            z = ek.exp(y) - 1.0                        # B -> A only: inline
    xv = np.array([0.1, 0.5, -0.3], np.float32)
    before = _device_threads()
    with gr.Session(graph=g, config=TWO) as s, \
            gr.Session(graph=g, config=gr.SessionConfig(allow_soft_placement=True)) as one:
        for _ in range(3):
            np.testing.assert_array_equal(s.run(z, {x2: xv}), one.run(z, {x2: xv}))
        assert not _device_threads() - before
        s.run(fetches, {x: xv})
        assert _device_threads() - before


def test_run_metadata_partition_graphs():
    g, x, fetches = _ping_pong()
    xv = np.array([0.1, 0.5, -0.3], np.float32)
    opts, md = gr.RunOptions(output_partition_graphs=True), gr.RunMetadata()
    with gr.Session(graph=g, config=TWO) as s:
        s.run(fetches, {x: xv}, options=opts, run_metadata=md)
        assert len(md.partition_graphs) == 2
        for gd, dev in zip(md.partition_graphs, [CPU(0), CPU(1)]):
            assert gd["nodes"] and all(n["device"] == dev for n in gd["nodes"])
        recvs = [n for n in md.partition_graphs[1]["nodes"] if n["op"] == "_Recv"]
        keys = [n["attrs"]["key"] for n in recvs]
        assert len(keys) == len(set(keys)) and f"a:0;{CPU(0)};{CPU(1)}" in keys
        md2 = gr.RunMetadata()
        s.run(fetches, {x: xv}, run_metadata=md2)               # not asked: nothing filled
        assert md2.partition_graphs == []
    with gr.Session(graph=g, config=gr.SessionConfig(allow_soft_placement=True)) as s:   # one device
        md = gr.RunMetadata()
        s.make_callable(fetches, [x])(xv, options=opts, run_metadata=md)
        assert len(md.partition_graphs) == 1
        assert all(n["device"] == CPU(0) for n in md.partition_graphs[0]["nodes"])


@pytest.mark.parametrize("how", [None, "float16", "truncate16"])
def test_transfer_compression_applies_to_float32_cross_device_edges_only(how):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [4], name="x")
        n = gr.placeholder(ek.int32, [2], name="n")
        with g.device("/cpu:1"):
            y = ek.negative(x)
            m = n * 3
        with g.device("/cpu:0"):
            out = ek.negative(y)              # y crosses CPU:1 -> CPU:0
            k = m - 1                         # an int32 edge: never compressed
    xv = np.array([1.0 + 2 ** -12, np.pi, -1e-3, 1000.1], np.float32)
    nv = np.array([70000, -5], np.int32)
    cfg = gr.SessionConfig(device_count={"CPU": 2}, transfer_compression=how)
    with gr.Session(graph=g, config=cfg) as s:
        got, got_k = s.run([out, k], {x: xv, n: nv})
    want = {None: xv, "float16": xv.astype(np.float16).astype(np.float32),
            "truncate16": (xv.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)}[how]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_k, nv * 3 - 1)
    if how is not None:
        assert not np.array_equal(got, xv)    # lossy, which is why it is off by default


def test_bad_transfer_compression():
    with pytest.raises(ValueError, match="transfer_compression"):
        gr.SessionConfig(transfer_compression="int8")


def test_traced_multi_device_run_records_every_op_with_its_device_and_a_timeline_row_per_device():
    import json
    from graph_runtime.timeline import Timeline
    g, x, fetches = _ping_pong()
    xv = np.array([0.1, 0.5, -0.3], np.float32)
    md = gr.RunMetadata()
    with gr.Session(graph=g, config=TWO) as s:
        got = s.run(fetches, {x: xv}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=md)
        want = s.run(fetches, {x: xv})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    dev = {st.name: st.device for st in md.step_stats}
    assert dev["a"] == dev["c"] == CPU(0) and dev["b"] == dev["b2"] == dev["d"] == CPU(1)
    assert sorted(st.type for st in md.step_stats).count("_Recv") >= 2
    names = [st.name for st in md.step_stats]
    assert len(names) == len(set(names))                          # every op once
    trace = json.loads(Timeline(md).generate_chrome_trace_format())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert len({e["pid"] for e in events if e.get("ph") == "X"}) == 2


def test_traced_run_error_on_one_device_aborts_the_step():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        i = gr.placeholder(ek.int32, [], name="i")
        with g.device("/cpu:1"):
            bad = ek.gather(x, ek.reshape(i, [1]), name="bad")
        with g.device("/cpu:0"):
            out = ek.exp(x, name="e") + ek.reduce_sum(bad)
    with gr.Session(graph=g, config=TWO) as s:
        with pytest.raises(InvalidArgumentError, match="bad") as e:
            s.run(out, {x: np.zeros(2, np.float32), i: 7},
                  options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=gr.RunMetadata())
        assert "aborted" not in str(e.value)


def _device_threads() -> set:
    return {t for t in threading.enumerate() if t.name.startswith("graphjit-device")}


def test_close_shuts_down_the_device_threads_of_every_plan_and_20_sessions_leak_none():
    g, x, fetches = _ping_pong()
    xv = np.array([0.1, 0.5, -0.3], np.float32)
    before = _device_threads()
    kept = []
    for i in range(20):
        s = gr.Session(graph=g, config=TWO)
        s.run(fetches, {x: xv})
        call = s.make_callable(fetches[1:], [x])      # a second plan, held alive by the callable
        call(xv)
        kept.append(call)
        assert len(_device_threads() - before) >= 2   # the session's plans have live device threads
        if i % 2:
            s.close()
        else:
            with s:
                pass                                   # the context manager's exit closes it too
        assert _device_threads() <= before, "close() left device threads running"
        with pytest.raises(RuntimeError, match="closed Session"):
            s.run(fetches, {x: xv})
        with pytest.raises(RuntimeError, match="closed Session"):
            call(xv)


@pytest.mark.parametrize("how", [None, "float16", "truncate16"])
def test_traced_send_stats_carry_bytes_sent_and_saved_by_compression(how):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [5, 2], name="x")
        n = gr.placeholder(ek.int32, [3], name="n")
        with g.device("/cpu:1"):
            y = ek.negative(x, name="y")
            m = ek.multiply(n, 3, name="m")
        with g.device("/cpu:0"):
            out = ek.negative(y)              # y (40 bytes of float32) crosses CPU:1 -> CPU:0
            k = m - 1                         # m (12 bytes of int32): never compressed
    md = gr.RunMetadata()
    cfg = gr.SessionConfig(device_count={"CPU": 2}, transfer_compression=how)
    with gr.Session(graph=g, config=cfg) as s:
        s.run([out, k], {x: np.ones((5, 2), np.float32), n: np.arange(3, dtype=np.int32)},
              options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=md)
    sends = {st.name.split("/")[0]: (st.bytes_sent, st.bytes_saved) for st in md.step_stats if st.type == "_Send"}
    assert sends == {"y": (20, 20) if how else (40, 0), "m": (12, 0)}
    assert all(st.bytes_sent == st.bytes_saved == 0 for st in md.step_stats if st.type != "_Send")


def _two_branches(split: bool):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [64, 64], name="x")
        with g.device("/cpu:0" if split else None):
            a = ek.tanh(ek.exp(ek.tanh(ek.matmul(x, x))) * 0.5, name="a")
        with g.device("/cpu:1" if split else None):
            b = ek.tanh(ek.exp(ek.tanh(ek.matmul(x * 0.5, x))) * 0.5, name="b")
        with g.device("/cpu:0" if split else None):
            out = ek.tanh(a + b, name="out")
    return g, x, out


def _group_names(g) -> list:
    return [sorted(m.name for m in grp.members) for grp in find_groups(g, preserve=frozenset({"out"}))]


def test_fusion_does_not_make_a_local_chain_wait_for_a_value_from_another_device():
    """The fused op of device 0's chain must not also hold the `a + b` that reads b from device 1: it would
    wait for the _Recv and the two devices' chains would run one after the other
    (benchmarks/bench_devices.py's two branches would take as long as on one device)."""
    g, x, out = _two_branches(True)
    plan = prepare(g, [x], [out], config=TWO)
    by_dev = {p.device: p.graph for p in plan.parts}
    ops0 = by_dev[CPU(0)].get_operations()
    recv = [o for o in ops0 if o.type == "_Recv" and o.get_attr("key").startswith("b")]
    assert len(recv) == 1
    fused = [o for o in ops0 if o.type == "FusedElementwise"]
    local = [o for o in fused if not any(t.op.type == "_Recv" for t in o.inputs)]
    assert local, [o.type for o in ops0]                       # device 0's own chain is still fused ...
    waits = [o for o in ops0 if any(t.op is recv[0] for t in o.inputs)]
    assert waits and all(o not in local for o in waits)       # ... in an op that does not read the transfer
    assert {o.type for o in by_dev[CPU(1)].get_operations()} >= {"FusedElementwise", "_Send"}
    # the grouping itself: on one device `a + b` and `out` join a's chain (unchanged); split, they form
    # their own group (they wait for the transfer), and each device's chain stays one group
    g1, x1, out1 = _two_branches(False)
    one = [n for n in _group_names(g1) if "a" in n][0]
    assert {"a", "add", "out"} <= set(one)
    two = _group_names(g)
    assert ["add", "out"] in two and any("a" in n and "add" not in n for n in two) and \
        any("b" in n and "add" not in n for n in two)
    xv = np.random.default_rng(0).standard_normal((64, 64)) / 8
    with gr.Session(graph=g, config=TWO) as s:
        got_two = s.run(out, {x: xv})
    with gr.Session(graph=g1) as s:
        got_one = s.run(out1, {x1: xv})
    np.testing.assert_allclose(got_two, got_one, rtol=1e-12)


def test_an_in_place_op_never_writes_into_a_buffer_from_another_device():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (1 << 16,), name="x")
        with g.device("/cpu:1"):
            a = ek.sin(x)                   # a fresh buffer, used once: the memory pass makes cos write into it
        with g.device("/cpu:0"):
            y = ek.reduce_sum(ek.cos(a))
    xv = np.linspace(0, 1, 1 << 16).astype(np.float32)
    opts, md = gr.RunOptions(output_partition_graphs=True), gr.RunMetadata()
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
        got = sess.run(y, {x: xv}, options=opts, run_metadata=md)
    np.testing.assert_allclose(got, np.cos(np.sin(xv)).sum(), rtol=1e-4)
    ops = [n["op"] for gd in md.partition_graphs for n in gd["nodes"]]
    assert "Cos" in ops and "InplaceElementwise" not in ops


def test_partition_graphs_keep_op_names_and_name_transfers_after_them():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        with g.device("/cpu:1"):
            a = ek.sin(x, name="a")
        with g.device("/cpu:0"):
            y = ek.reduce_sum(ek.cos(a, name="b"), name="y")
    md = gr.RunMetadata()
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, optimize=False)) as sess:
        sess.run(y, {x: np.ones(4, np.float32)}, options=gr.RunOptions(output_partition_graphs=True),
                 run_metadata=md)
    names = sorted(n["name"] for gd in md.partition_graphs for n in gd["nodes"])
    assert names == sorted(["x/_feed_0", "a", "a/_send_0", "a/_recv_0", "b", "y"])


def _two_device_graph(first=lambda x: ek.sin(x) * 2.0):
    """x -> a on CPU:1 (`first(x)`) -> b on CPU:0 -> c on CPU:1 -> an update of v, which lives on CPU:0."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        z = gr.placeholder(ek.float32, (3,), name="z")
        with g.device("/cpu:0"):
            v = ek.Variable(np.zeros(3, np.float32), name="v")
        with g.device("/cpu:1"):
            a = first(x)
        with g.device("/cpu:0"):
            b = ek.cos(a) + 1.0
        with g.device("/cpu:1"):
            c = b * z
            bump = v.assign_add(c)          # follows v to cpu:0
        init = gr.global_variables_initializer()
    return g, x, z, a, b, c, bump, init


def test_inter_op_threads_on_several_devices_give_the_one_device_results():
    xv, zv = np.array([0.1, 0.2, 0.3], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    results = []
    for config in (gr.SessionConfig(), gr.SessionConfig(device_count={"CPU": 2}, inter_op_parallelism_threads=3)):
        g, x, z, a, b, c, bump, init = _two_device_graph()
        cfg = config if config.device_count else gr.SessionConfig(allow_soft_placement=True)
        with gr.Session(graph=g, config=cfg) as sess:
            sess.run(init)
            results.append([sess.run([a, b, c, bump], {x: xv, z: zv}) for _ in range(2)])
    for r1, r2 in zip(*results):
        for u, w in zip(r1, r2):
            np.testing.assert_allclose(u, w, rtol=1e-6)


def test_partial_runs_on_several_devices():
    xv, zv = np.array([0.1, 0.2, 0.3], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    g, x, z, a, b, c, bump, init = _two_device_graph()
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
        sess.run(init)
        h = sess.partial_run_setup([a, b, c, bump], [x, z])
        got_b = sess.partial_run(h, b, {x: xv})
        np.testing.assert_allclose(got_b, np.cos(np.sin(xv) * 2) + 1, rtol=1e-6)
        with pytest.raises(InvalidArgumentError):
            sess.partial_run(h, b)                          # fetched already
        got_c, _ = sess.partial_run(h, [c, bump], {z: zv})
        np.testing.assert_allclose(got_c, got_b * zv, rtol=1e-6)
        with pytest.raises(InvalidArgumentError):
            sess.partial_run(h, a, {x: xv})                 # fed already
        np.testing.assert_allclose(sess.run(g.get_collection(gr.GraphKeys.GLOBAL_VARIABLES)[0]), got_c, rtol=1e-6)
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 1})) as sess:
        with pytest.raises(InvalidArgumentError, match="CPU:1"):
            sess.partial_run_setup([c], [x, z])             # placement still checks the requests


def test_partial_runs_on_two_devices_run_each_partition_on_its_device_and_match_one_device():
    xv, zv = np.array([0.1, 0.2, 0.3], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    results, threads = [], []

    def doubled(t):
        threads.append(threading.current_thread().name)
        return t.numpy() * 2.0

    for config in (gr.SessionConfig(allow_soft_placement=True), gr.SessionConfig(device_count={"CPU": 2})):
        g, x, z, a, b, c, bump, init = _two_device_graph(
            lambda x: ek.reshape(ek.py_function(doubled, [ek.sin(x)], ek.float32), (3,)))
        v = g.get_collection(gr.GraphKeys.GLOBAL_VARIABLES)[0]
        threads.clear()
        with gr.Session(graph=g, config=config) as sess:
            sess.run(init)
            h = sess.partial_run_setup([a, b, c, bump], [x, z])
            with pytest.raises(InvalidArgumentError, match="Fetch x:0 can't be computed"):
                sess.partial_run(h, b)                      # x not fed yet: the handle stays usable
            got = [sess.partial_run(h, b, {x: xv})]
            with pytest.raises(InvalidArgumentError, match="Fetch z:0 can't be computed"):
                sess.partial_run(h, c)
            got += sess.partial_run(h, [a, c, bump], {z: zv})
            got.append(sess.run(v))                         # the update ran once
        results.append(got)
        ran_on = list(threads)
    np.testing.assert_allclose(results[1][0], np.cos(np.sin(xv) * 2) + 1, rtol=1e-6)
    for one, two in zip(*results):
        if one is None:
            assert two is None
        else:
            np.testing.assert_allclose(two, one, rtol=1e-6)
    np.testing.assert_allclose(results[1][-1], results[1][2], rtol=1e-6)
    assert len(ran_on) == 1 and ran_on[0].startswith("graphjit-device"), ran_on   # a ran on CPU:1's thread


def test_a_partial_run_fetch_from_another_device_waits_for_no_unrelated_send():
    # _Sends are not chained in program order: whichever of p's and q's sends comes first in CPU:1's
    # partition, fetching the other needs only its own feed
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        y = gr.placeholder(ek.float32, (3,), name="y")
        with g.device("/cpu:1"):
            p = ek.multiply(y, 3.0, name="p")
            q = ek.multiply(x, 2.0, name="q")
        with g.device("/cpu:0"):
            p, q = p + 1.0, q + 1.0
    xv, yv = np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, 0.5, 0.5], np.float32)
    with gr.Session(graph=g, config=TWO) as sess:
        for first, feed, want in ((q, {x: xv}, 2 * xv + 1), (p, {y: yv}, 3 * yv + 1)):
            h = sess.partial_run_setup([p, q], [x, y])
            np.testing.assert_array_equal(sess.partial_run(h, first, feed), want)
