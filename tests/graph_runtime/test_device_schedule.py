"""The schedule of a multi-device step (device_schedule.py): each partition runs the configured schedule,
runs its ready work before it waits on a _Recv, and never deadlocks whatever the schedule."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import eager as ek
import graph_runtime as gr

CPU = "/job:localhost/replica:0/task:0/device:CPU:{}".format
SCHEDULES = ("creation", "alap", "memory")
TRACE = gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE)


def _device_order(md, device) -> list:
    """The names of the ops `device` ran, in the order they started."""
    return [s.name for s in sorted((s for s in md.step_stats if s.device == device), key=lambda s: s.start_us)]


def _waits_for_far_work():
    """CPU:0 computes a slow chain; CPU:1 reads its result first (in creation order) and has its own
    independent matmuls, created after that read."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, (300, 300), name="x")
        with g.device("/cpu:0"):
            far = x
            for i in range(3):
                far = ek.matmul(far, x, name=f"far{i}")
        with g.device("/cpu:1"):
            uses = ek.matmul(far, x, name="uses_far")
            own = x
            for i in range(3):
                own = ek.matmul(own, x, name=f"own{i}")
            out = ek.reduce_sum(uses + own, name="out")
    return g, x, out


@pytest.mark.parametrize("kind", SCHEDULES)
def test_a_device_runs_its_ready_work_before_it_waits_on_a_receive(kind):
    g, x, out = _waits_for_far_work()
    xv = np.eye(300) * 0.5
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, schedule=kind,
                                                     optimize=False)) as sess:
        md = gr.RunMetadata()
        got = sess.run(out, {x: xv}, options=TRACE, run_metadata=md)
    np.testing.assert_allclose(got, 300 * (0.5 ** 5 + 0.5 ** 4))
    ran = _device_order(md, CPU(1))
    recv = [n for n in ran if "_recv" in n]
    assert len(recv) == 1, ran
    assert ran.index(recv[0]) > max(ran.index(f"own{i}") for i in range(3)), ran
    assert ran.index(recv[0]) == ran.index("uses_far") - 1, ran          # received right before its reader


def _late_value_on_device_1(n=200):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, (n, n), name="x")
        with g.device("/cpu:0"):
            scale = ek.reduce_sum(ek.cos(x), name="scale")
        with g.device("/cpu:1"):
            big = ek.exp(x, name="big")
            s = ek.reduce_sum(x)
            for i in range(3):
                s = s + ek.reduce_sum(ek.sin(x * float(i + 2)))
            out = ek.reduce_sum(big * (s + scale), name="out")
    return g, x, out


def test_the_configured_schedule_applies_to_each_partition():
    g, x, out = _late_value_on_device_1()
    xv = np.random.default_rng(0).standard_normal((200, 200)) * 0.1
    results, orders = {}, {}
    for kind in ("creation", "alap"):
        with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, schedule=kind,
                                                         optimize=False)) as sess:
            md = gr.RunMetadata()
            results[kind] = sess.run(out, {x: xv}, options=TRACE, run_metadata=md)
        orders[kind] = [s.type for s in sorted((s for s in md.step_stats if s.device == CPU(1)),
                                               key=lambda s: s.start_us)]
    last_sin = {k: max(i for i, t in enumerate(o) if t == "Sin") for k, o in orders.items()}
    assert orders["creation"].index("Exp") < last_sin["creation"], orders["creation"]
    assert orders["alap"].index("Exp") > last_sin["alap"], orders["alap"]         # exp(x) made when read
    np.testing.assert_allclose(results["alap"], results["creation"], rtol=1e-12)


# ------------------------------------------------------------------ random multi-device programs: no deadlock
@st.composite
def _programs(draw):
    n = draw(st.integers(2, 12))
    prog = [(draw(st.sampled_from(("add", "mul", "sin", "sum"))), draw(st.integers(0, i)), draw(st.integers(0, i)),
             draw(st.integers(0, 2))) for i in range(n)]
    fetch = draw(st.lists(st.integers(1, n), min_size=1, max_size=3, unique=True))
    return prog, fetch


def _build(prog, fetch, placed: bool):
    g = gr.Graph()
    with g.as_default():
        vals = [gr.placeholder(ek.float64, [4], name="x")]
        for kind, j, k, dev in prog:
            with g.device(f"/cpu:{dev}" if placed else ""):
                p, q = vals[j], vals[k]
                y = {"add": lambda: p + q, "mul": lambda: p * q, "sin": lambda: ek.sin(p),
                     "sum": lambda: p * 0.0 + ek.reduce_sum(q)}[kind]()
            vals.append(y)
    return g, vals[0], [vals[i] for i in fetch]


@settings(deadline=None, max_examples=30)
@given(_programs(), st.sampled_from(SCHEDULES))
def test_every_schedule_on_three_devices_finishes_with_the_one_device_results(program, kind):
    prog, fetch = program
    xv = np.array([0.5, -1.0, 2.0, 0.25])
    g, x, fetches = _build(prog, fetch, False)
    with gr.Session(graph=g) as sess:
        want = sess.run(fetches, {x: xv})
    g, x, fetches = _build(prog, fetch, True)
    config = gr.SessionConfig(device_count={"CPU": 3}, schedule=kind, optimize=False)
    with gr.Session(graph=g, config=config) as sess:
        got = sess.run(fetches, {x: xv}, options=gr.RunOptions(timeout_in_ms=20_000))   # a deadlock raises
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
