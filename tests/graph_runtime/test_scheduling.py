"""SessionConfig(schedule=...): creation / alap / memory orders give the same results and effect order; peaks."""
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import eager as ek
import graph_runtime as gr
from eager import buffers
from graph_runtime.compiler import prune
from graph_runtime.scheduling import estimated_peak

SCHEDULES = ("creation", "alap", "memory")


def _late_big_graph(n=500):
    """A large value made early (exp(x)) that only the last op reads; a chain of large temporaries before."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [n, n], name="x")
        big = ek.exp(x)
        s = ek.reduce_sum(x)
        for i in range(4):
            s = s + ek.reduce_sum(ek.sin(x * float(i + 2)))
        out = ek.reduce_sum(big) * s
    return g, x, out


def _peak(sess, fetch, feed) -> int:
    sess.run(fetch, feed)            # compile outside the measurement
    # recycled buffers (eager.buffers) are allocated once, in an earlier run: tracemalloc would not see them
    recycling = buffers.set_enabled(False)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        sess.run(fetch, feed)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
        buffers.set_enabled(recycling)


def test_alap_and_memory_lower_the_peak_with_the_same_result():
    g, x, out = _late_big_graph()
    xv = np.random.default_rng(0).standard_normal((500, 500))
    results, peaks = {}, {}
    for kind in SCHEDULES:
        sess = gr.Session(graph=g, config=gr.SessionConfig(schedule=kind))
        results[kind] = sess.run(out, {x: xv})
        peaks[kind] = _peak(sess, out, {x: xv})
    expected = np.exp(xv).sum() * (xv.sum() + sum(np.sin(xv * (i + 2)).sum() for i in range(4)))
    for kind in SCHEDULES:
        np.testing.assert_allclose(results[kind], expected, rtol=1e-9)
    one = 500 * 500 * 8
    # creation order keeps exp(x) alive through the chain: two large values at once; the others one
    assert peaks["creation"] >= 2 * one
    assert peaks["alap"] < 1.5 * one and peaks["memory"] < 1.5 * one


def test_schedules_keep_effect_order_and_control_deps():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [], name="a")
        v = ek.Variable(1.0, name="v")
        w1 = v.assign(a * 3.0, name="w1")
        r1 = v.read_value() + 0.0                 # reads after w1
        w2 = v.assign_add(10.0, name="w2")
        big = ek.ones([100, 100]) * a            # independent, movable
        with g.control_dependencies([w2]):
            r2 = v.read_value() * 1.0
        total = ek.reduce_sum(big) + r1 + r2
        init = gr.global_variables_initializer()
    for kind in SCHEDULES:
        with gr.Session(graph=g, config=gr.SessionConfig(schedule=kind)) as sess:
            sess.run(init)
            md = gr.RunMetadata()
            got = sess.run([total, w1.op], {a: 2.0}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE),
                           run_metadata=md)
            assert got[0] == pytest.approx(100 * 100 * 2 + 6 + 16), kind
            names = [s.name for s in md.step_stats]
            effects = [n for n in names if n in (w1.op.name, w2.op.name)]
            assert effects == [w1.op.name, w2.op.name], (kind, names)


def test_unknown_schedule_is_refused():
    with pytest.raises(ValueError, match="schedule must be one of"):
        gr.SessionConfig(schedule="fastest")


# ------------------------------------------------------------------ random graphs
_OPS = ("add", "mul", "sub", "tanh", "sum_like", "assign_add", "read")


@st.composite
def _programs(draw):
    n = draw(st.integers(3, 14))
    prog = []
    for i in range(n):
        kind = draw(st.sampled_from(_OPS))
        j = draw(st.integers(0, i))          # operands among earlier values (0 = the feed)
        k = draw(st.integers(0, i))
        prog.append((kind, j, k))
    fetch = draw(st.lists(st.integers(0, n), min_size=1, max_size=3, unique=True))
    return prog, fetch


def _build(prog, fetch):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [3], name="x")
        v = ek.Variable(np.zeros(3), name="v")
        vals = [x]
        effects = []
        for idx, (kind, j, k) in enumerate(prog):
            p, q = vals[j], vals[k]
            if kind == "add":
                y = p + q
            elif kind == "mul":
                y = p * q
            elif kind == "sub":
                y = p - q
            elif kind == "tanh":
                y = ek.tanh(p)
            elif kind == "sum_like":
                y = p * 0.0 + ek.reduce_sum(q)
            elif kind == "assign_add":
                y = v.assign_add(ek.tanh(p))
                effects.append(y.op.name)
            else:
                r = v.read_value()
                effects.append(r.op.name)
                y = r * 1.0
            vals.append(y)
        fetches = [vals[i] for i in fetch]
        init = gr.global_variables_initializer()
    return g, x, v, fetches, init, effects


@settings(deadline=None, max_examples=40)
@given(_programs())
def test_every_schedule_same_results_and_stateful_order(program):
    prog, fetch = program
    xv = np.array([0.5, -1.0, 2.0])
    ref = None
    for kind in SCHEDULES:
        g, x, v, fetches, init, effects = _build(prog, fetch)
        with gr.Session(graph=g, config=gr.SessionConfig(schedule=kind)) as sess:
            sess.run(init)
            md = gr.RunMetadata()
            out = sess.run(fetches, {x: xv}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE),
                           run_metadata=md)
            state = v.numpy().copy()
        ran = [s.name for s in md.step_stats]
        positions = [effects.index(n) for n in ran if n in effects]
        assert positions == sorted(positions), (kind, ran)
        if ref is None:
            ref = (out, state)
        else:
            for a, b in zip(out, ref[0]):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(state, ref[1])


# graphs where the greedy live-bytes order loses: to "alap" (a big value read twice, its readers started
# before either frees it), to "creation" (two sums of the same pair), to both (branches all started first)
def _alap_wins(x):
    e = ek.exp(x * 0.1)
    t = ek.sin(x)
    return ek.add_n([ek.reduce_sum(x), ek.reduce_sum(ek.sin(e)), ek.reduce_sum(ek.sin(e)), ek.reduce_sum(t),
                     ek.reduce_sum(ek.exp(t * 0.5))])


def _creation_wins(x):
    a = ek.sin(x)
    e = ek.exp(x * 0.1)
    p, q = a + e, e + a
    e2 = ek.exp(x * 0.2)
    return ek.reduce_sum((p + q) + e2)


def _branches(x):
    return ek.add_n([ek.reduce_sum(ek.sin(a) + ek.cos(a)) for a in (ek.exp(x * (0.1 * k)) for k in range(1, 5))])


@pytest.mark.parametrize("build", [_alap_wins, _creation_wins, _branches])
def test_the_memory_schedule_never_peaks_higher_than_alap_or_creation(build):
    n = 200
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [n, n], name="x")
        out = build(x)
    xv = np.random.default_rng(0).standard_normal((n, n)) * 0.1
    peaks, results = {}, {}
    for kind in SCHEDULES:
        sess = gr.Session(graph=g, config=gr.SessionConfig(schedule=kind, optimize=False))
        results[kind] = sess.run(out, {x: xv})
        peaks[kind] = _peak(sess, out, {x: xv}) / (n * n * 8)     # in buffers
    # the greedy order alone peaked at 3, 5 and 6 buffers on these graphs, where the best takes 2, 4 and 3
    assert peaks["memory"] <= min(peaks["alap"], peaks["creation"]) + 0.25, peaks
    for kind in SCHEDULES:
        np.testing.assert_allclose(results[kind], results["creation"], rtol=1e-12)


# ------------------------------------------------------------------ alap from the sinks; "memory" <= both others
def _late_value_built(big_first: bool, n=300):
    """The late-value computation, with exp(x) built first or last: the same computation either way."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [n, n], name="x")
        big = ek.exp(x) if big_first else None
        s = ek.reduce_sum(x)
        for i in range(4):
            s = s + ek.reduce_sum(ek.sin(x * float(i + 2)))
        big = ek.exp(x) if big is None else big
        out = ek.reduce_sum(big * s)          # exp(x) itself is read by the last ops
    return g, x, out, big


def _estimated(x, out, kind) -> int:
    ops = prune([x], [out], [])
    return estimated_peak(ops, {id(x)}, [out], kind)


def test_alap_does_not_depend_on_build_order_and_runs_a_value_read_last_late():
    one = 300 * 300 * 8
    xv = np.random.default_rng(1).standard_normal((300, 300)) * 0.1
    estimates, peaks, results = [], [], []
    for big_first in (True, False):
        g, x, out, big = _late_value_built(big_first)
        estimates.append(_estimated(x, out, "alap"))
        sess = gr.Session(graph=g, config=gr.SessionConfig(schedule="alap", optimize=False))
        md = gr.RunMetadata()
        results.append(sess.run(out, {x: xv}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE),
                                run_metadata=md))
        types = [s.type for s in md.step_stats]
        assert types.index("Exp") > max(i for i, t in enumerate(types) if t == "Sin"), types
        peaks.append(_peak(sess, out, {x: xv}))
        sess.close()
    assert estimates[0] == estimates[1] < 2.1 * one      # exp(x) never lives next to the temporaries
    assert abs(peaks[0] - peaks[1]) < 0.25 * one, peaks
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def _creation_beats_alap(x):
    """exp(x) read early by a sum and late by a chain: creation order sums it first and frees it with the
    chain's first op; a backwards schedule runs the sum (small result) last and keeps exp(x) alive."""
    e = ek.exp(x)
    a = ek.reduce_sum(e)
    b = ek.sin(e)
    for i in range(3):
        b = ek.cos(b * float(i + 2))
    return ek.reduce_sum(b) + a


def _alap_beats_creation(x):
    big = ek.exp(x)
    s = ek.reduce_sum(x)
    for i in range(4):
        s = s + ek.reduce_sum(ek.sin(x * float(i + 2)))
    return ek.reduce_sum(big) * s


@pytest.mark.parametrize("build,winner", [(_creation_beats_alap, "creation"), (_alap_beats_creation, "alap")])
def test_the_memory_schedule_is_never_above_the_winner_of_alap_and_creation(build, winner):
    n = 200
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [n, n], name="x")
        out = build(x)
    est = {kind: _estimated(x, out, kind) for kind in SCHEDULES}
    loser = "alap" if winner == "creation" else "creation"
    assert est[winner] < est[loser], est                  # each graph has the winner it was built for
    assert est["memory"] <= est[winner], est
    xv = np.random.default_rng(0).standard_normal((n, n)) * 0.1
    peaks = {}
    for kind in SCHEDULES:
        sess = gr.Session(graph=g, config=gr.SessionConfig(schedule=kind, optimize=False))
        peaks[kind] = _peak(sess, out, {x: xv}) / (n * n * 8)
        sess.close()
    assert peaks["memory"] <= peaks[winner] + 0.25 < peaks[loser], peaks
