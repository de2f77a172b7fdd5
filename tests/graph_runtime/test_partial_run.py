"""Session.partial_run_setup / partial_run: incremental execution of one plan, TF's errors, state, handles."""
import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError


def _abc():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [], name="a")
        b = gr.placeholder(ek.float32, [], name="b")
        c = gr.placeholder(ek.float32, [], name="c")
        r1 = a + b
        r2 = r1 * c
    return g, a, b, c, r1, r2


def test_partial_run_tf_example_and_same_as_run():
    g, a, b, c, r1, r2 = _abc()
    with gr.Session(graph=g) as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
        assert sess.partial_run(h, r2, feed_dict={c: 2}) == 6.0
        assert h.released                                  # every feed fed, every fetch fetched: done
        assert sess.run(r2, {a: 1, b: 2, c: 2}) == 6.0
        # names work as fetches and feed keys; list fetches come back as a list
        h = sess.partial_run_setup(["add:0", "mul:0"], ["a:0", "b:0", "c:0"])
        assert sess.partial_run(h, ["add:0", "mul:0"], {"a:0": 1, "b:0": 1, "c:0": 4}) == [2.0, 8.0]


def test_partial_run_errors_are_tf_invalid_argument():
    g, a, b, c, r1, r2 = _abc()
    with g.as_default():
        d = gr.placeholder(ek.float32, [], name="d")
        r3 = a - b
    sess = gr.Session(graph=g)
    h = sess.partial_run_setup([r1, r2], [a, b, c])
    with pytest.raises(InvalidArgumentError, match=r"^The feed d:0 was not specified in partial_run_setup.$"):
        sess.partial_run(h, r1, feed_dict={a: 1, b: 2, d: 3})
    with pytest.raises(InvalidArgumentError, match=r"^The fetch sub:0 was not specified in partial_run_setup.$"):
        sess.partial_run(h, r3, feed_dict={a: 1, b: 2})
    with pytest.raises(InvalidArgumentError, match=r"^Fetch c:0 can't be computed from the feeds that have been "
                                                   r"fed so far. \(needed by the fetch mul:0\)$"):
        sess.partial_run(h, r2, feed_dict={a: 1, b: 2})
    # rejected requests changed nothing: the same feeds are still accepted
    assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
    with pytest.raises(InvalidArgumentError, match=r"^The feed a:0 has already been fed.$"):
        sess.partial_run(h, r2, feed_dict={a: 1, c: 3})
    with pytest.raises(InvalidArgumentError, match=r"^The fetch add:0 has already been fetched.$"):
        sess.partial_run(h, r1, feed_dict={c: 3})
    assert sess.partial_run(h, r2, feed_dict={c: 3}) == 9.0
    # finished: the handle is gone (TF deletes the run state)
    with pytest.raises(InvalidArgumentError, match=r"^Must run 'setup' before performing partial runs!$"):
        sess.partial_run(h, r2)
    # not a handle, or another session's handle
    with pytest.raises(InvalidArgumentError, match="Must run 'setup'"):
        sess.partial_run("handle", r1)
    other = gr.Session(graph=g)
    h2 = other.partial_run_setup([r1], [a, b])
    with pytest.raises(InvalidArgumentError, match="Must run 'setup'"):
        sess.partial_run(h2, r1, {a: 1, b: 1})
    with pytest.raises(InvalidArgumentError, match="listed more than once"):
        sess.partial_run_setup([r1, r1], [a, b])


def test_each_call_runs_only_the_missing_ancestors_and_stateful_ops_once():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [], name="a")
        b = gr.placeholder(ek.float32, [], name="b")
        v = ek.Variable(0.0, name="counter")
        bump = v.assign_add(1.0)                 # stateful, needed by both fetches
        with g.control_dependencies([bump]):
            x = a * 2.0
        y = x + b
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        h = sess.partial_run_setup([x, y], [a, b])
        assert sess.partial_run(h, x, {a: 3}) == 6.0
        assert float(v.numpy()) == 1.0
        assert sess.partial_run(h, y, {b: 1}) == 7.0    # x and the assign are not run again
        assert float(v.numpy()) == 1.0
        # two independent handles each run the assign once
        h1 = sess.partial_run_setup([x, y], [a, b])
        h2 = sess.partial_run_setup([x, y], [a, b])
        assert sess.partial_run(h1, x, {a: 1}) == 2.0
        assert sess.partial_run(h2, x, {a: 5}) == 10.0
        assert sess.partial_run(h1, y, {b: 0}) == 2.0
        assert sess.partial_run(h2, y, {b: 0}) == 10.0
        assert float(v.numpy()) == 3.0


def test_op_targets_and_variables_as_fetches():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [], name="a")
        v = ek.Variable(1.0, name="v")
        upd = v.assign_add(a, name="upd")
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        h = sess.partial_run_setup([upd.op, v], [a])
        assert sess.partial_run(h, upd.op, {a: 2.0}) is None
        assert sess.partial_run(h, v) == 3.0
        assert float(v.numpy()) == 3.0


def test_a_failed_step_ends_the_partial_run():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [None], name="a")
        b = gr.placeholder(ek.float32, [None], name="b")
        s = a + b
        t = s * 2.0
    sess = gr.Session(graph=g)
    h = sess.partial_run_setup([s, t], [a, b])
    with pytest.raises(InvalidArgumentError, match="add"):
        sess.partial_run(h, s, {a: np.ones(2), b: np.ones(3)})
    with pytest.raises(InvalidArgumentError, match="Must run 'setup'"):
        sess.partial_run(h, t)
    # a bad feed value (wrong shape) also names the feed
    h = sess.partial_run_setup([s, t], [a, b])
    with pytest.raises(InvalidArgumentError, match="shape"):
        sess.partial_run(h, s, {a: np.ones((2, 2)), b: np.ones(2)})


def test_abandoned_handles_are_freed_and_close_releases():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float64, [None], name="a")
        b = gr.placeholder(ek.float64, [None], name="b")
        y = (a * 2.0) + b
    sess = gr.Session(graph=g)
    big = np.ones(100_000)
    h = sess.partial_run_setup([y], [a, b])
    sess.partial_run_setup([y], [a, b])          # dropped at once
    gc.collect()
    assert len(sess._partial_runs) == 1
    with pytest.raises(InvalidArgumentError, match="can't be computed"):
        sess.partial_run(h, y, {a: big})
    hr = weakref.ref(h)
    del h
    gc.collect()
    assert hr() is None and len(sess._partial_runs) == 0
    h = sess.partial_run_setup([y], [a, b])
    sess.close()
    assert h.released
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.partial_run(h, y, {a: big, b: big})
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.partial_run_setup([y], [a, b])


def test_explicit_release_frees_the_values():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float64, [None], name="a")
        b = gr.placeholder(ek.float64, [None], name="b")
        x = ek.exp(a)
        y = x + b
    sess = gr.Session(graph=g)
    h = sess.partial_run_setup([x, y], [a, b])
    fed = np.zeros(10)
    held = weakref.ref(fed)
    out = sess.partial_run(h, x, {a: fed})
    np.testing.assert_array_equal(out, np.ones(10))
    del fed
    gc.collect()
    assert held() is not None              # the handle keeps what it was fed
    h.release()
    gc.collect()
    assert held() is None
    with pytest.raises(InvalidArgumentError, match="Must run 'setup'"):
        sess.partial_run(h, y, {b: np.zeros(10)})


def test_one_handle_from_many_threads_runs_each_step_once():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [], name="a")
        v = ek.Variable(0.0, name="n")
        bump = v.assign_add(1.0)
        with g.control_dependencies([bump]):
            outs = [a + float(i) for i in range(8)]
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        h = sess.partial_run_setup(outs, [a])
        sess.partial_run(h, [], {a: 1.0})
        results, errors = {}, []

        def work(i):
            try:
                results[i] = sess.partial_run(h, outs[i])
            except Exception as e:   # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert results == {i: 1.0 + i for i in range(8)}
        assert float(v.numpy()) == 1.0


# ------------------------------------------------------------------ random programs: 3 devices == 1 device
@st.composite
def _placed_programs(draw):
    n = draw(st.integers(2, 10))
    prog = [(draw(st.sampled_from(("add", "mul", "sin", "bump"))), draw(st.integers(0, i + 1)),
             draw(st.integers(0, i + 1)), draw(st.integers(0, 2))) for i in range(n)]
    fetches = draw(st.lists(st.integers(2, n + 1), min_size=2, max_size=4, unique=True))
    split = draw(st.integers(1, len(fetches) - 1))
    return prog, fetches, split


def _placed_program(prog, fetch_ids, devices: bool):
    """Values 0 and 1 are the feeds x and y; `bump` adds its operand to a variable (stateful, once)."""
    g = gr.Graph()
    with g.as_default():
        vals = [gr.placeholder(ek.float64, [3], name="x"), gr.placeholder(ek.float64, [3], name="y")]
        with g.device("/cpu:0"):
            v = ek.Variable(np.zeros(3), name="v")
        for kind, j, k, dev in prog:
            p, q = vals[j], vals[k]
            with g.device(f"/cpu:{dev}" if devices else ""):
                vals.append({"add": lambda: p + q, "mul": lambda: p * q, "sin": lambda: ek.sin(p),
                             "bump": lambda: v.assign_add(p)}[kind]())
        init = gr.global_variables_initializer()
    return g, vals[0], vals[1], [vals[i] for i in fetch_ids], v, init


def _partial_results(program, devices: bool) -> list:
    prog, fetch_ids, split = program
    g, x, y, fetches, v, init = _placed_program(prog, fetch_ids, devices)
    config = gr.SessionConfig(device_count={"CPU": 3} if devices else {"CPU": 1}, allow_soft_placement=True)
    out = []
    with gr.Session(graph=g, config=config) as sess:
        sess.run(init)
        h = sess.partial_run_setup(fetches, [x, y])
        for part, feed in ((fetches[:split], {x: np.array([0.5, -1.0, 2.0])}),
                           (fetches[split:], {y: np.array([1.5, 0.25, -3.0])})):
            try:
                out.append(sess.partial_run(h, part, feed))
            except InvalidArgumentError as e:          # a fetch needing y before it is fed: the same error
                out.append(str(e))
                break
        out.append(sess.run(v))
    return out


@settings(deadline=None, max_examples=25)
@given(_placed_programs())
# two fetches in one call both need the unfed feed: the error named whichever the partitions reached first
@example(program=([("add", 0, 1, 1), ("add", 2, 0, 1), ("add", 0, 0, 0), ("add", 0, 0, 0)], [2, 3, 4], 2))
def test_partial_runs_on_three_devices_give_the_one_device_results_errors_and_state(program):
    one, three = _partial_results(program, False), _partial_results(program, True)
    assert len(one) == len(three)
    for a, b in zip(one, three):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_a_fetch_needing_only_the_first_feed_is_not_fused_with_one_needing_the_second():
    # x + (x + x) and y + (x + x) form one fusible group: fused, the first fetch waited for y
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [3], name="x")
        y = gr.placeholder(ek.float64, [3], name="y")
        twice = x + x
        first, second = x + twice, y + twice
    xv, yv = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.5])
    with gr.Session(graph=g) as sess:
        h = sess.partial_run_setup([first, second], [x, y])
        np.testing.assert_array_equal(sess.partial_run(h, first, {x: xv}), 3 * xv)
        np.testing.assert_array_equal(sess.partial_run(h, second, {y: yv}), yv + 2 * xv)
