"""Faults in distributed sessions (issue 16 item 5): dead tasks, deadlines, rollback, recovery policies.

Each test runs a step in which the ps bumps a variable, worker 0 runs a loop for about a second and
worker 1 waits for its result; the fault (a killed actor, a short deadline) strikes while worker 1 waits.
"""
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import DeadlineExceededError, FailedPreconditionError, UnavailableError
from tracing import Saver

from helpers import cluster_config

SLOW = 1_500_000        # loop iterations on worker 0: about a second or more
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


def test_a_task_dying_mid_step_fails_the_step_naming_it_and_rolls_back_survivors(ray_local):
    g, n = slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        assert sess.run(n["out"], {n["n"]: 10}) == 7.0
        assert sess.run(n["v"]) == 1.0
        timer = _kill_soon(sess, W1)
        with pytest.raises(UnavailableError, match="task:1"):
            sess.run(n["out"], {n["n"]: SLOW})
        timer.join()
        # the ps finished its part (the bump) before worker 1 died: rolled back, not half-updated
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
        assert v == 1.0               # the ps survived: its variable kept its value (the bump rolled back)
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


def test_a_step_past_its_deadline_raises_and_rolls_back(ray_local):
    g, n = slow_graph()
    with gr.Session("ray://local", graph=g, config=cluster_config()) as sess:
        sess.run(n["init"])
        with pytest.raises(DeadlineExceededError, match="timed out waiting"):
            sess.run(n["out"], {n["n"]: SLOW}, options=gr.RunOptions(timeout_in_ms=200))
        assert sess.run(n["v"]) == 0.0        # the ps's bump of the failed step was undone
        assert sess.run(n["out"], {n["n"]: 10}) == 7.0


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
