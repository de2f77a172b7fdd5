"""Faults in distributed sessions: dead tasks, deadlines, no rollback of a failed step, recovery policies.

Each test runs a step in which the ps bumps a variable, worker 0 runs a loop until the fault ends the step
and worker 1 waits for its result; the fault (a killed actor, a short deadline) strikes while worker 1 waits.
"""
import threading
import time

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import DeadlineExceededError, FailedPreconditionError, InvalidArgumentError, UnavailableError
from tracing import Saver

from helpers import cluster_config, counter_graph

# Loop iterations on worker 0: more than any fault test waits for.  The step must still be running when the
# fault strikes, and a counted loop now does 1.5M iterations in about 50 ms, so it is bounded only by the
# step's abort (a dead peer) or its deadline, which each test brings.
SLOW = 2**31 - 1
W1 = "/job:worker/replica:0/task:1"


def slow_graph():
    g = gr.Graph()
    with g.as_default():
        n = gr.placeholder(ek.int32, (), name="n")
        with gr.device("/job:ps/task:0"):
            v = ek.Variable(np.array(0.0, np.float32), name="v")
            bump = v.assign_add(ek.constant(1.0))
        with gr.device("/job:worker/task:1"):
            u = ek.Variable(np.array(5.0, np.float32), name="u")      # lives on worker 1
        with gr.device("/job:worker/task:0"), gr.control_dependencies([bump]):
            _, r = ek.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 1.0),
                                 (ek.constant(0), ek.constant(2.0)))
        with gr.device("/job:worker/task:1"):
            out = r + u.read_value()
            grow = u.assign_add(ek.constant(1.0))
        init = gr.global_variables_initializer()
    return g, dict(n=n, v=v, u=u, out=out, grow=grow, init=init)


def _kill_soon(sess, task, delay=0.4):
    ray = sess._ray
    timer = threading.Timer(delay, lambda: ray.kill(sess._actors[task], no_restart=True))
    timer.start()
    return timer


def test_a_task_dying_mid_step_fails_the_step_naming_it(ray_local):
    g, n = slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        assert sess.run(n["out"], {n["n"]: 10}) == 7.0
        assert sess.run(n["v"]) == 1.0
        timer = _kill_soon(sess, W1)
        began = time.monotonic()
        with pytest.raises(UnavailableError, match="task:1"):       # worker 0's loop would run for minutes:
            sess.run(n["out"], {n["n"]: 2**31 - 1}, options=gr.RunOptions(timeout_in_ms=120_000))
        assert time.monotonic() - began < 30.0        # the abort stopped it (it used to run to its end)
        timer.join()
        with pytest.raises(UnavailableError, match="task:1.*died.*task_recovery"):
            sess.run(n["v"])          # task_recovery="raise" (the default): the session cannot go on


def test_reinitialize_restarts_the_task_and_reruns_its_variables_initializers(ray_local):
    g, n = slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config(task_recovery="reinitialize")) as sess:
        sess.run(n["init"])
        sess.run(n["grow"])
        sess.run(n["out"], {n["n"]: 10})
        assert sess.run([n["v"], n["u"]]) == [1.0, 6.0]
        timer = _kill_soon(sess, W1)
        with pytest.raises(UnavailableError, match="task:1"):
            sess.run(n["out"], {n["n"]: SLOW})
        timer.join()
        v, u = sess.run([n["v"], n["u"]])
        assert v == 2.0               # the ps survived: its variable kept the failed step's bump (no rollback)
        assert u == 5.0               # worker 1 restarted: its variable was initialized again
        assert sess.run(n["out"], {n["n"]: 10}) == 7.0


def test_restore_brings_back_the_last_checkpoint_on_every_task(ray_local, tmp_path):
    g, n = slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config(task_recovery="restore")) as sess:
        sess.run(n["init"])
        sess.run(n["grow"])
        sess.run(n["out"], {n["n"]: 10})
        saver = Saver([n["v"], n["u"]])
        saver.save(sess, str(tmp_path / "ckpt"))          # v = 1, u = 6
        sess.run(n["grow"])
        sess.run(n["out"], {n["n"]: 10})                  # v = 2, u = 7
        timer = _kill_soon(sess, W1)
        with pytest.raises(UnavailableError):
            sess.run(n["out"], {n["n"]: SLOW})
        timer.join()
        assert sess.run([n["v"], n["u"]]) == [1.0, 6.0]


def test_restore_without_a_checkpoint_says_so(ray_local):
    g, n = slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config(task_recovery="restore")) as sess:
        sess.run(n["init"])
        timer = _kill_soon(sess, W1)
        with pytest.raises(UnavailableError):
            sess.run(n["out"], {n["n"]: SLOW})
        timer.join()
        with pytest.raises(FailedPreconditionError, match="no checkpoint was saved"):
            sess.run(n["v"])


def test_a_step_past_its_deadline_raises_and_keeps_its_writes(ray_local):
    g, n = slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        with pytest.raises(DeadlineExceededError, match="timed out waiting|deadline passed"):
            sess.run(n["out"], {n["n"]: SLOW}, options=gr.RunOptions(timeout_in_ms=200))
        assert sess.run(n["v"]) == 1.0        # the ps's bump of the failed step stays, as in TensorFlow
        assert sess.run(n["out"], {n["n"]: 10}) == 7.0


def test_a_busy_task_ends_its_step_at_the_deadline_and_is_not_declared_dead(ray_local):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        with gr.device("/job:worker/task:0"):       # compute-bound: no _Recv to time out in
            _, y = ek.while_loop(lambda i, a: i >= 0, lambda i, a: (i + 1, a * 1.0), (ek.constant(0), x))
            z = x + 1.0
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        assert sess.run(z, {x: 1.0}) == 2.0
        with pytest.raises(DeadlineExceededError):                              # registers y's partition
            sess.run(y, {x: 1.0}, options=gr.RunOptions(timeout_in_ms=1))
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="While loop: the step's deadline passed.*task:0"):
            sess.run(y, {x: 1.0}, options=gr.RunOptions(timeout_in_ms=300))
        assert time.monotonic() - began < 8.0          # it was over 10 s: two 5 s graces
        assert sess.run(z, {x: 1.0}) == 2.0             # alive: task_recovery="raise" would refuse a dead one


def test_saver_checkpoints_variables_of_every_task_and_a_local_session_reads_them(ray_local, tmp_path):
    g, n = slow_graph()
    path = str(tmp_path / "ckpt")
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        sess.run([n["grow"], n["out"]], {n["n"]: 3})
        Saver().save(sess, path)
        sess.run(n["grow"])
        Saver().restore(sess, path)
        assert sess.run([n["v"], n["u"]]) == [1.0, 6.0]
    with gr.Session(graph=g, config=gr.SessionConfig(allow_soft_placement=True)) as local:
        Saver().restore(local, path)
        assert local.run([n["v"], n["u"]]) == [1.0, 6.0]


def test_a_failing_step_loses_no_write_of_a_concurrent_step(ray_local):
    # step F spins on the ps until step S's assign_add lands, bumps v itself, then fails on worker 1:
    # S was acknowledged, so its write must survive F's failure (and F's own write stays: no rollback)
    g, n = counter_graph(spin_until=11)
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        failure = []

        def failing_step():
            try:
                sess.run(n["q"], {n["d"]: 0}, options=gr.RunOptions(timeout_in_ms=20_000))
            except Exception as e:      # noqa: BLE001 - checked below
                failure.append(e)

        t = threading.Thread(target=failing_step)
        t.start()
        time.sleep(0.05)                # F is (most likely) spinning on the ps by now
        assert sess.run(n["bump"]) == 11     # S: acknowledged
        t.join(30)
        assert not t.is_alive()
        assert len(failure) == 1 and isinstance(failure[0], InvalidArgumentError), failure
        assert sess.run(n["v"]) == 12


class _AbortsFirst:
    """The `ray` module, except that `wait` hands out a step's answers with the peers' aborts first (an order
    Ray may give: the failing task aborts its peers before it answers itself)."""

    def __init__(self, ray):
        self._ray = ray

    def __getattr__(self, name):
        return getattr(self._ray, name)

    def get(self, refs, timeout=None):
        if isinstance(refs, list):
            raise self._ray.exceptions.GetTimeoutError("the careful path, please")
        return self._ray.get(refs, timeout=timeout)

    def wait(self, refs, num_returns=1, timeout=None):
        ready, rest = self._ray.wait(refs, num_returns=len(refs), timeout=timeout)
        ready.sort(key=lambda r: self._ray.get(r)[1:2] != ("AbortedError",))
        return ready[:num_returns], ready[num_returns:] + rest


def test_the_failing_ops_error_wins_over_its_peers_aborts(ray_local):
    g = gr.Graph()
    with g.as_default():
        d = gr.placeholder(ek.int32, (), name="d")
        with gr.device("/job:worker/task:0"):
            q = ek.constant(7) // d                  # fails when d == 0 ...
        with gr.device(W1):
            out = q + 1                               # ... while worker 1 waits for q: it is aborted
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        assert sess.run(out, {d: 7}) == 2
        real, sess._ray = sess._ray, _AbortsFirst(sess._ray)
        try:
            with pytest.raises(InvalidArgumentError, match="Integer division by zero.*task:0") as info:
                sess.run(out, {d: 0})
        finally:
            sess._ray = real
        assert info.value.op_name == q.op.name
