"""Deadlines of local runs: `RunOptions(timeout_in_ms)` ends an endless While and a `_Recv` wait with
DeadlineExceededError, under every executor; an imported `_Recv` that nothing sends to is refused up front;
a device whose partition fails stops another device's loop (with or without a deadline).

Each case runs in a daemon thread joined with a time limit, so that a regression fails instead of hanging.
"""
import threading
import time

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import DeadlineExceededError, FailedPreconditionError, InvalidArgumentError

TWO = gr.SessionConfig(device_count={"CPU": 2})


def _outcome(fn, limit_s=20.0):
    """(exception or None, seconds) of `fn()`; fails if it has not returned within `limit_s`."""
    box = {}

    def target():
        try:
            fn()
        except BaseException as e:      # noqa: BLE001 - handed back
            box["e"] = e
    began = time.monotonic()
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(limit_s)
    assert not t.is_alive(), f"still running after {limit_s} s"
    return box.get("e"), time.monotonic() - began


def _endless(x):
    return ek.while_loop(lambda i, a: i >= 0, lambda i, a: (i + 1, a * 1.0), [ek.constant(0), x])[1]


@pytest.mark.parametrize("how", ["run", "callable", "traced", "inter_op"])
def test_an_endless_while_ends_at_the_runs_deadline(how):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        y = _endless(x)
    config = gr.SessionConfig(inter_op_parallelism_threads=2) if how == "inter_op" else None
    opts = gr.RunOptions(timeout_in_ms=150, trace_level=gr.RunOptions.FULL_TRACE if how == "traced" else 0)
    with gr.Session(graph=g, config=config) as sess:
        if how == "callable":
            call = sess.make_callable(y, [x])
            err, took = _outcome(lambda: call(1.0, options=opts))
        else:
            err, took = _outcome(lambda: sess.run(y, {x: 1.0}, options=opts))
    assert isinstance(err, DeadlineExceededError) and "deadline" in str(err), err
    assert err.op_name == y.op.name
    assert took < 5.0


def test_a_recv_wait_ends_at_the_runs_deadline():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        with g.device("/cpu:1"):
            a = _endless(x)
        with g.device("/cpu:0"):
            y = ek.cos(a)                   # waits in a _Recv for a, which never comes
    with gr.Session(graph=g, config=TWO) as sess:
        err, took = _outcome(lambda: sess.run(y, {x: 1.0}, options=gr.RunOptions(timeout_in_ms=150)))
        assert isinstance(err, DeadlineExceededError), err
        assert took < 5.0
    # no deadline: runs as before
    with g.as_default():
        z = ek.cos(ek.sin(x))
    with gr.Session(graph=g, config=TWO) as sess:
        np.testing.assert_allclose(sess.run(z, {x: 1.0}), np.cos(np.sin(1.0)), rtol=1e-6)


def _fails_soon(x):
    time.sleep(0.2)             # the other device is inside its loop by now
    raise ValueError("device 0 gives up")


@pytest.mark.parametrize("timeout_in_ms", [0, 60_000])
@pytest.mark.parametrize("inter_op", [1, 2])
def test_a_failing_device_stops_an_endless_while_on_another_device(timeout_in_ms, inter_op):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        with g.device("/cpu:1"):
            a = _endless(x)                 # nobody will take its answer once device 0 failed
        with g.device("/cpu:0"):
            b = ek.py_function(_fails_soon, [x], ek.float32)
    config = gr.SessionConfig(device_count={"CPU": 2}, inter_op_parallelism_threads=inter_op)
    with gr.Session(graph=g, config=config) as sess:
        err, took = _outcome(lambda: sess.run([a, b], {x: 1.0}, options=gr.RunOptions(timeout_in_ms=timeout_in_ms)))
        assert "device 0 gives up" in str(err), err         # the failure itself, not the loop's abort
        assert took < 10.0
        assert sess.run(x, {x: 2.0}) == 2.0         # the session goes on


def _lonely_recv_graph_def():
    """The CPU:0 partition of a 2-device step: it holds a `_Recv` whose `_Send` is in the other partition."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        with g.device("/cpu:1"):
            a = ek.sin(x, name="a")
        with g.device("/cpu:0"):
            ek.cos(a, name="y")
    md = gr.RunMetadata()
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2}, optimize=False)) as sess:
        sess.run("y:0", {x: 1.0}, options=gr.RunOptions(output_partition_graphs=True), run_metadata=md)
    return next(gd for gd in md.partition_graphs if any(n["op"] == "_Recv" for n in gd["nodes"]))


def test_an_imported_recv_that_nothing_sends_to_is_refused():
    gd = _lonely_recv_graph_def()
    g = gr.Graph()
    with g.as_default():
        gr.import_graph_def(gd, name="")
        with g.device("/cpu:1"):
            z = ek.constant(1.0) + 1.0
    with gr.Session(graph=g, config=TWO) as sess:
        err, _ = _outcome(lambda: sess.run(["y:0", z]))
        assert isinstance(err, InvalidArgumentError) and "no _Send of this step sends" in str(err), err
    with gr.Session(graph=g) as sess:           # one device: no rendezvous at all
        err, _ = _outcome(lambda: sess.run("y:0"))
        assert isinstance(err, FailedPreconditionError) and "outside a multi-device step" in str(err), err
