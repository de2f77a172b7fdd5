"""Pass tests: folding (seeds' Plus2/PlusB), the reshape bug, CSE, scale folding (FoldMultiplyIntoConv),
debug stripper, dependency optimizer, loop-invariant code motion, memory pass, and the pass manager."""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError
from graph_runtime.passes import optimize

from pass_helpers import assert_same, count_type, optimized, run_graph, single_pass, types


# ------------------------------------------------------------------ constant folding
def test_seed_plus2_plusb_folds_to_a_const():
    g = gr.Graph()
    with g.as_default():
        a = ek.constant(np.array([1.0, 2.0], np.float32), name="a")
        b = ek.constant(np.array([10.0, 20.0], np.float32), name="b")
        plus2 = ek.add(a, 2.0, name="Plus2")
        plusb = ek.add(plus2, b, name="PlusB")
    new, report = optimized(g, ["PlusB:0"])
    assert types(new) == ["Const"] and new.get_operation_by_name("PlusB").type == "Const"
    np.testing.assert_array_equal(run_graph(new, ["PlusB:0"])[0], [13.0, 24.0])
    assert report.nodes_before == 5 and report.nodes_after == 1


def test_shape_size_rank_of_known_shapes_fold():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (2, 3), name="x")
        y = ek.reshape(ek.tanh(x), ek.shape(x)) * ek.cast(ek.size(x) + ek.rank(x), ek.float32)
    new, _ = optimized(g, [y.name], {"x:0": 0})
    assert not {"Shape", "Size", "Rank"} & set(types(new))
    assert "Reshape" not in types(new)       # reshape to its own static shape is a no-op
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same(run_graph(g, [y.name], {"x:0": xv})[0], run_graph(new, [y.name], {"x:0": xv})[0])


def test_unknown_shapes_do_not_fold():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None, 3), name="x")
        s = ek.shape(x)
    new, _ = optimized(g, [s.name], {"x:0": 0})
    assert "Shape" in types(new)
    np.testing.assert_array_equal(run_graph(new, [s.name], {"x:0": np.zeros((4, 3), np.float32)})[0], [4, 3])


def test_folded_constant_size_cap():
    g = gr.Graph()
    with g.as_default():
        big = ek.fill([1000, 1000], 1.5)                    # 1e6 elements from 3 input elements: not folded
        small = ek.reduce_sum(ek.fill([10, 10], 2.0))       # folded
        y = ek.reduce_sum(big) + small
    new, report = optimized(g, [y.name])
    assert "Fill" in types(new)
    assert all(op.get_attr("value").size <= 100_000 for op in new.get_operations() if op.type == "Const")
    assert run_graph(new, [y.name])[0] == pytest.approx(1.5e6 + 200)


def test_stateful_ops_are_never_folded_or_merged():
    g = gr.Graph()
    with g.as_default():
        r1 = ek.random.normal((3,), seed=1) + 1.0
        r2 = ek.random.normal((3,), seed=1) + 1.0
        v = ek.Variable(np.ones(3, np.float32), name="v")
        read_twice = v.read_value() + v.read_value()
        init = gr.global_variables_initializer()
    new, _ = optimized(g, [r1.name, r2.name, read_twice.name, init.name])
    assert count_type(new, "RandomStandardNormal") == 2
    assert count_type(new, "ReadVariableOp") == 2
    with gr.Session(graph=g) as sess:
        sess.run(init)
        a, b, c = sess.run([r1, r2, read_twice])
    assert not np.array_equal(a, b) or True      # independent draws (same seed, separate ops)
    np.testing.assert_array_equal(c, [2, 2, 2])


def test_fed_intermediate_is_respected():
    g = gr.Graph()
    with g.as_default():
        a = ek.add(ek.constant(1.0), ek.constant(2.0), name="a")
        y = ek.multiply(a, 2.0, name="y")
    with gr.Session(graph=g) as sess:
        assert sess.run(y) == 6.0
        assert sess.run(y, {a: 10.0}) == 20.0
        assert sess.run(y, {"a:0": 5.0}) == 10.0


# ------------------------------------------------------------------ the reshape bug (never copied)
def test_reshape_of_unknown_length_still_raises_after_every_pass():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.int32, (None,), name="x")
        r = ek.reshape(x, [3])
        s = ek.shape(r)             # statically [3]: folding it must keep the reshape's check
        y = r + 0
    fetches = [r.name, s.name, y.name]
    bad = {"x:0": np.array([1, 2], np.int32)}
    graphs = [optimized(g, fetches, bad)[0]] + [single_pass(p, g, fetches, bad)[0] for p in
                                                 ["pruning", "constant_folding", "arithmetic", "common_subexpression",
                                                  "dependency", "memory", "scale_folding", "loop_invariant"]]
    for new in graphs:
        for f in fetches:
            with pytest.raises(InvalidArgumentError, match="Reshape"):
                run_graph(new, [f], bad)
        np.testing.assert_array_equal(run_graph(new, [f], {"x:0": np.array([1, 2, 3], np.int32)})[0],
                                      [1, 2, 3] if f != s.name else [3])
    with gr.Session(graph=g) as sess:        # default Session: optimized
        with pytest.raises(InvalidArgumentError, match="cannot reshape"):
            sess.run(s, bad)


def test_feeding_the_input_of_a_folded_shape_needs_nothing_upstream():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None,), name="x")
        r = ek.reshape(x, [3])
        y = ek.cast(ek.shape(r), ek.float32) * r
    with gr.Session(graph=g) as sess:      # r is fed: x need not be, and the guard must not demand it
        np.testing.assert_array_equal(sess.run(y, {r: np.ones(3, np.float32)}), [3, 3, 3])
        with pytest.raises(InvalidArgumentError, match="cannot reshape"):
            sess.run(y, {x: np.ones(2, np.float32)})


def test_reshape_to_static_shape_removed_only_when_input_fully_known():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None,), name="x")
        y = ek.reshape(ek.reshape(x, [3]), [3])    # the outer one is a no-op (input known (3,)), the inner is not
    new, _ = optimized(g, [y.name], {"x:0": 0})
    assert count_type(new, "Reshape") == 1
    with pytest.raises(InvalidArgumentError):
        run_graph(new, [y.name], {"x:0": np.ones(2, np.float32)})


# ------------------------------------------------------------------ CSE
def test_cse_merges_duplicates_and_canonicalizes_commutative_inputs():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (2, 2), name="x")
        y = gr.placeholder(ek.float32, (2, 2), name="y")
        t = ek.tanh(x) + ek.tanh(x) + ek.tanh(x)
        s = (x + y) * (y + x)
        m = ek.maximum(x, y) - ek.maximum(y, x)        # float max: not reordered (signed zeros)
        c = ek.constant(np.ones(2, np.float32)) + ek.constant(np.ones(2, np.float32))
    fetch = [t.name, s.name, m.name, c.name]
    new, stats = single_pass("common_subexpression", g, fetch, {"x:0": 0, "y:0": 0})
    assert count_type(new, "Tanh") == 1
    assert count_type(new, "AddV2") == 1 + 2 + 1       # t's two adds, s's one add, c's add
    assert count_type(new, "Maximum") == 2
    assert count_type(new, "Const") == 1
    feeds = {"x:0": np.array([[0.0, -0.0], [1, np.nan]], np.float32), "y:0": np.array([[-0.0, 0.0], [2, 1]],
                                                                                        np.float32)}
    for a, b in zip(run_graph(g, fetch, feeds), run_graph(new, fetch, feeds)):
        assert_same(a, b)


def test_cse_never_merges_into_a_fed_tensor():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        a = ek.add(x, 1.0, name="a")
        b = ek.add(x, 1.0, name="b")
        y = ek.multiply(b, 2.0, name="y")
    with gr.Session(graph=g) as sess:
        assert sess.run(y, {x: 1.0, a: 100.0}) == 4.0
        assert sess.run([a, y], {x: 1.0}) == [2.0, 4.0]


# ------------------------------------------------------------------ scale folding (FoldMultiplyIntoConv)
def test_seed_fold_multiply_into_conv():
    rng = np.random.default_rng(0)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (1, 5, 5, 2), name="x")
        w = ek.constant(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
        conv = ek.nn.conv2d(x, w, strides=1, padding="SAME")
        scale = ek.constant(np.array([0.5, 2.0, -1.0, 3.0], np.float32))   # per output channel
        y = conv * scale
    feeds = {"x:0": rng.standard_normal((1, 5, 5, 2)).astype(np.float32)}
    new, stats = single_pass("scale_folding", g, [y.name], feeds)
    assert stats.details == {"scale_after_Conv2D": 1}
    assert count_type(new, "Mul") == 0 and count_type(new, "Conv2D") == 1
    assert_same(run_graph(g, [y.name], feeds)[0], run_graph(new, [y.name], feeds)[0], exact=False)


def test_fold_scalar_scale_into_matmul_weights():
    rng = np.random.default_rng(1)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None, 3), name="x")
        w = ek.constant(rng.standard_normal((3, 2)).astype(np.float32))
        y1 = ek.matmul(x * 0.5, w)
        y2 = ek.matmul(x, w, transpose_b=False) * ek.constant(np.array([2.0, -1.0], np.float32))
    feeds = {"x:0": rng.standard_normal((4, 3)).astype(np.float32)}
    new, stats = single_pass("scale_folding", g, [y1.name, y2.name], feeds)
    assert stats.changes == 2 and count_type(new, "Mul") == 0
    for a, b in zip(run_graph(g, [y1.name, y2.name], feeds), run_graph(new, [y1.name, y2.name], feeds)):
        assert_same(a, b, exact=False)


def _transposed_conv_graph(scale, extra_use=False):
    rng = np.random.default_rng(2)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (1, 2, 5, 5), name="x")          # NCHW data, NHWC conv
        w = ek.constant(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))
        m = x * ek.constant(scale)
        t = ek.transpose(m, [0, 2, 3, 1])
        y = ek.nn.conv2d(t, w, strides=1, padding="SAME")
        fetch = [y.name] + ([ek.reduce_sum(m).name] if extra_use else [])
    feeds = {"x:0": rng.standard_normal((1, 2, 5, 5)).astype(np.float32)}
    return g, fetch, feeds


def test_fold_multiply_into_conv_through_a_transpose():
    # Grappler's pattern Conv2D(Transpose(Mul(input, scale)), W): the scalar scale moves into the weights
    g, fetch, feeds = _transposed_conv_graph(np.float32(0.25))
    new, stats = single_pass("scale_folding", g, fetch, feeds)
    assert stats.details == {"scale_before_Conv2D": 1}
    assert count_type(new, "Mul") == 0 and count_type(new, "Transpose") == 1 and count_type(new, "Conv2D") == 1
    assert_same(run_graph(g, fetch, feeds)[0], run_graph(new, fetch, feeds)[0], exact=False)
    # the whole pipeline does it too, and a Session gives the same numbers
    with gr.Session(graph=g) as sess:
        got = sess.run(fetch[0], feeds)
        assert any(p.name == "scale_folding" and p.changes for p in sess.last_optimization_report.passes)
    assert_same(got, run_graph(g, fetch, feeds)[0], exact=False)


@pytest.mark.parametrize("scale,extra_use", [(np.float32(0.0), False),                       # zero
                                              (np.array([2.0, 3.0], np.float32).reshape(1, 2, 1, 1), False),
                                              (np.float32(2.0), True)])                       # Mul used twice
def test_fold_through_transpose_refuses(scale, extra_use):
    # a per-channel scale is not a scalar (Grappler folds scalars only); a Mul with another consumer stays
    g, fetch, feeds = _transposed_conv_graph(scale, extra_use)
    new, stats = single_pass("scale_folding", g, fetch, feeds)
    assert stats.changes == 0


@pytest.mark.parametrize("scale", [np.float32(0.0), np.float32(np.inf), np.ones((1, 1, 1, 4), np.float32) * 2,
                                   np.ones((5, 1, 4), np.float32)])
def test_scale_folding_refuses_unsafe_scales(scale):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (1, 5, 5, 2), name="x")
        w = ek.constant(np.ones((3, 3, 2, 4), np.float32))
        y = ek.nn.conv2d(x, w, strides=1, padding="SAME") * ek.constant(scale)
    new, stats = single_pass("scale_folding", g, [y.name])
    if scale.ndim == 4:       # (1,1,1,4): per output channel, allowed
        assert stats.changes == 1
    else:                     # zero / inf scale, or a scale that broadcasts the output: left alone
        assert stats.changes == 0


# ------------------------------------------------------------------ debug stripper
def test_debug_stripper_is_off_by_default_and_removes_checks_when_on():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (2,), name="x")
        chk = ek.debugging.check_numerics(x, "bad x")
        a = ek.debugging.Assert(ek.reduce_all(x > 0), ["x must be positive"])
        with gr.control_dependencies([a]):
            y = ek.identity(chk * 2.0, name="y")
    feeds = {"x:0": np.array([np.nan, 1.0], np.float32)}
    with gr.Session(graph=g) as sess:
        with pytest.raises(InvalidArgumentError):
            sess.run(y, feeds)
    new, report = optimize(g, [y.name, "x:0"], passes=["pruning", "debug_stripper", "dependency"], verify=True)
    assert not {"Assert", "CheckNumerics"} & set(types(new))
    out = run_graph(new, [y.name], feeds)[0]
    assert np.isnan(out[0]) and out[1] == 2.0


# ------------------------------------------------------------------ dependency optimizer
def test_identities_removed_but_control_dependencies_kept():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(np.zeros((), np.float32), name="v")
        x = gr.placeholder(ek.float32, (), name="x")
        assign = v.assign(x)
        with gr.control_dependencies([assign]):
            snap = ek.identity(ek.identity(x))
        z = ek.identity(ek.identity(ek.identity(snap)) * 2.0, name="z")
        init = gr.global_variables_initializer()
    new, stats = single_pass("dependency", g, ["z:0", init.name], {"x:0": 0})
    assert count_type(new, "Identity") == 1           # only the fetched one
    mul = [op for op in new.get_operations() if op.type == "Mul"][0]
    assert [c.type for c in mul.control_inputs] == ["AssignVariableOp"]
    with gr.Session(graph=new, config=gr.SessionConfig(optimize=False)) as sess:
        sess.run(init.name)
        assert sess.run("z:0", {"x:0": 3.0}) == 6.0
        assert v.numpy() == 3.0


def test_redundant_control_edges_dropped():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        a = ek.tanh(x)
        b = ek.sin(a)
        c1 = ek.constant(1.0)
        with gr.control_dependencies([a.op, c1.op]):     # a is an ancestor of b anyway; a Const is nothing to wait for
            y = ek.add(b, 1.0, name="y")
    new, stats = single_pass("dependency", g, ["y:0"], {"x:0": 0})
    assert new.get_operation_by_name("y").control_inputs == ()
    assert stats.details.get("control_edge") >= 2


def _random_control_graph(seed):
    import random
    rnd = random.Random(seed)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        ts, ops = [x], []
        for _ in range(rnd.randint(5, 30)):
            with gr.control_dependencies(rnd.sample(ops, min(len(ops), rnd.choice([0, 0, 1, 2, 3])))):
                k, a = rnd.random(), rnd.choice(ts)
                t = (ek.identity(a) if k < 0.25 else ek.constant(np.float32(rnd.random())) if k < 0.35 else
                     ek.tanh(a) if k < 0.7 else a + rnd.choice(ts))
            ts.append(t)
            ops.append(t.op)
    return g, [ts[-1].name] + [t.name for t in rnd.sample(ts[1:], 2)]


def _strict_ancestors(op, memo):
    hit = memo.get(id(op))
    if hit is None:
        hit = set()
        for p in [t.op for t in op.inputs] + list(op.control_inputs):
            hit |= {id(p)} | _strict_ancestors(p, memo)
        memo[id(op)] = hit
    return hit


@pytest.mark.parametrize("seed", range(40))
def test_dependency_pass_leaves_no_implied_control_edge(seed):
    """Random graphs with control edges and Identities: every control edge left is needed (its source is
    not reached through the op's data inputs nor through another of its control inputs, and is not a
    plain Const), and values are unchanged.  (Ancestor sets track only ops that may be control sources.)"""
    g, fetch = _random_control_graph(seed)
    new, _ = single_pass("dependency", g, fetch + ["x:0"], {"x:0": 0})
    memo: dict = {}
    for op in new.get_operations():
        data = set()
        for t in op.inputs:
            data |= {id(t.op)} | _strict_ancestors(t.op, memo)
        for c in op.control_inputs:
            assert c.type != "Const" or c.control_inputs, (op.name, c.name)
            assert id(c) not in data, (op.name, c.name)
            assert not any(o is not c and id(c) in _strict_ancestors(o, memo) for o in op.control_inputs)
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    for a, b in zip(run_graph(g, fetch, {"x:0": xv}), run_graph(new, fetch, {"x:0": xv})):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ loop-invariant code motion
def _loop_graph(invariant_fn, n=5):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4, 4), name="x")
        k = gr.placeholder(ek.int32, (), name="k")
        w = ek.constant(np.eye(4, dtype=np.float32) * 0.5)

        def body(i, acc):
            return i + 1, acc + invariant_fn(x, w)
        _, acc = ek.while_loop(lambda i, acc: i < k, body, (ek.constant(0), ek.zeros((4, 4))))
    return g, acc.name


def test_licm_hoists_invariant_work_out_of_while_bodies():
    g, y = _loop_graph(lambda x, w: ek.matmul(ek.tanh(x), w))
    feeds = {"x:0": np.random.default_rng(0).random((4, 4)).astype(np.float32), "k:0": np.int32(5)}
    new, stats = single_pass("loop_invariant", g, [y], feeds)
    assert stats.details["hoisted_ops"] == 2
    body = [op for op in new.get_operations() if "While" in op.type][0].get_attr("body")
    assert not {"Tanh", "MatMul"} & {op.type for op in body.get_operations()}
    assert {"Tanh", "MatMul"} <= set(types(new))
    for k in (5, 0):
        feeds["k:0"] = np.int32(k)
        assert_same(run_graph(g, [y], feeds)[0], run_graph(new, [y], feeds)[0])


def test_licm_keeps_ops_that_may_fail_or_are_stateful():
    # a reshape whose validity depends on a run-time shape must not run when the loop runs zero times
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None,), name="x")
        k = gr.placeholder(ek.int32, (), name="k")

        def body(i, acc):
            return i + 1, acc + ek.reshape(x, [3]) + ek.random.normal((3,))
        _, acc = ek.while_loop(lambda i, acc: i < k, body, (ek.constant(0), ek.zeros((3,))))
    new, stats = single_pass("loop_invariant", g, [acc.name], {"x:0": 0, "k:0": 0})
    assert stats.changes == 0
    out = run_graph(new, [acc.name], {"x:0": np.ones(2, np.float32), "k:0": np.int32(0)})[0]
    np.testing.assert_array_equal(out, np.zeros(3))


# ------------------------------------------------------------------ memory pass
def test_memory_pass_reuses_dead_buffers_without_changing_results():
    rng = np.random.default_rng(0)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (256, 256), name="x")
        w = gr.placeholder(ek.float32, (256, 256), name="w")
        h = ek.matmul(x, w)
        y = ek.tanh(h) * 2.0 + x          # tanh writes into h's buffer; x (a feed) is never written
        z = ek.exp(x)                     # input is a feed: not in place
    feeds = {"x:0": rng.random((256, 256)).astype(np.float32), "w:0": rng.random((256, 256)).astype(np.float32)}
    keep = feeds["x:0"].copy()
    new, stats = single_pass("memory", g, [y.name, z.name], feeds)
    assert stats.changes >= 2 and count_type(new, "Exp") == 1
    for a, b in zip(run_graph(g, [y.name, z.name], feeds), run_graph(new, [y.name, z.name], feeds)):
        assert_same(a, b)
    np.testing.assert_array_equal(feeds["x:0"], keep)


def test_memory_pass_applies_relu_and_its_gradient_in_place_after_a_convolution():
    rng = np.random.default_rng(1)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (8, 32, 32, 4), name="x")      # big enough (128 KiB)
        f = ek.constant(rng.standard_normal((3, 3, 4, 8)).astype(np.float32))
        h = ek.nn.relu(ek.nn.conv2d(x, f, 1, "SAME"))                # Relu writes into the conv's output
        p = ek.nn.max_pool2d(h, 2, 2, "VALID")
        dx = gr.gradients(ek.reduce_sum(p * p), [h])[0]                # MaxPoolGrad output, dead after
        y = ek.nn.relu(x * 2.0)                                        # a ufunc op's output: in place too
        dz = gr.gradients(ek.reduce_sum(y * y), [x])[0]
    feeds = {"x:0": rng.standard_normal((8, 32, 32, 4)).astype(np.float32)}
    fetches = [h.name, dx.name, dz.name]
    new, stats = single_pass("memory", g, fetches, feeds)
    in_place = [o.attrs["op_type"] for o in new.get_operations() if o.type == "InplaceElementwise"]
    assert in_place.count("Relu") == 2 and "ReluGrad" in in_place
    for a, b in zip(run_graph(g, fetches, feeds), run_graph(new, fetches, feeds)):
        np.testing.assert_array_equal(a, b)


def test_memory_pass_stores_a_variable_update_into_its_dead_delta():
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((256, 256)).astype(np.float32)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (256, 256), name="x")
        w = ek.Variable(w0, name="w")
        v = ek.Variable(w0, name="v")
        r = w.read_value()
        up = w.assign_sub(ek.matmul(x, x) + 0.5)       # delta: a fresh AddV2 output, read once
        fed = v.assign_add(x)                          # delta: the caller's fed array, never written
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
    feeds = {"x:0": rng.standard_normal((256, 256)).astype(np.float32)}
    keep = feeds["x:0"].copy()
    new, stats = single_pass("memory", g, [r.name, up.name, fed.name], feeds)
    types_ = {o.name: o.type for o in new.get_operations()}
    assert types_[up.op.name] == "InplaceAssignUpdate" and types_[fed.op.name] == "AssignAddVariableOp"
    before, after, _ = run_graph(new, [r.name, up.name, fed.name], feeds)
    np.testing.assert_array_equal(before, w0)                  # the value read before is not overwritten
    product = ek.matmul(feeds["x:0"], feeds["x:0"]).numpy()   # the MatMul kernel's bits (big ones run in parts)
    np.testing.assert_array_equal(after, w0 - (product + np.float32(0.5)))
    np.testing.assert_array_equal(w.numpy(), after)
    np.testing.assert_array_equal(feeds["x:0"], keep)


def test_plain_sgd_update_of_a_big_variable_allocates_nothing_new():
    """`w - lr * g` with g a fresh matmul: the product stays out of fused groups and the update becomes one
    InplaceApplyGradientDescent (into the variable's array, or the product into g's buffer first: the same
    ufuncs' bits); a small variable's update stays as it was."""
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((256, 256)).astype(np.float32)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (256, 256), name="x")
        lr = ek.Variable(np.float32(0.1), name="lr")
        w, b = ek.Variable(w0, name="w"), ek.Variable(np.ones(4, np.float32), name="b")
        grad = ek.matmul(x, x)
        up = w.assign_sub(grad * ek.cast(lr.read_value(), ek.float32))
        up_b = b.assign_sub(ek.reduce_sum(x, 0)[:4] * lr.read_value())
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
    feeds = {"x:0": rng.standard_normal((256, 256)).astype(np.float32)}
    new, _ = optimized(g, [up.name, up_b.name], feeds)
    kinds = {(o.type, o.get_attr("op_type") if o.type in ("InplaceElementwise", "InplaceAssignUpdate") else None)
             for o in new.get_operations()}
    assert ("InplaceApplyGradientDescent", None) in kinds and ("AssignSubVariableOp", None) in kinds
    assert not any(k == "Mul" for _, k in kinds)         # the product is part of the update
    got = run_graph(new, [up.name], feeds)[0]
    product = ek.matmul(feeds["x:0"], feeds["x:0"]).numpy()   # the MatMul kernel's bits (big ones run in parts)
    np.testing.assert_array_equal(got, w0 - product * np.float32(0.1))


# ------------------------------------------------------------------ manager, Session config, purity
def test_optimize_report_and_purity():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (2,), name="x")
        y = ek.tanh(x * 1.0) + ek.tanh(x * 1.0) + (ek.constant(2.0) * 3.0)
        unused = ek.exp(x)  # noqa: F841 - pruned
    listing = str(g)
    new, report = optimize(g, [y], verify=True)
    assert str(g) == listing                        # the input graph is untouched
    assert new is not g and report.nodes_after < report.nodes_before
    names = [p.name for p in report.passes]
    assert names[0] == "pruning" and names[-1] == "memory" and "debug_stripper" not in names
    assert all(p.seconds >= 0 and p.nodes_before >= p.nodes_after - 5 for p in report.passes)
    assert "pruning" in str(report)
    assert report.changes("common_subexpression") >= 1


def test_session_config_switches_passes():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (2,), name="x")
        y = ek.tanh(x) + ek.tanh(x)
    feeds = {x: np.array([0.5, 1.0], np.float32)}
    with gr.Session(graph=g) as s1:
        r1 = s1.run(y, feeds)
        assert s1.last_optimization_report.changes("common_subexpression") == 1
    with gr.Session(graph=g, config=gr.SessionConfig(disabled_passes=("common_subexpression",))) as s2:
        r2 = s2.run(y, feeds)
        assert not s2.last_optimization_report.stats_for("common_subexpression")
    with gr.Session(graph=g, config=gr.SessionConfig(optimize=False)) as s3:
        r3 = s3.run(y, feeds)
        assert s3.last_optimization_report is None
    assert_same(r1, r2, exact=False)       # fused kernels may round tanh differently: not bitwise
    assert_same(r1, r3, exact=False)
    with pytest.raises(ValueError, match="unknown graph optimization pass"):
        with gr.Session(graph=g, config=gr.SessionConfig(disabled_passes=("no_such_pass",))) as s4:
            s4.run(y, feeds)


def test_optimize_accepts_a_graph_def_and_names():
    g = gr.Graph()
    with g.as_default():
        a = ek.constant(np.float32(2.0), name="a")
        y = ek.multiply(a, 3.0, name="y")
    new, report = optimize(g.as_graph_def(), ["y:0"])
    assert types(new) == ["Const"] and run_graph(new, ["y:0"])[0] == 6.0


def test_every_pass_registered_and_documented():
    from graph_runtime.passes import DEFAULT_PIPELINE, registered_passes
    reg = registered_passes()
    for name in DEFAULT_PIPELINE:
        assert name in reg and reg[name].doc
