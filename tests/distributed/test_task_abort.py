"""A task's running loop ends when its step is aborted (a peer failed or died, the session closed), in process
and without Ray: the `TaskServer` a Ray actor wraps, driven directly.

Before, a While on a task ran on until it finished or met the step's deadline, so the master's answer (and
the task, for the next step) waited for a result nobody would take.
"""
import threading
import time

import numpy as np

import eager as ek
import graph_runtime as gr

from helpers import one_task

W0 = "/job:worker/replica:0/task:0"


def _endless_task():
    """A one-task registration whose step loops until stopped, and its TaskServer."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        with gr.device(f"{W0}/device:CPU:0"):
            y = ek.while_loop(lambda i, a: i >= 0, lambda i, a: (i + 1, a * 1.0), [ek.constant(0), x])[1]
    return one_task(g, y, [x], gr.SessionConfig(cluster=gr.ClusterSpec({"worker": 1})))


def _run_in_thread(task, part, step):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", task.run(part.reg, step, [np.float32(1.0)], 60.0)),
                         daemon=True)
    t.start()
    return t, box


def test_an_abort_ends_the_tasks_loop_with_the_reason():
    task, part = _endless_task()
    t, box = _run_in_thread(task, part, step=7)
    time.sleep(0.3)
    assert t.is_alive()                        # looping, 60 s before its deadline
    began = time.monotonic()
    task.abort(7, "/job:worker/replica:0/task:1 died")
    t.join(10)
    assert not t.is_alive(), "the loop did not stop at the abort"
    assert time.monotonic() - began < 5.0
    status, cls, message, _ = box["r"]
    assert (status, cls) == ("error", "AbortedError")
    assert "While loop" in message and "task:1 died" in message
    assert task.run(part.reg, 8, [np.float32(1.0)], 0.2)[1] == "DeadlineExceededError"   # other steps unaffected


def test_an_abort_that_arrives_before_the_step_starts_stops_it_at_once():
    task, part = _endless_task()
    task.abort(3, "the session closed")
    t, box = _run_in_thread(task, part, step=3)
    t.join(10)
    assert not t.is_alive()
    assert box["r"][1] == "AbortedError" and "the session closed" in box["r"][2]


def test_retiring_a_task_ends_its_running_loop_so_it_can_be_reused():
    task, part = _endless_task()
    t, _ = _run_in_thread(task, part, step=1)
    time.sleep(0.3)
    assert task.retire(wait_s=10.0)            # before: False after 10 s, and the actor was thrown away
    t.join(5)
    assert not t.is_alive()
