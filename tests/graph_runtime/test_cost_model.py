"""Placement's cost model: estimated compute and transfer times spread heavy independent
branches over devices, keep cheap ops with their inputs, and measured times from traced runs refine it."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.registry import Spec, op as register_op, register_kernel
from graph_runtime.cost_model import compute_us
from graph_runtime.device_types import DeviceCosts, register_device_type, unregister_device_type


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
        right = ek.matmul(ek.matmul(x, x, transpose_b=True, name="r1"), x, name="r2")    # not the same ops
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


# ------------------------------------------------------------------ equal ops placed as one; device types
def test_a_branch_built_twice_is_placed_on_one_device_and_computed_once():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (300, 300), name="x")
        left = ek.matmul(ek.matmul(x, x, name="l1"), x, name="l2")
        right = ek.matmul(ek.matmul(x, x, name="r1"), x, name="r2")      # the same computation again
        out = ek.reduce_sum(left * 2.0 + right, name="out")
    xv = np.eye(300, dtype=np.float32)
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
        md = gr.RunMetadata()
        got = sess.run(out, {x: xv}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE,
                                                            output_partition_graphs=True), run_metadata=md)
    np.testing.assert_allclose(got, 900.0)
    assert sum(s.type == "MatMul" for s in md.step_stats) == 2, [(s.name, s.device) for s in md.step_stats]
    where = _devices_of(md)
    assert {d for n, d in where.items() if n in ("l1", "l2", "r1", "r2")} == {where["l1"]}


class _DeviceType:
    """A test-only device type registered for the duration of a `with` block."""

    def __init__(self, name, costs):
        self.name, self.costs = name, costs

    def __enter__(self):
        register_device_type(self.name, self.costs)
        return self.name

    def __exit__(self, *exc):
        unregister_device_type(self.name)


_HEAVY = []


def _heavy_op():
    """A test op ("TestHeavy": x * 2, costed as an elementwise op) with a CPU kernel only; tests add others."""
    if not _HEAVY:
        _HEAVY.append(register_op("TestHeavy", lambda x: np.multiply(x, 2.0),
                                  lambda specs, attrs: [Spec(specs[0].shape, specs[0].dtype)]))
    return _HEAVY[0]


def _two_heavy_branches(device_count):
    heavy = _heavy_op()
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, (500, 500), name="x")
        y = gr.placeholder(ek.float64, (500, 500), name="y")
        a = g.add_node(heavy, (x,), {}, "a")._outputs[0]
        b = g.add_node(heavy, (y,), {}, "b")._outputs[0]
        out = ek.reduce_sum(ek.reduce_sum(a, name="sa") + ek.reduce_sum(b, name="sb"), name="out")
    with gr.Session(graph=g, config=gr.SessionConfig(device_count=device_count, optimize=False)) as sess:
        got, where = _partition_run(sess, out, {x: np.ones((500, 500)), y: np.full((500, 500), 2.0)})
    assert got == 2.0 * 250_000 + 4.0 * 250_000
    return where


def test_a_slower_device_type_gets_less_work_than_a_cpu():
    heavy = _heavy_op()
    where = _two_heavy_branches({"CPU": 2})             # two CPUs: the heavy branches spread
    assert where["a"] != where["b"]
    with _DeviceType("TESTSLOW", DeviceCosts(element_us=0.05)) as slow:
        register_kernel(heavy, slow, heavy.kernel)
        try:
            where = _two_heavy_branches({"CPU": 1, slow: 1})    # 25x slower: both stay on the CPU
            assert where["a"] == where["b"] == "/job:localhost/replica:0/task:0/device:CPU:0", where
        finally:
            del heavy.kernels[slow]
    with _DeviceType("TESTFAST", DeviceCosts()) as same:
        register_kernel(heavy, same, heavy.kernel)
        try:
            where = _two_heavy_branches({"CPU": 1, same: 1})    # as fast as a CPU: one branch moves there
            assert {where["a"], where["b"]} == {"/job:localhost/replica:0/task:0/device:CPU:0",
                                                f"/job:localhost/replica:0/task:0/device:{same}:0"}, where
        finally:
            del heavy.kernels[same]
        where = _two_heavy_branches({"CPU": 1, same: 1})        # no kernel there: both stay on the CPU
        assert where["a"] == where["b"] == "/job:localhost/replica:0/task:0/device:CPU:0", where


def test_compute_us_uses_the_device_types_cost_table():
    g = gr.Graph()
    with g.as_default():
        s = ek.sin(gr.placeholder(ek.float32, (1000, 100), name="p"), name="s")
    with _DeviceType("TESTSLOW", DeviceCosts(op_overhead_us=1.0, element_us=0.02)) as slow:
        assert compute_us(s.op, None, slow) == pytest.approx(1.0 + 0.02 * 1e5)
        assert compute_us(s.op, None, slow) > 9 * compute_us(s.op, None, "CPU")
        assert compute_us(s.op, {"s": 30.0}, slow) == pytest.approx(30.0 * compute_us(s.op, None, slow) /
                                                                     compute_us(s.op, None, "CPU"))


def test_an_unregistered_device_type_is_refused():
    with pytest.raises(ValueError, match="register_device_type"):
        gr.SessionConfig(device_count={"CPU": 1, "GPU": 1})
    with pytest.raises(ValueError, match="CPU device type always exists"):
        unregister_device_type("cpu")
