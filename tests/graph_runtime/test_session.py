"""Session: seeds' examples, fetch structures, feeds, pruning, variables, control deps, errors, threads."""
import collections
import io
import os

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import FailedPreconditionError, InvalidArgumentError


def test_seed_z_equals_x_plus_y():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, name="x")
        y = gr.placeholder(ek.float32, name="y")
        z = x + y
    with gr.Session(graph=g) as sess:
        assert sess.run(z, feed_dict={x: 3.0, y: 4.5}) == 7.5
        np.testing.assert_array_equal(sess.run(z, {x: [1, 2], y: [3, 4]}), [4, 6])


def test_seed_sigmoid_layer_fed():
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((3, 2)).astype(np.float32)
    bv = rng.standard_normal(2).astype(np.float32)
    xv = rng.standard_normal((5, 3)).astype(np.float32)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [None, 3], name="x")
        W = gr.placeholder(ek.float32, [3, 2], name="W")
        b = gr.placeholder(ek.float32, [2], name="b")
        y = ek.sigmoid(ek.matmul(x, W) + b)
    with gr.Session(graph=g) as sess:
        out = sess.run(y, {x: xv, W: wv, b: bv})
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-(xv @ wv + bv))), rtol=1e-6)
    assert out.dtype == np.float32


def _simple_graph():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        a = x + 1.0
        b = x * 2.0
    return g, x, a, b


def test_nested_fetch_structures():
    g, x, a, b = _simple_graph()
    Pair = collections.namedtuple("Pair", "first second")
    feed = {x: np.array([1, 2], np.float32)}
    with gr.Session(graph=g) as sess:
        r = sess.run({"a": a, "rest": [b, (a, "mul:0")], "p": Pair(a, b)}, feed)
        np.testing.assert_array_equal(r["a"], [2, 3])
        np.testing.assert_array_equal(r["rest"][0], [2, 4])
        np.testing.assert_array_equal(r["rest"][1][1], [2, 4])
        assert isinstance(r["rest"][1], tuple) and isinstance(r["p"], Pair)
        np.testing.assert_array_equal(r["p"].second, [2, 4])
        lst = sess.run([a, b, a.op], feed)
        assert isinstance(lst, list) and lst[2] is None
        tup = sess.run((a,), feed)
        assert isinstance(tup, tuple) and len(tup) == 1
        assert sess.run(b.op, feed) is None
        np.testing.assert_array_equal(sess.run("add:0", {"x:0": [0, 0]}), [1, 1])


def test_feed_checks_name_the_placeholder():
    g, x, a, b = _simple_graph()
    with gr.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError, match=r"shape \(3,\).*'x:0'"):
            sess.run(a, {x: np.zeros(3, np.float32)})
        with pytest.raises(InvalidArgumentError, match="'x:0'.*float32"):
            sess.run(a, {x: ["a", "b"]})
        with pytest.raises(InvalidArgumentError, match="must feed a value for placeholder tensor 'x'"):
            sess.run(a)
        # float64 data converts to the placeholder's float32
        assert sess.run(a, {x: np.array([1.0, 2.0])}).dtype == np.float32
    g2 = gr.Graph()
    with g2.as_default():
        i = gr.placeholder(ek.int32, [None], name="i")
        j = i + 1
    with gr.Session(graph=g2) as sess:
        with pytest.raises(InvalidArgumentError, match="'i:0'"):
            sess.run(j, {i: [1.5, 2.0]})
        np.testing.assert_array_equal(sess.run(j, {i: [1, 2, 3]}), [2, 3, 4])


def test_feeding_an_intermediate_tensor():
    g, x, a, b = _simple_graph()
    with g.as_default():
        c = a * 10.0
    with gr.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(c, {a: [1.0, 1.0]}), [10, 10])


def test_only_needed_subgraph_runs_print_is_pruned(capsys):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        p = ek.print("side effect", x, output_stream="stdout" if False else None)
        y = x * 3.0
    with gr.Session(graph=g) as sess:
        sess.run(y, {x: [1, 2]})
        assert "side effect" not in capsys.readouterr().err
        sess.run(p, {x: [1, 2]})
        assert "side effect [1 2]" in capsys.readouterr().err
        sess.run([y, p], {x: [1, 2]})
        sess.run([y, p], {x: [1, 2]})
        assert capsys.readouterr().err.count("side effect") == 2   # prints at every run


def test_unfed_placeholder_not_needed_is_fine():
    g, x, a, b = _simple_graph()
    with g.as_default():
        k = ek.constant(5.0) * 2.0
    with gr.Session(graph=g) as sess:
        assert sess.run(k) == 10.0


def test_variables_initialization_and_uninitialized_error():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable([1.0, 2.0], name="v")
        y = v * 2.0
        inc = v.assign_add([1.0, 1.0])
        init = gr.global_variables_initializer()
    assert v.initializer is not None and v.initializer.type == "AssignVariableOp"
    with gr.Session(graph=g) as sess:
        with pytest.raises(FailedPreconditionError, match="uninitialized") as ei:
            sess.run(y)
        assert "v/read" in str(ei.value)
        assert gr.report_uninitialized_variables([v]) == ["v:0"]
        sess.run(init)
        np.testing.assert_array_equal(sess.run(y), [2, 4])
        sess.run(inc)
        np.testing.assert_array_equal(sess.run(v), [2, 3])       # fetching a variable reads it
    np.testing.assert_array_equal(v.numpy(), [2, 3])               # state lives in the Variable
    with gr.Session(graph=g) as s2:                                 # ... shared by every session
        np.testing.assert_array_equal(s2.run(y), [4, 6])
        s2.run(gr.variables_initializer([v]))
        np.testing.assert_array_equal(s2.run(y), [2, 4])


def test_eager_variable_used_in_graph_shares_state():
    v = ek.Variable(3.0)
    g = gr.Graph()
    with g.as_default():
        upd = v.assign_add(1.0)
    with gr.Session(graph=g) as sess:
        sess.run(upd)
    assert float(v) == 4.0
    v.assign(10.0)
    with gr.Session(graph=g) as sess:
        assert sess.run(upd) == 11.0


def test_control_dependencies_order_effects():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(1.0, name="v")
        assign = v.assign(5.0)
        with g.control_dependencies([assign]):
            r = v.read_value() * 1.0
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        assert sess.run(r) == 5.0           # the assign ran first though not fetched


def test_make_callable_and_close():
    g, x, a, b = _simple_graph()
    sess = gr.Session(graph=g)
    f = sess.make_callable([a, b], feed_list=[x])
    r = f(np.array([1, 1], np.float32))
    np.testing.assert_array_equal(r[1], [2, 2])
    with pytest.raises(TypeError, match="feed values"):
        f()
    sess.close()
    assert sess.closed
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(a, {x: [1, 2]})
    with pytest.raises(RuntimeError, match="closed"):
        f(np.array([1, 1], np.float32))


def test_default_session_eval():
    g, x, a, b = _simple_graph()
    with gr.Session(graph=g) as sess:
        assert gr.get_default_session() is sess
        np.testing.assert_array_equal(a.eval({x: [0, 1]}), [1, 2])
    assert gr.get_default_session() is None
    assert sess.closed


def test_run_metadata_per_op_timings():
    g, x, a, b = _simple_graph()
    with g.as_default():
        c = a + b
    md = gr.RunMetadata()
    with gr.Session(graph=g, config=gr.SessionConfig(optimize=False)) as sess:   # one row per graph op
        out = sess.run(c, {x: [1, 2]}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE),
                       run_metadata=md)
    np.testing.assert_array_equal(out, [4, 7])
    names = [s.name for s in md.step_stats]
    assert names == ["add", "mul", "add_1"]
    assert all(s.duration_us >= 0 for s in md.step_stats) and md.total_us > 0
    assert "3 ops" in md.summary()


def test_runtime_error_names_op_type_and_user_line():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [None], name="x")
        with gr.name_scope("dense"):
            r = ek.reshape(x, [2, 2]); line = __import__("inspect").currentframe().f_lineno  # noqa: E702
    with gr.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError) as ei:
            sess.run(r, {x: np.zeros(3, np.float32)})
    msg = str(ei.value)
    assert "while running op `dense/Reshape` (Reshape, created at test_session.py:" + str(line) + ")" in msg
    assert ei.value.op.name == "dense/Reshape"
    # the traced path and the thread-pool path report the same way
    with gr.Session(graph=g, config=gr.SessionConfig(inter_op_parallelism_threads=2)) as sess:
        with pytest.raises(InvalidArgumentError, match="dense/Reshape"):
            sess.run(r, {x: np.zeros(3, np.float32)})
    with gr.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError, match="dense/Reshape"):
            sess.run(r, {x: np.zeros(3, np.float32)}, options=gr.RunOptions(trace_level=3))


def _program():
    x = ek.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    w = ek.constant(np.arange(8, dtype=np.float32).reshape(4, 2) / 7)
    h = ek.tanh(ek.matmul(x, w)) * 2.0 - ek.exp(-ek.abs(x[:, :2]))
    return ek.reduce_sum(h * h, axis=1) / (1.0 + ek.reduce_max(h))


def test_same_program_same_numbers_eagerly_and_in_session():
    eager_out = _program().numpy()
    g = gr.Graph()
    with g.as_default():
        out = _program()
    with gr.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(out), eager_out)


def test_inter_op_threads_give_same_results():
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((64, 64)).astype(np.float32)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [64, 64], name="x")
        v = ek.Variable(np.ones((64, 64), np.float32), name="v")
        branches = [ek.tanh(ek.matmul(x, x) * float(i)) for i in range(8)]
        total = ek.add_n(branches)
        upd = v.assign_add(total)
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as s1:
        s1.run(init)
        want = s1.run([total, upd], {x: xv})
    with gr.Session(graph=g, config=gr.SessionConfig(inter_op_parallelism_threads=4)) as s4:
        s4.run(init)
        for _ in range(3):
            got = s4.run([total, upd], {x: xv})
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            s4.run(init)
    with pytest.raises(ValueError):
        gr.SessionConfig(inter_op_parallelism_threads=0)


def test_long_chain_builds_verifies_runs_differentiates_and_exports():
    n = 2500      # over twice Python's default recursion limit (1,000 frames): no step may recurse along the chain
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [3], name="x")
        y = x
        for i in range(n):
            y = y * 1.0001 if i % 2 else y + 0.001
        (dx,) = gr.gradients(y, [x])
    g.verify()
    str(g)
    gd = g.as_graph_def()
    with gr.Session(graph=g) as sess:
        yv, dxv = sess.run([y, dx], {x: np.zeros(3)})
    ref = np.zeros(3)
    for i in range(n):
        ref = ref * 1.0001 if i % 2 else ref + 0.001
    np.testing.assert_allclose(yv, ref)
    np.testing.assert_allclose(dxv, np.full(3, 1.0001 ** (n // 2)))
    g2 = gr.Graph()
    with g2.as_default():
        (y2,) = gr.import_graph_def(gd, return_elements=[y.name])
    with gr.Session(graph=g2, config=gr.SessionConfig(optimize=False)) as sess:
        np.testing.assert_allclose(sess.run(y2, {"import/x:0": np.zeros(3)}), ref)


def test_generated_plan_reuses_registers_and_is_cached():
    g, x, a, b = _simple_graph()
    with g.as_default():
        c = ek.exp(ek.exp(ek.exp(a)))
    with gr.Session(graph=g, config=gr.SessionConfig(optimize=False)) as sess:   # the executor alone
        sess.run(c, {x: [0, 0]})
        sess.run(c, {x: [1, 1]})
        assert len(sess._executables) == 1
        src = next(iter(sess._executables.values())).plan.source
    body = src.split("def plan")[1]
    # one register, reused after each last use; the feed's register r0 is kept (the plan may run again with
    # NumPy's warnings off when they are turned into errors: codegen's module docstring)
    assert body.count("r1 = k") == 4 and "r2" not in body


def test_fetch_errors():
    g, x, a, b = _simple_graph()
    eager_value = ek.constant(1.0)        # made outside: `with sess:` makes g the default graph
    with gr.Session(graph=g) as sess:
        with pytest.raises(TypeError, match="invalid type"):
            sess.run(3)
        with pytest.raises(TypeError, match="eager tensor"):
            sess.run(eager_value)
        other, ox, oa, ob = _simple_graph()
        with pytest.raises(ValueError, match="not an element"):
            sess.run(oa, {x: [1, 2]})


def test_output_stream_print_to_file(tmp_path):
    path = os.path.join(tmp_path, "log.txt")
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.int32, [3], name="x")
        p = ek.print(x, output_stream="file://" + path)
    with gr.Session(graph=g) as sess:
        sess.run(p, {x: [1, 2, 3]})
    with io.open(path) as f:
        assert f.read().strip() == "[1 2 3]"


def test_random_ops_draw_fresh_values_every_run():
    g = gr.Graph()
    with g.as_default():
        r = ek.random.normal([4], seed=3)
    with gr.Session(graph=g) as sess:
        a, b = sess.run(r), sess.run(r)
    assert not np.array_equal(a, b)


def test_mutating_a_result_cannot_corrupt_constants_or_variables():
    g = gr.Graph()
    with g.as_default():
        c = ek.constant([1.0, 2.0])
        v = ek.Variable([3.0, 4.0], name="v")
        r = v.read_value()
        init = gr.global_variables_initializer()
    for config in (gr.SessionConfig(), gr.SessionConfig(optimize=False)):
        with gr.Session(graph=g, config=config) as sess:
            sess.run(init)
            for fetch in (c, r, v):
                out = sess.run(fetch)
                out += 100.0
            np.testing.assert_array_equal(sess.run(c), [1, 2])
            np.testing.assert_array_equal(sess.run(r), [3, 4])
            np.testing.assert_array_equal(v.numpy(), [3, 4])
