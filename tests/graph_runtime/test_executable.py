"""`runtime.Executable` is the one prepared-run type: a Session's runs, a traced function's calls and a
tape-recorded call's forward and gradients all go through it (prepare once, call, errors mapped to the op
and the user's line)."""
import inspect
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError
from graph_runtime import runtime as rt
from graph_runtime.pipeline import prepare
from graph_runtime.run_config import RunOptions
from tracing import function


def _failing_graph():
    """(graph, x, y, line): y = x[idx] with idx fed out of range fails in the Gather kernel built at `line`."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3])
        i = gr.placeholder(ek.int32, [])
        line = inspect.currentframe().f_lineno + 1
        y = ek.gather(x, i)
    return g, x, i, y, line


def test_prepared_on_first_use_and_once():
    g, x, i, y, _ = _failing_graph()
    made = []

    def make():
        made.append(1)
        return prepare(g, [x, i], [y], check_feeds=False)

    ex = rt.Executable(None, rt.request_for(g, [x, i], [y]), make=make)
    assert made == [] and ex.request.fetches == [y]
    results = []
    threads = [threading.Thread(target=lambda: results.append(ex.call(np.arange(3, dtype=np.float32),
                                                                     np.int32(2))))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [1]
    assert [r[0].item() for r in results] == [2.0] * 4


def test_errors_name_the_op_and_the_users_line():
    g, x, i, y, line = _failing_graph()
    ex = rt.Executable(None, rt.request_for(g, [x, i], [y]), make=lambda: prepare(g, [x, i], [y], check_feeds=False))
    with pytest.raises(InvalidArgumentError) as info:
        ex.call(np.zeros(3, np.float32), np.int32(7))
    assert y.op.name in str(info.value) and f"test_executable.py:{line}" in str(info.value)
    assert info.value.op is y.op


def test_a_run_outside_a_session_refuses_run_options():
    g, x, i, y, _ = _failing_graph()
    ex = rt.Executable(None, rt.request_for(g, [x, i], [y]), make=lambda: prepare(g, [x, i], [y]))
    with pytest.raises(ValueError, match="need a Session"):
        ex([np.zeros(3, np.float32), np.int32(0)], RunOptions(trace_level=RunOptions.FULL_TRACE))


def test_sessions_traced_functions_and_recorded_calls_share_the_type():
    g, x, i, y, _ = _failing_graph()
    with gr.Session(graph=g) as sess:
        sess.run(y, {x: np.ones(3, np.float32), i: 0})
        assert all(type(e) is rt.Executable for e in sess._executables.values())

    w = ek.Variable(np.array([1.0, 2.0], np.float32))

    @function
    def f(v):
        return ek.reduce_sum(ek.sin(v * w))

    v = ek.constant([0.5, -1.0])
    f(v)
    cf = f.get_concrete_function(v)
    assert type(cf._executable) is rt.Executable
    with ek.GradientTape() as tape:
        tape.watch(v)
        out = f(v)
    grad = tape.gradient(out, v)
    np.testing.assert_allclose(grad.numpy(), np.cos(v.numpy() * w.numpy()) * w.numpy(), rtol=1e-6)
    info = cf._tape_info
    saving = info.saving_for((0, 1))          # v and w, both watched
    assert type(saving.forward) is rt.Executable and type(info.call) is rt.Executable
    # the saving forward serves the call: the recomputing executable of the same call is never compiled
    assert saving.forward._plan is not None and info.call._plan is None
