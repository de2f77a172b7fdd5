"""colocate_with: device taken from the target, groups kept on one device by the placer,
conflicts raise, groups survive a GraphDef round trip."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError
from graph_runtime.graph_def import GraphDefError

CPU = "/job:localhost/replica:0/task:0/device:CPU:{}".format
TWO = {"CPU": 2}


def _placement(capsys) -> dict:
    rows = [line.split(": ") for line in capsys.readouterr().out.splitlines() if ": (" in line]
    return {r[0]: r[2] for r in rows}


def test_ops_take_the_targets_device_and_group_and_ignore_device_scopes():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        with g.device("/cpu:1"):
            a = ek.exp(x, name="a")
        with g.device("/cpu:0"):
            with gr.colocate_with(a):
                b = ek.sin(x, name="b")           # the enclosing /cpu:0 scope does not apply
                with gr.colocate_with(b.op):
                    c = ek.cos(x, name="c")       # b's group is a's group
        d = ek.tanh(x, name="d")
    assert b.op.device == c.op.device == "/device:CPU:1" and d.op.device == ""
    assert b.op.colocation_groups() == c.op.colocation_groups() == ["loc:@a"]
    assert a.op.colocation_groups() == ["loc:@a"]
    with pytest.raises(TypeError, match="colocate_with expects"):
        with g.colocate_with("a"):
            pass


def test_a_group_without_requests_is_placed_together(capsys):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [256], name="x")
        with g.device("/cpu:1"):
            big = ek.exp(x, name="big")
        target = ek.reduce_sum(x, name="target")     # its only input is fed: alone it would go to CPU:0
        with gr.colocate_with(target):
            pulled = ek.sin(big, name="pulled")      # ... but this member's input lives on CPU:1
        out = ek.add(target, ek.reduce_sum(pulled), name="out")
    cfg = gr.SessionConfig(device_count=TWO, log_device_placement=True)
    xv = np.linspace(0, 1, 256).astype(np.float32)
    with gr.Session(graph=g, config=cfg) as sess:
        np.testing.assert_allclose(sess.run(out, {x: xv}), xv.sum() + np.sin(np.exp(xv)).sum(), rtol=1e-5)
    placed = _placement(capsys)
    assert placed["target"] == placed["pulled"] == CPU(1)


def test_a_conflicting_request_inside_the_group_raises_unless_soft():
    g0 = gr.Graph()
    with g0.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        a = ek.exp(x, name="a")
        with gr.colocate_with(a):
            b = ek.sin(a, name="b")
        ek.add(a, b, name="out")
    gd = g0.as_graph_def()          # a GraphDef from elsewhere may ask for two devices in one group
    for n in gd["nodes"]:
        n["device"] = {"a": "/cpu:0", "b": "/cpu:1"}.get(n["name"], "")
    g = gr.Graph()
    with g.as_default():
        gr.import_graph_def(gd, name="")
    feed = {"x:0": np.ones(2, np.float32)}
    with gr.Session(graph=g, config=gr.SessionConfig(device_count=TWO)) as sess:
        with pytest.raises(InvalidArgumentError, match="Cannot colocate nodes 'a'.*'/device:CPU:0'.*'b'"):
            sess.run("out:0", feed)
    with gr.Session(graph=g, config=gr.SessionConfig(device_count=TWO, allow_soft_placement=True)) as sess:
        np.testing.assert_allclose(sess.run("out:0", feed), np.e + np.sin(np.e), rtol=1e-6)


def test_groups_survive_a_graph_def_round_trip_and_bad_groups_are_refused():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        a = ek.exp(x, name="a")
        with gr.colocate_with(a):
            ek.sin(x, name="b")
    gd = g.as_graph_def()
    g2 = gr.Graph()
    with g2.as_default():
        gr.import_graph_def(gd, name="imp")
    assert g2.get_operation_by_name("imp/b").colocation_groups() == ["loc:@imp/a"]
    bad = g.as_graph_def()
    next(n for n in bad["nodes"] if n["name"] == "b")["colocate_with"] = ["nowhere"]
    with pytest.raises(GraphDefError, match="'colocate_with' names \\['nowhere'\\]"):
        with gr.Graph().as_default():
            gr.import_graph_def(bad)
