"""Graph ops name variables by resource handle, bound through per-device resource tables."""
import json

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.operation import attr_subgraphs


def _walk(graph):
    for op in graph.get_operations():
        yield op
        for _, body in attr_subgraphs(op._attrs):
            yield from _walk(body)


def _training_graph():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3], name="x")
        w = ek.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="w")
        n = ek.Variable(0, name="n")

        def body(i, acc):
            n.assign_add(1)
            return i + 1, acc * w + x

        _, y = ek.while_loop(lambda i, acc: i < 3, body, (ek.constant(0), x))
        loss = ek.reduce_sum(y * y)
        (gw,) = gr.gradients(loss, [w])
        train = gr.group(*ek.optimizers.Adam(0.1).apply_gradients([(gw, w)]), name="train")
        init = gr.global_variables_initializer()
    return g, x, w, n, y, train, init


def test_no_graph_op_stores_a_variable_object():
    g, _, w, n, *_ = _training_graph()
    handles = []
    for op in _walk(g):
        for k, v in op._attrs.items():
            assert not getattr(v, "_is_variable", False), f"{op.name}.{k} holds a Variable object"
            if isinstance(v, gr.ResourceHandle):
                handles.append(v)
                assert op.get_attr(k) is g.resources.lookup(v)      # the public view resolves the handle
    names = {h.name for h in handles}
    assert {"w", "n"} <= names and len(names) >= 4                 # Adam's slots and step counter too
    # every handle is plain data: it encodes as JSON without any object reference
    json.dumps([[h.name, h.device, h.dtype.name, h.shape.as_list()] for h in handles])


def test_bodies_and_optimized_graphs_share_the_outer_resource_table():
    g, x, w, n, y, train, init = _training_graph()
    whiles = [op for op in g.get_operations() if op.type in ("While", "StatelessWhile")]
    body = whiles[0].get_attr("body")
    assert body.resources is g.resources
    opt, _ = gr.optimize(g, [y])
    assert opt.resources is g.resources


def test_same_results_eagerly_and_in_a_session_after_handles():
    g, x, w, n, y, train, init = _training_graph()
    xv = np.array([1.0, 2.0, -1.0], np.float32)
    with gr.Session(graph=g) as sess:
        sess.run(init)
        out1, _ = sess.run([y, train], {x: xv})
        assert sess.run(n) == 3                              # the body's assign_add ran once per iteration
        w_after = sess.run(w)
    # eager reference
    we = ek.Variable(np.array([0.5, -1.0, 2.0], np.float32))
    acc = ek.constant(xv)
    for _ in range(3):
        acc = acc * we + xv
    np.testing.assert_allclose(out1, acc.numpy(), rtol=1e-6)
    with ek.GradientTape() as tape:
        acc = ek.constant(xv)
        for _ in range(3):
            acc = acc * we + xv
        loss = ek.reduce_sum(acc * acc)
    ek.optimizers.Adam(0.1).apply_gradients([(tape.gradient(loss, [we])[0], we)])
    np.testing.assert_allclose(w_after, we.numpy(), rtol=1e-5)


def test_distinct_variables_with_one_name_get_distinct_handles_per_device():
    g = gr.Graph()
    with g.as_default():
        with g.device("/cpu:1"):
            a = ek.Variable(1.0, name="v")
        b = ek.Variable(2.0, name="v")
        c = ek.Variable(3.0, name="v")
        reads = [a.value(), b.value(), c.value()]
    handles = [r.op._attrs["var"] for r in reads]
    assert handles[0].device.endswith("CPU:1")
    assert handles[1].device == handles[2].device == ""
    assert handles[1].name != handles[2].name                       # same device, same name: uniquified
    assert [g.resources.lookup(h) for h in handles] == [a, b, c]
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
        sess.run(gr.global_variables_initializer())
        assert sess.run(reads) == [1.0, 2.0, 3.0]


def test_a_handle_from_another_graph_is_refused_and_nothing_is_added():
    g1 = gr.Graph()
    with g1.as_default():
        v = ek.Variable(1.0, name="v")
        h = v.value().op._attrs["var"]
    g2 = gr.Graph()
    before = len(g2.get_operations())
    with pytest.raises(ValueError, match=r"ReadVariableOp.*resource 'v'.*not in this graph's resource table"):
        g2.create_op("ReadVariableOp", [], attrs={"var": h})
    assert len(g2.get_operations()) == before
    with pytest.raises(KeyError, match=r"resource 'v' is not in this graph's resource table"):
        g2.resources.lookup(h)


def test_graph_def_round_trip_binds_variables_into_the_new_graphs_table():
    g, x, w, n, y, train, init = _training_graph()
    g2 = gr.Graph()
    with g2.as_default():
        gr.import_graph_def(g.as_graph_def(), name="")
    for op in _walk(g2):
        assert not any(getattr(v, "_is_variable", False) for v in op._attrs.values())
    xv = np.array([1.0, 2.0, -1.0], np.float32)
    with gr.Session(graph=g) as s1, gr.Session(graph=g2) as s2:
        s1.run(init)
        s2.run(g2.get_operation_by_name(init.name))
        for _ in range(2):
            r1 = s1.run([y, train], {x: xv})[0]
            r2 = s2.run([g2.get_tensor_by_name(y.name), g2.get_operation_by_name(train.name)],
                        {g2.get_tensor_by_name(x.name): xv})[0]
            np.testing.assert_allclose(r1, r2, rtol=1e-6)
