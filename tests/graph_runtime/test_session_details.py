"""Session and graph details: `with sess:` default graph, pass options from a Session, GraphKeys and the global
step, `Graph.create_op`, plan reuse when the graph grows."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError


def test_with_session_makes_its_graph_the_default():
    g = gr.Graph()
    outer = gr.get_default_graph()
    with gr.Session(graph=g) as sess:
        assert gr.get_default_graph() is g
        c = ek.constant(2.0) * 3.0              # built in the session's graph
        assert c.graph is g
        assert sess.run(c) == 6.0
        assert gr.get_default_session() is sess
    assert gr.get_default_graph() is outer
    # as_default() makes it the default session only (TF's Session.as_default)
    sess = gr.Session(graph=g)
    with sess.as_default():
        assert gr.get_default_graph() is outer
    sess.close()


def test_signed_zeros_option_reaches_the_optimizer_from_a_session():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        y = x + 0.0
    xv = np.array([-0.0, 1.0], np.float32)
    with gr.Session(graph=g) as sess:
        out = sess.run(y, {x: xv})
        assert not np.signbit(out[0])           # -0 + 0 = +0: the add stays
    fast = gr.SessionConfig(pass_options={"signed_zeros": False})
    with gr.Session(graph=g, config=fast) as sess:
        out = sess.run(y, {x: xv})
        assert np.signbit(out[0])               # x + 0 -> x (signed zeros ignored)
        report = sess.last_optimization_report
        assert any(p.name == "arithmetic" and p.changes for p in report.passes)


def test_zero_plus_and_zero_minus_rules_follow_the_signed_zeros_option():
    g = gr.Graph()
    with g.as_default():
        y = gr.placeholder(ek.float64, [2], name="y")
        plus = 0.0 + y                # -0 + 0 = +0: `y` only when signed zeros may be ignored
        minus = 0.0 - y               # 0 - (+0) = +0, Neg(+0) = -0: likewise
    yv = np.array([-0.0, 0.0])
    with gr.Session(graph=g) as sess:
        p, m = sess.run([plus, minus], {y: yv})
        assert not np.signbit(p).any() and not np.signbit(m).any()
    with gr.Session(graph=g, config=gr.SessionConfig(pass_options={"signed_zeros": False})) as sess:
        p, m = sess.run([plus, minus], {y: yv})
        np.testing.assert_array_equal(np.signbit(p), [True, False])      # y itself
        np.testing.assert_array_equal(np.signbit(m), [False, True])      # -y
        np.testing.assert_array_equal(p, yv)
        np.testing.assert_array_equal(m, -yv)


def test_enabled_passes_turns_on_debug_stripper_from_a_session():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [], name="x")
        check = ek.debugging.Assert(x > 0.0, [x])
        with g.control_dependencies([check]):
            y = x * 2.0
    with gr.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError):
            sess.run(y, {x: -1.0})
    with gr.Session(graph=g, config=gr.SessionConfig(enabled_passes=("debug_stripper",))) as sess:
        assert sess.run(y, {x: -1.0}) == -2.0
    with gr.Session(graph=g, config=gr.SessionConfig(enabled_passes=("no_such_pass",))) as sess:
        with pytest.raises(ValueError, match="unknown graph optimization pass .no_such_pass."):
            sess.run(y, {x: 1.0})
    with pytest.raises(TypeError, match="pass_options must be a dict"):
        gr.SessionConfig(pass_options=[("signed_zeros", False)])


def test_graph_keys_and_global_step():
    for key, value in (("SAVERS", "savers"), ("WEIGHTS", "weights"), ("BIASES", "biases"),
                       ("ACTIVATIONS", "activations"), ("LOCAL_INIT_OP", "local_init_op"),
                       ("SUMMARY_OP", "summary_op"), ("GLOBAL_STEP", "global_step"), ("EVAL_STEP", "eval_step"),
                       ("COND_CONTEXT", "cond_context"), ("WHILE_CONTEXT", "while_context"),
                       ("READY_OP", "ready_op"), ("REGULARIZATION_LOSSES", "regularization_losses")):
        assert getattr(gr.GraphKeys, key) == value
    g = gr.Graph()
    with g.as_default():
        assert gr.get_global_step() is None
        with gr.name_scope("scope"):
            step = gr.create_global_step()
        assert step.name == "global_step:0" and step.dtype == ek.int64 and not step.trainable
        assert gr.get_global_step() is step and gr.get_global_step(g) is step
        assert g.get_collection(gr.GraphKeys.GLOBAL_STEP) == [step]
        assert step in g.get_collection(gr.GraphKeys.GLOBAL_VARIABLES)
        with pytest.raises(ValueError, match='"global_step" already exists'):
            gr.create_global_step()
        inc = step.assign_add(1)
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        sess.run(inc)
        assert sess.run(step) == 1
    g2 = gr.Graph()
    with g2.as_default():
        ek.Variable(0.5, name="global_step")          # found by name, but not an integer
        with pytest.raises(TypeError, match='does not have integer type'):
            gr.get_global_step()
    g3 = gr.Graph()
    with g3.as_default():
        g3.add_to_collection(gr.GraphKeys.GLOBAL_STEP, ek.Variable(0, name="a"))
        g3.add_to_collection(gr.GraphKeys.GLOBAL_STEP, ek.Variable(0, name="b"))
        with pytest.raises(TypeError, match="multiple items"):
            gr.get_global_step()


def test_create_op_by_type_name():
    g = gr.Graph()
    with g.as_default():
        a = gr.placeholder(ek.float32, [2], name="a")
    op = g.create_op("AddV2", [a, a], name="twice")
    assert op.type == "AddV2" and op.name == "twice" and op.graph is g
    s = g.create_op("Sum", [a], dtypes=[ek.float32], attrs={"axis": (0,), "keepdims": True})
    with gr.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(op.outputs[0], {a: [1, 2]}), [2, 4])
        np.testing.assert_array_equal(sess.run(s.outputs[0], {a: [1, 2]}), [3])
    with pytest.raises(ValueError, match="Op type not registered 'NoSuchOp'"):
        g.create_op("NoSuchOp", [a])
    with pytest.raises(ValueError, match="unknown attr 'bogus' for op AddV2"):
        g.create_op("AddV2", [a, a], attrs={"bogus": 1})
    with pytest.raises(TypeError, match=r"input 1 must be a Tensor, got float"):
        g.create_op("AddV2", [a, 3.0])
    with pytest.raises(InvalidArgumentError, match="different dtypes"):
        g.create_op("AddV2", [a, ek.constant([1, 2])])
    with pytest.raises(TypeError, match=r"expected output dtypes \['int32'\]"):
        g.create_op("AddV2", [a, a], dtypes=[ek.int32])
    with pytest.raises(TypeError, match="op_type must be a string"):
        g.create_op(None, [a])


def test_create_op_with_input_the_op_cannot_take_names_the_op_inputs_and_attrs():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
    n = len(g.get_operations())
    with pytest.raises(ValueError, match=r"create_op\(Cast\): 1 input\(s\) and attrs \[\] do not fit the op: "
                                         r"missing a required argument: 'dtype'"):
        g.create_op("Cast", [x])
    with pytest.raises(ValueError, match=r"create_op\(Tanh\): takes 1 input\(s\), got 2"):
        g.create_op("Tanh", [x, x])
    with pytest.raises(ValueError, match=r"create_op\(Sum\): the op cannot take inputs \(float32\[2, 3\]\) with "
                                         r"attrs \{'axis': 1.5, 'keepdims': False\}: TypeError: 'float' object"):
        g.create_op("Sum", [x], attrs={"axis": 1.5, "keepdims": False})
    assert len(g.get_operations()) == n                    # nothing was added by the failed calls


def test_growing_graph_recompiles_only_new_fetches():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [], name="x")
        y = x * 2.0
    with gr.Session(graph=g) as sess:
        assert sess.run(y, {x: 1.0}) == 2.0
        plan = sess._executables[next(iter(sess._executables))].plan
        v0 = g.version
        with g.as_default():
            z = y + 1.0                              # the graph grows
        assert g.version > v0
        assert sess.run(y, {x: 1.0}) == 2.0          # unaffected fetch: same plan
        assert len(sess._executables) == 1
        assert sess._executables[next(iter(sess._executables))].plan is plan
        assert sess.run(z, {x: 1.0}) == 3.0          # the new fetch compiles against the new ops
        assert len(sess._executables) == 2
