"""Steps over direct links (graph_runtime/distributed/links.py): no actor call from the driver per step,
the results of a local session, the errors, deadlines and dead-task detection of steps by actor calls, and
the reason when a step goes by actor calls instead."""
import socket
import threading
import time
from multiprocessing.connection import AuthenticationError, Client

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import DeadlineExceededError, InvalidArgumentError, UnavailableError

from helpers import cluster_config, counter_graph, local_config, mlp_graph

ray = pytest.importorskip("ray")     # the optional [distributed] extra

from graph_runtime.distributed import links  # noqa: E402

W1 = "/job:worker/replica:0/task:1"


@pytest.fixture
def actor_calls(monkeypatch):
    """The number of actor method calls this process (the driver) made so far."""
    count = [0]
    remote = ray.actor.ActorMethod.remote

    def counting(self, *args, **kwargs):
        count[0] += 1
        return remote(self, *args, **kwargs)

    monkeypatch.setattr(ray.actor.ActorMethod, "remote", counting)
    return lambda: count[0]


def _route(sess, name):
    return next(r for label, r in sess.step_routes() if name in label)


def test_steps_make_no_actor_call_and_match_a_local_session(ray_local, actor_calls):
    rng = np.random.default_rng(1)
    xv, tv = rng.normal(size=(6, 5)).astype(np.float32), rng.normal(size=(6, 3)).astype(np.float32)
    results = {}
    for mode in ("local", "cluster"):
        g, n = mlp_graph()
        target, config = ("", local_config()) if mode == "local" else ("ray://local", cluster_config())
        with gr.Session(target, graph=g, config=config) as sess:
            sess.run(n["init"])
            step = sess.make_callable([n["loss"], n["train"]], [n["x"], n["t"]])
            losses = [step(xv, tv)[0]]                # registers the partitions (actor calls)
            before = actor_calls()
            losses += [step(xv, tv)[0] for _ in range(4)]
            if mode == "cluster":
                assert actor_calls() == before        # by actor calls: one per task and step
                assert _route(sess, n["loss"].name) == "direct links"
            results[mode] = (losses, sess.run([n["w1"], n["w2"]]))
    np.testing.assert_allclose(results["local"][0], results["cluster"][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(results["local"][1], results["cluster"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    fetched = results["cluster"][1][0]
    fetched += 1.0                                    # fetched arrays are the caller's, as in one process


def test_an_op_error_raises_as_by_actor_calls_and_the_links_stay(ray_local):
    g, n = counter_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        assert sess.run(n["q"], {n["d"]: 1}) == 11
        with pytest.raises(InvalidArgumentError, match=r"division by zero.*on task /job:worker/replica:0/task:1"):
            sess.run(n["q"], {n["d"]: 0})
        assert sess.run(n["v"]) == 12          # the failed step's write stays, as in TensorFlow
        assert sess.run(n["q"], {n["d"]: 1}) == 13
        assert _route(sess, n["q"].name) == "direct links"


def _slow_graph():
    g = gr.Graph()
    with g.as_default():
        k = gr.placeholder(ek.int32, (), name="k")
        with gr.device("/job:ps/task:0"):
            v = ek.Variable(np.array(0.0, np.float32), name="v")
            bump = v.assign_add(ek.constant(1.0))
        with gr.device("/job:worker/task:0"):
            _, r = ek.while_loop(lambda i, a: i < k, lambda i, a: (i + 1, a * 1.0), (ek.constant(0), bump))
        with gr.device("/job:worker/task:1"):
            out = r + 1.0
        init = gr.global_variables_initializer()
    return g, dict(k=k, v=v, out=out, init=init)


def test_a_step_past_its_deadline_raises_and_its_late_results_are_skipped(ray_local):
    g, n = _slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        assert sess.run(n["out"], {n["k"]: 3}) == 2.0
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="deadline passed.*task:0"):
            sess.run(n["out"], {n["k"]: 50_000_000}, options=gr.RunOptions(timeout_in_ms=300))
        assert time.monotonic() - began < 5.0
        for expected in (4.0, 5.0):             # each step bumps v, the failed one too
            assert sess.run(n["out"], {n["k"]: 3}) == expected
        assert _route(sess, n["out"].name) == "direct links"


def test_a_task_dying_mid_step_fails_it_naming_the_task_and_recovery_opens_new_links(ray_local):
    g, n = _slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config(task_recovery="reinitialize")) as sess:
        sess.run(n["init"])
        assert sess.run(n["out"], {n["k"]: 3}) == 2.0
        dying = sess._actors[W1]
        timer = threading.Timer(0.4, lambda: ray_local.kill(dying, no_restart=True))
        timer.start()
        with pytest.raises(UnavailableError, match="task:1"):
            sess.run(n["out"], {n["k"]: 3_000_000})
        timer.join()
        assert sess.run(n["out"], {n["k"]: 3}) == 4.0      # worker 1 restarted; the ps kept v
        assert _route(sess, n["out"].name) == "direct links"


def test_steps_that_go_by_actor_calls_say_why(ray_local):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.int32, (3,), name="x")
        with gr.device("/job:worker/task:1"):
            y = x * 2
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: range(3)}), [0, 2, 4])     # a range is not plain data
        assert "not plain data" in _route(sess, y.name)
        np.testing.assert_array_equal(sess.run(y, {x: [1, 2, 3]}), [2, 4, 6])
        assert _route(sess, y.name) == "direct links"
    g, n = counter_graph()
    links.use_direct_links(False)
    try:
        with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
            sess.run(n["init"])
            assert sess.run(n["q"], {n["d"]: 1}) == 11
            assert "off" in _route(sess, n["q"].name)
    finally:
        links.use_direct_links(True)
    with pytest.raises(ValueError, match="True or False"):
        links.use_direct_links(1)


def test_a_connection_without_the_sessions_key_is_refused(ray_local):
    g, n = counter_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        conn = sess._links.conns[W1]
        peer = socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM)
        address = peer.getpeername()
        peer.close()
        with pytest.raises(AuthenticationError):
            Client(address, authkey=b"not the session's key")
        assert sess.run(n["q"], {n["d"]: 1}) == 11        # the task still serves the session
