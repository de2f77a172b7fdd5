"""Partial runs on a `ray://` session follow the local rules: values are fed when they are ready, a fetch that
needs a feed not fed yet is refused with TensorFlow's message, every op runs at most once per partial run (a
stateful one too), a failed call ends the partial run; the results equal a local Session's, call by call.
"""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError

from helpers import cluster_config, local_config


def cluster_graph():
    """r1 = a + b on worker 0, r2 = r1 * c on worker 1; x (worker 1) first bumps a counter on the ps."""
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [], name="a")
        b = gr.placeholder(ek.float32, [], name="b")
        c = gr.placeholder(ek.float32, [], name="c")
        with gr.device("/job:ps/task:0"):
            v = ek.Variable(0.0, name="counter")
        with gr.device("/job:worker/task:0"):
            r1 = ek.add(a, b, name="r1")
        with gr.device("/job:worker/task:1"):
            r2 = ek.multiply(r1, c, name="r2")
            bump = v.assign_add(1.0)
            with g.control_dependencies([bump]):
                x = ek.multiply(a, 2.0, name="x")
            y = ek.add(x, r2, name="y")
        init = gr.global_variables_initializer()
    return g, dict(a=a, b=b, c=c, v=v, r1=r1, r2=r2, x=x, y=y, bump=bump, init=init)


def _outcome(call):
    try:
        out = call()
    except InvalidArgumentError as e:
        return ("error", str(e))
    return ("ok", None if out is None else np.asarray(out).tolist())


def scenario(sess, n) -> list:
    """One partial run, call by call, with the rules' errors along the way: what each call gave."""
    a, b, c = n["a"], n["b"], n["c"]
    sess.run(n["init"])
    h = sess.partial_run_setup([n["r1"], n["r2"], n["x"], n["y"], n["bump"].op, "b:0"], [a, b, c])
    seen = [_outcome(lambda: sess.partial_run(h, n["r2"], {a: 1.0, b: 2.0}))]    # c is not fed: refused
    seen.append(_outcome(lambda: sess.partial_run(h, n["r1"], {a: 1.0, b: 2.0})))
    seen.append(_outcome(lambda: sess.partial_run(h, n["r1"], {c: 3.0})))         # fetched already
    seen.append(_outcome(lambda: sess.partial_run(h, n["x"], {a: 5.0})))          # fed already
    seen.append(_outcome(lambda: sess.partial_run(h, [n["x"], "b:0"])))           # the bump runs: counter 1
    seen.append(_outcome(lambda: sess.partial_run(h, n["bump"].op)))              # ... and never again
    seen.append(_outcome(lambda: sess.partial_run(h, {"r2": n["r2"], "y": n["y"]}, {c: 3.0})))
    seen.append(("released", h.released))
    seen.append(("counter", float(sess.run(n["v"]))))
    seen.append(_outcome(lambda: sess.partial_run(h, n["r2"])))                  # done: the handle is gone
    return seen


def test_a_partial_run_on_the_cluster_matches_a_local_one_call_by_call(ray_local):
    runs = {}
    for target, config in (("", local_config()), ("ray://local", cluster_config())):
        g, n = cluster_graph()
        with gr.Session(target, graph=g, config=config) as sess:
            runs[target] = scenario(sess, n)
    assert runs["ray://local"] == runs[""]
    assert runs[""][0][0] == "error" and "can't be computed" in runs[""][0][1]
    assert runs[""][4] == ("ok", [2.0, 2.0]) and runs[""][8] == ("counter", 1.0)
    assert runs[""][-1] == ("error", "Must run 'setup' before performing partial runs!")


def test_a_failed_call_ends_the_partial_run_and_handles_are_independent(ray_local):
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [None], name="a")
        b = gr.placeholder(ek.float32, [None], name="b")
        with gr.device("/job:worker/task:0"):
            s = a * 1.0
        with gr.device("/job:worker/task:1"):
            t = s + b
            u = t * 2.0
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        h = sess.partial_run_setup([s, t, u], [a, b])
        other = sess.partial_run_setup([s, t, u], [a, b])
        np.testing.assert_array_equal(sess.partial_run(h, s, {a: np.ones(2)}), [1, 1])
        with pytest.raises(InvalidArgumentError, match="add"):          # shapes (2,) and (3,): the op fails
            sess.partial_run(h, t, {b: np.ones(3)})
        with pytest.raises(InvalidArgumentError, match="Must run 'setup'"):
            sess.partial_run(h, u)
        np.testing.assert_array_equal(sess.partial_run(other, [s, t, u], {a: np.ones(2), b: np.ones(2)}),
                                      [[1, 1], [2, 2], [4, 4]])
        assert other.released
        kept = sess.partial_run_setup([u], [a, b])
    assert kept.released                                  # the session's close released it


def test_a_fetch_on_the_cluster_does_not_wait_for_a_feed_only_its_fused_twin_reads(ray_local):
    # x + (x + x) and y + (x + x) form one fusible group: fused, the first fetch waited for y
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [3], name="x")
        y = gr.placeholder(ek.float64, [3], name="y")
        with gr.device("/job:worker/task:0"):
            twice = x + x
            first, second = x + twice, y + twice
    xv, yv = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.5, 0.5])
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        h = sess.partial_run_setup([first, second], [x, y])
        np.testing.assert_array_equal(sess.partial_run(h, first, {x: xv}), 3 * xv)
        np.testing.assert_array_equal(sess.partial_run(h, second, {y: yv}), yv + 2 * xv)
