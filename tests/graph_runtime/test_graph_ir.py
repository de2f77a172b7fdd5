"""Graph IR: default-graph stack, names, scopes, collections, finalize, lookup, printing, verify."""
import os

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError


def test_default_graph_stack_restores_previous():
    outer = gr.get_default_graph()
    g1, g2 = gr.Graph(), gr.Graph()
    with g1.as_default():
        assert gr.get_default_graph() is g1
        assert not ek.executing_eagerly()
        with g2.as_default():
            assert gr.get_default_graph() is g2
        assert gr.get_default_graph() is g1
    assert gr.get_default_graph() is outer
    assert ek.executing_eagerly()


def test_reset_default_graph():
    before = gr.get_default_graph()
    gr.reset_default_graph()
    assert gr.get_default_graph() is not before
    with gr.Graph().as_default():
        with pytest.raises(AssertionError):
            gr.reset_default_graph()


def test_ops_build_nodes_with_static_shapes():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        w = ek.constant(np.ones((3, 4), np.float32))
        y = ek.matmul(x, w)
    assert y._is_symbolic and y._value is None
    assert y.shape == [2, 4] and y.dtype is ek.float32
    assert y.op.type == "MatMul" and y.name == "MatMul:0"
    assert y.op.inputs[0] is x and y.graph is g
    assert y.op.get_attr("transpose_a") is False
    with pytest.raises(ValueError, match="no attr"):
        y.op.get_attr("nope")
    assert [o.type for o in g.get_operations()] == ["Placeholder", "Const", "MatMul"]


def test_duplicate_names_are_made_unique():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        a = x + 1.0
        b = x + 2.0
        c = ek.identity(x, name="a")
        d = ek.identity(x, name="a")
    assert a.op.name == "add" and b.op.name == "add_1"
    assert c.op.name == "a" and d.op.name == "a_1"
    assert g.unique_name("a") == "a_2"
    assert g.unique_name("zz", mark_as_used=False) == "zz"
    assert g.unique_name("zz") == "zz"
    assert g.unique_name("zz") == "zz_1"
    with pytest.raises(ValueError, match="not a valid op name"):
        with g.as_default():
            ek.identity(x, name="bad:name")


def test_name_scopes_and_module_scopes():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        with gr.name_scope("layer"):
            y = x * 2.0
            with ek.name_scope("inner"):
                z = ek.exp(y)
    assert y.op.name == "layer/mul"
    assert z.op.name == "layer/inner/Exp"
    assert gr.name_scope is ek.name_scope


def test_lookup_by_name():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        parts = ek.unstack(ek.reshape(x, [2, 1]))
    assert g.get_operation_by_name("x") is x.op
    assert g.get_tensor_by_name("x:0") is x
    un = parts[1].op
    assert g.get_tensor_by_name(f"{un.name}:1") is parts[1]
    with pytest.raises(KeyError):
        g.get_operation_by_name("nope")
    with pytest.raises(KeyError, match="has 2 outputs"):
        g.get_tensor_by_name(f"{un.name}:5")
    with pytest.raises(ValueError, match="Operation name"):
        g.get_tensor_by_name("x")
    assert g.as_graph_element("x:0") is x and g.as_graph_element("x") is x.op


def test_finalize_refuses_new_ops():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
    g.finalize()
    assert g.finalized
    with g.as_default():
        with pytest.raises(RuntimeError, match="finalized"):
            x + 1.0
    with pytest.raises(RuntimeError, match="finalized"):
        g.add_to_collection("k", 1)


def test_collections_and_graph_keys():
    g = gr.Graph()
    g.add_to_collection("losses", 1)
    g.add_to_collections(["losses", "other"], 2)
    assert g.get_collection("losses") == [1, 2]
    ref = g.get_collection_ref("losses")
    ref.append(3)
    assert g.get_collection("losses") == [1, 2, 3]
    assert g.get_collection("missing") == []
    with g.as_default():
        v = ek.Variable(1.0, name="v")
        u = ek.Variable(2.0, name="u", trainable=False)
    assert g.get_collection(gr.GraphKeys.GLOBAL_VARIABLES) == [v, u]
    assert g.get_collection(gr.GraphKeys.TRAINABLE_VARIABLES) == [v]
    assert g.get_collection(gr.GraphKeys.GLOBAL_VARIABLES, scope="u") == [u]


def test_control_dependencies_and_device_are_recorded():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        a = x + 1.0
        with g.control_dependencies([a]):
            b = x * 2.0
            with g.control_dependencies(None):
                c = x * 3.0
            with gr.device("/cpu:0"):
                d = x * 4.0
    assert b.op.control_inputs == (a.op,)
    assert c.op.control_inputs == ()
    assert d.op.device == "/device:CPU:0" and b.op.device == ""


def test_ops_record_user_source_location():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        y = x + 1.0; line = __import__("inspect").currentframe().f_lineno  # noqa: E702
    loc = y.op.location
    assert os.path.basename(loc.filename) == "test_graph_ir.py" and loc.lineno == line
    assert "test_graph_ir.py:" in y.op.describe()


def test_graph_tensors_are_hashable_and_reject_numpy():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
    assert {x: 1}[x] == 1
    with pytest.raises(AttributeError, match=r"symbolic.*Session.run\('x:0'\)"):
        x.numpy()
    assert not hasattr(x, "numpy")            # as TF's graph tensors
    with pytest.raises(TypeError):
        bool(x)


def test_mixing_graphs_is_an_error():
    g1, g2 = gr.Graph(), gr.Graph()
    with g1.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
    with g2.as_default():
        with pytest.raises(ValueError, match="different graph"):
            x + 1.0


def test_eager_tensor_inputs_become_cached_constants():
    t = ek.constant([1.0, 2.0])
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        a = x + t
        b = x * t
    assert a.op.inputs[1] is b.op.inputs[1]
    assert a.op.inputs[1].op.type == "Const"


def test_placeholder_needs_a_graph():
    with pytest.raises(RuntimeError, match="eager"):
        gr.placeholder(ek.float32, [2])


def test_shape_errors_surface_at_build_time():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        with pytest.raises(InvalidArgumentError):
            ek.matmul(x, x)


def test_str_listing_golden():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        w = ek.constant(np.ones((3, 4), np.float32), name="w")
        with gr.name_scope("dense"):
            y = ek.sigmoid(ek.matmul(x, w))
        init = gr.group(y)
    assert str(g) == "\n".join([
        "%x: f32[2,3] = Placeholder() {dtype=float32, shape=[2,3]}",
        "%w: f32[3,4] = Const() {value=<float32[3, 4]>}",
        "%dense/MatMul: f32[2,4] = MatMul(%x, %w) {transpose_a=False, transpose_b=False}",
        "%dense/Sigmoid: f32[2,4] = Sigmoid(%dense/MatMul)",
        "%group_deps = NoOp(^dense/Sigmoid)",
    ])
    assert init.type == "NoOp"
    dot = g.to_dot()
    assert dot.startswith("digraph G {") and '"x" -> "dense/MatMul"' in dot
    assert '"dense/Sigmoid" -> "group_deps" [style=dashed]' in dot


def test_verify_accepts_built_graphs_and_catches_corruption():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        y = ek.exp(x) + 1.0
    g.verify()
    # corrupt: pretend the Exp output is int32
    y.op.inputs[0]._dtype = ek.int32
    with pytest.raises(InvalidArgumentError, match="dtype"):
        g.verify()
    y.op.inputs[0]._dtype = ek.float32
    # corrupt: an input from another graph
    other = gr.Graph()
    with other.as_default():
        z = gr.placeholder(ek.float32, [2], name="z")
    y.op._inputs = (z, y.op._inputs[1])
    with pytest.raises(InvalidArgumentError, match="dangling"):
        g.verify()


def test_equal_static_shapes_share_one_immutable_shape_object():
    from eager.shape import TensorShape, shared_shape
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4, 4), name="x")
        a, b = ek.tanh(x), ek.exp(x)
        u = gr.placeholder(ek.float32, None, name="u")
    assert a.shape is b.shape and a.shape == (4, 4)          # TensorShape is immutable: one object serves both
    assert shared_shape([2, 3]) == TensorShape([2, 3]) and shared_shape((-1, 3)).dims == (None, 3)
    assert u.shape.dims is None
    a.set_shape((4, 4))
    assert b.shape == (4, 4)
