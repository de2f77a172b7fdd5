"""Elementwise fusion: grouping rules, strategies, report and switches."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime import fusion
from graph_runtime.fusion import find_groups, numexpr_backend
from graph_runtime.passes import optimize

from fusion_helpers import assert_bitwise, assert_close, fused_and_reference, fused_kernels

RNG = np.random.default_rng(0)


def _chain_graph(shape=(4, 4), n=10, dtype=ek.float32):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(dtype, shape, name="x")
        y = x
        for _ in range(n):
            y = ek.sin(ek.tanh(y) * 1.5 + 0.5) - 0.25
    return g, x, y


def _rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def test_chain_becomes_one_group_and_matches():
    g, x, y = _chain_graph()
    groups = find_groups(g, frozenset({x.op.name, y.op.name}))
    assert len(groups) == 1 and len(groups[0].members) == 50
    ref, got, stats, plan = fused_and_reference(g, {x: _rand((4, 4))}, [y], numexpr=False)
    assert_bitwise(ref, got)
    assert [s.op.type for s in plan.steps] == ["FusedElementwise"]
    assert stats.changes == 50 and stats.details["groups"] == 1


def test_numexpr_strategy_small_and_close():
    if not numexpr_backend.available():
        pytest.skip("numexpr not installed")
    g, x, y = _chain_graph()
    ref, got, _, plan = fused_and_reference(g, {x: _rand((4, 4))}, [y])
    assert fused_kernels(plan)[0].strategy == "numexpr"
    # the compiled expression is called with the arrays alone (its defaults; no keywords to parse per call)
    assert "out=" not in fused_kernels(plan)[0].source
    assert_close(ref, got)


def test_one_call_numexpr_kernel_is_made_by_the_plan_under_the_lock():
    if not numexpr_backend.available():
        pytest.skip("numexpr not installed")
    g, x, y = _chain_graph()
    xv = _rand((4, 4))
    _, got, _, plan = fused_and_reference(g, {x: xv}, [y])
    k = fused_kernels(plan)[0]
    assert k.direct is not None and "with lk" in plan.source      # the plan calls the compiled expression itself
    direct, held = k.direct, []

    def spy(*args):
        held.append(direct.lock.locked())
        return direct.fn(*args)
    try:
        del k.direct             # the kernel is shared: plans compiled now call it
        _, through_kernel, _, plan2 = fused_and_reference(g, {x: xv}, [y])
        k.direct = numexpr_backend.DirectCall(spy, direct.lock, direct.args)
        _, spied, _, _ = fused_and_reference(g, {x: xv}, [y])
    finally:
        k.direct = direct
    assert "with lk" not in plan2.source
    assert_bitwise(got, through_kernel)
    assert_bitwise(got, spied)
    assert held == [True]
    # a rank-0 result is a NumPy scalar, which the kernel makes: no direct call
    program = [s for s in plan.steps if s.op.type == "FusedElementwise"][0].op.get_attr("program")
    k0 = fusion.build_for_shapes(program, [()] * len(program.input_slots), fusion.FusionOptions(force="numexpr"))
    assert k0.strategy == "numexpr" and getattr(k0, "direct", None) is None


def _divide_graph():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (64,), name="x")
        y = ek.sqrt(ek.abs(x) / 3.0 + 0.1) * -1.5
    return g, x, y


def test_numexpr_compiles_graph_constants_in_and_stays_exact():
    if not numexpr_backend.available():
        pytest.skip("numexpr not installed")
    g, x, y = _divide_graph()
    xv = _rand((64,)) * 100
    ref, got, _, plan = fused_and_reference(g, {x: xv}, [y])
    k = fused_kernels(plan)[0]
    assert k.strategy == "numexpr"
    assert k.direct.args == (0,)              # the constants are in the compiled expression, not operands
    assert_bitwise(ref, got)                  # x / 3 stays a division (numexpr's optimizer would multiply by 1/3)
    ref, got, _, _ = fused_and_reference(g, {x: xv}, [y], numexpr=False)
    assert_bitwise(ref, got)


def test_numexpr_constants_as_operands_when_they_cannot_be_compiled_in(monkeypatch):
    if not numexpr_backend.available():
        pytest.skip("numexpr not installed")

    def broken(*args):
        raise AttributeError("stringToExpression")
    monkeypatch.setattr(numexpr_backend, "_inline", broken)
    fusion.clear_caches()
    try:
        g, x, y = _divide_graph()
        ref, got, _, plan = fused_and_reference(g, {x: _rand((64,)) * 100}, [y])
        assert len(fused_kernels(plan)[0].direct.args) == 4     # x and the three constants
        assert_bitwise(ref, got)
    finally:
        fusion.clear_caches()


def test_numexpr_only_plan_has_no_warning_guard_and_gives_ieee_values_with_warnings_as_errors():
    if not numexpr_backend.available():
        pytest.skip("numexpr not installed")
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        y = ek.exp(x / (x - x)) * 2.0
    xv = np.array([1.0, 0.0, -1.0, 3e38], np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        want = np.exp(xv / (xv - xv)) * np.float32(2)
    results = {}
    for numexpr in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _, got, _, plan = fused_and_reference(g, {x: xv}, [y], numexpr=numexpr)
        results[numexpr] = got[0]
        assert fused_kernels(plan)[0].strategy == ("numexpr" if numexpr else "numpy")
        assert ("except _fpraised" in plan.source) is not numexpr   # NumPy kernels keep the guard
    assert_bitwise([want], [results[False]])
    np.testing.assert_array_equal(results[True], want)      # IEEE values (nan, inf, 0), no error


def test_numexpr_switched_off(monkeypatch):
    monkeypatch.setattr(numexpr_backend, "enabled", False)
    g, x, y = _chain_graph()
    ref, got, _, plan = fused_and_reference(g, {x: _rand((4, 4))}, [y])
    assert fused_kernels(plan)[0].strategy == "numpy"
    assert_bitwise(ref, got)


def test_chunked_strategy_is_bitwise_and_uses_few_buffers():
    g, x, y = _chain_graph(shape=(3000,), n=4)
    ref, got, _, plan = fused_and_reference(g, {x: _rand((3000,))}, [y], chunk_bytes=1024, threads=1)
    k = fused_kernels(plan)[0]
    assert k.strategy == "chunked"
    assert k.source.count("_empty") <= 3       # one output + at most a couple of chunk buffers
    assert_bitwise(ref, got)


def test_chunked_threads_and_rows_layout(monkeypatch):
    from graph_runtime.fusion import kernel
    monkeypatch.setattr(kernel, "THREAD_MIN_ELEMENTS", 1)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (50, 40), name="x")
        b = gr.placeholder(ek.float32, (40,), name="b")
        c = gr.placeholder(ek.float32, (50, 1), name="c")
        y = ek.nn.relu(x * c + ek.exp(b))          # exp(b) is hoisted out of the row loop
        z = ek.tanh(y) - c
    feeds = {x: _rand((50, 40)), b: _rand((40,)), c: _rand((50, 1))}
    ref, got, _, plan = fused_and_reference(g, feeds, [y, z], chunk_bytes=1024, threads=2)
    k = fused_kernels(plan)[0]
    assert k.strategy == "chunked" and "STEP" in k.source
    assert_bitwise(ref, got)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunked_maximum_against_a_constant_runs_on_a_row_with_the_same_bits(dtype):
    # relu's maximum(x, 0) and a clip's minimum(x, c) against a rank-0 operand take NumPy's scalar loop;
    # the chunked kernel compares with a chunk-long row of the value instead: the same bits, NaN payloads
    # and signed zeros included, in a short last chunk too
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(dtype, (3001,), name="x")
        y = ek.minimum(ek.nn.relu(x * 2.0), -0.0) + ek.maximum(x, 0.5)
    xv = _rand((3001,), dtype)
    payload = np.array([0x7FC00123 if dtype == np.float32 else 0x7FF8000000000123],
                       np.uint32 if dtype == np.float32 else np.uint64).view(dtype)[0]
    xv[:8] = [payload, -payload, -0.0, 0.0, np.inf, -np.inf, 0.5, -0.5]
    ref, got, _, plan = fused_and_reference(g, {x: xv}, [y], numexpr=False, chunk_bytes=1024, threads=1)
    k = fused_kernels(plan)[0]
    assert k.strategy == "chunked"
    assert k.source.count("R") >= 3 and "= R" in k.source     # three constants, each given as a row
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    assert np.array_equal(np.asarray(ref[0]).view(bits), np.asarray(got[0]).view(bits))


def test_non_contiguous_input_falls_back():
    g, x, y = _chain_graph(shape=(64, 64), n=2)
    xv = np.asfortranarray(_rand((64, 64)))
    ref, got, _, plan = fused_and_reference(g, {x: xv}, [y], chunk_bytes=1024, threads=1)
    assert fused_kernels(plan)[0].strategy == "chunked"
    assert_bitwise(ref, got)


def test_reductions_and_stateful_ops_split_groups():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (8,), name="x")
        a = ek.exp(x) + 1.0
        s = ek.reduce_sum(a)                      # not elementwise: a group boundary
        b = ek.tanh(a - s) * 2.0
    groups = find_groups(g, frozenset({"x", b.op.name}))
    types = [sorted(m.type for m in grp.members) for grp in groups]
    assert all("Sum" not in t for t in types)
    assert len(groups) == 2
    first = groups[0]
    assert [m.name for m in first.outputs] == [a.op.name]   # used by the reduction and the next group
    ref, got, _, _ = fused_and_reference(g, {x: _rand((8,))}, [b], numexpr=False)
    assert_bitwise(ref, got)


def test_multi_output_group():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (5, 3), name="x")
        a = ek.sigmoid(x) * 3.0
        b = ek.square(a) - x
        m = ek.reduce_max(a)                        # a leaves the group
    ref, got, stats, plan = fused_and_reference(g, {x: _rand((5, 3))}, [b, m], numexpr=False)
    assert_bitwise(ref, got)
    info = stats.details["fused"][0]
    assert len(info.outputs) == 2


def test_convexity_no_cycle_through_outside_op():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (6,), name="x")
        a = ek.exp(x)
        r = ek.reduce_sum(a, keepdims=True)         # outside the group, between two members
        b = a * r + a
    groups = find_groups(g, frozenset({"x", b.op.name}))
    for grp in groups:
        names = {m.name for m in grp.members}
        assert not ({a.op.name, b.op.name} <= names)
    ref, got, _, _ = fused_and_reference(g, {x: _rand((6,))}, [b], numexpr=False)
    assert_bitwise(ref, got)


def test_fed_intermediate_is_respected():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        a = ek.tanh(x) * 2.0
        b = ek.exp(a) + 1.0
    av = np.full((4,), 7.0, np.float32)
    ref, got, _, _ = fused_and_reference(g, {x: _rand((4,)), a: av}, [b], numexpr=False)
    np.testing.assert_array_equal(got[0], np.exp(av) + np.float32(1))
    assert_bitwise(ref, got)


def test_rank0_outputs_are_numpy_scalars_and_identity_outputs():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (), name="x")
        y = ek.identity(ek.exp(x) * 2.0 + 1.0)
    ref, got, _, _ = fused_and_reference(g, {x: np.float32(0.5)}, [y], numexpr=False)
    assert_bitwise(ref, got)
    assert isinstance(got[0], np.generic)


def test_casts_bools_and_select():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3, 4), name="x")
        y = gr.placeholder(ek.float32, (4,), name="y")
        m = ek.logical_and(x > y, ek.logical_not(ek.is_nan(x)))
        z = ek.where(m, ek.cast(x, ek.float64) * 2.0, ek.cast(y, ek.float64))
        w = ek.cast(ek.floor(z), ek.int32) + 1
    xv = _rand((3, 4))
    xv[0, 0] = np.nan
    ref, got, _, plan = fused_and_reference(g, {x: xv, y: _rand((4,))}, [z, w], numexpr=False)
    # z is fetched (so possibly fed): a preserved op is only ever a group sink, so w starts a second group
    assert len(fused_kernels(plan)) == 2
    assert_bitwise(ref, got)
    ref, got, _, plan = fused_and_reference(g, {x: xv, y: _rand((4,))}, [w], numexpr=False)
    assert len(fused_kernels(plan)) == 1
    assert_bitwise(ref, got)


def test_unknown_dims_specialize_per_shape():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None, 3), name="x")
        y = ek.tanh(x * 2.0) + 1.0
    ref_plan = gr.compile_plan(g, [x], [y])
    with fusion.options(numexpr=False, chunk_bytes=1024, threads=1):
        out, _ = optimize(g, ["x", y.name], passes=["fusion"])
        plan = gr.compile_plan(out, [out.get_tensor_by_name("x:0")], [out.get_tensor_by_name(y.name)])
    assert fused_kernels(plan)[0].strategy == "dynamic"
    for n in (1, 5, 2000, 5):
        xv = _rand((n, 3))
        assert_bitwise(ref_plan(xv), plan(xv))


def test_session_report_lists_groups_and_switches():
    g, x, y = _chain_graph(n=3)
    xv = _rand((4, 4))
    with gr.Session(graph=g) as sess:
        r_on = sess.run(y, {x: xv})
        report = sess.last_optimization_report
    stats = report.stats_for("fusion")
    assert stats and stats[0].details["groups"] == 1
    text = str(report)
    assert "/fused: 15 ops" in text and "Tanhx3" in text
    with gr.Session(graph=g, config=gr.SessionConfig(disabled_passes=("fusion",))) as sess:
        r_off = sess.run(y, {x: xv})
        assert not sess.last_optimization_report.stats_for("fusion")
    np.testing.assert_allclose(r_on, r_off, rtol=1e-5)
    with fusion.options(enabled=False):
        with gr.Session(graph=g) as sess:
            sess.run(y, {x: xv})
            assert sess.last_optimization_report.stats_for("fusion")[0].changes == 0


def test_pass_option_and_min_ops():
    g, x, y = _chain_graph(n=1)
    out, report = optimize(g, ["x", y.name], options={"fusion": {"min_ops": 10}})
    assert report.changes("fusion") == 0
    out, report = optimize(g, ["x", y.name], options={"fusion": {"enabled": False}})
    assert report.changes("fusion") == 0
    out, report = optimize(g, ["x", y.name])
    assert report.changes("fusion") == 5
    assert any(op.type == "FusedElementwise" for op in out.get_operations())


def test_program_listing_and_reference_interpreter():
    g, x, y = _chain_graph(n=1)
    out, _ = optimize(g, ["x", y.name], passes=["fusion"])
    op = next(o for o in out.get_operations() if o.type == "FusedElementwise")
    prog = op.get_attr("program")
    assert "tanh" in prog.listing() and "5 ops" in prog.summary()
    xv = _rand((4, 4))
    ref = gr.compile_plan(g, [x], [y])(xv)[0]
    consts = [t.op.get_attr("value") for t in op.inputs if t.op.type == "Const"]
    args = [xv if t.op.type == "Placeholder" else t.op.get_attr("value") for t in op.inputs]
    assert len(consts) == len(args) - 1
    np.testing.assert_array_equal(fusion.interpret(prog, *args), ref)
    assert op.opdef.differentiable is False


def test_integer_and_mixed_groups_stay_exact():
    g = gr.Graph()
    with g.as_default():
        i = gr.placeholder(ek.int32, (7,), name="i")
        j = ek.maximum(i * 3 - 2, ek.abs(i)) + ek.floordiv(i, 2)
        f = ek.cast(j, ek.float32) * 0.5
    iv = np.arange(-3, 4, dtype=np.int32)
    ref, got, _, _ = fused_and_reference(g, {i: iv}, [j, f])
    assert_bitwise(ref, got)


def test_two_groups_never_feed_each_other():
    # found by hypothesis: sel(eq, x, tanh(tanh(x))) and sel(eq, x, tanh(x)) must not contract into a cycle
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3, 4), name="x")
        m = ek.equal(x, x)
        t = ek.tanh(x)
        ek.tanh(t)
        u = ek.tanh(t)
        a = ek.where(m, x, u)
        b = ek.where(m, x, t)
    preserve = frozenset({"x", u.op.name, b.op.name, a.op.name})
    groups = find_groups(g, preserve)
    from graph_runtime.fusion.groups import Group, contracted_order, dissolve_cycles
    order, stuck = contracted_order(g, groups)
    assert order is not None and not stuck
    # two hand-made groups that do feed each other are detected and one is dropped
    ops = {o.name: o for o in g.get_operations()}
    bad = [Group([ops[m.op.name], ops[a.op.name]]), Group([ops[t.op.name], ops[u.op.name], ops[b.op.name]])]
    assert contracted_order(g, bad)[0] is None
    kept, order = dissolve_cycles(g, bad)
    assert len(kept) == 1 and order is not None
    ref, got, _, _ = fused_and_reference(g, {x: _rand((3, 4))}, [u, a, b], numexpr=False)
    assert_bitwise(ref, got)


def test_optimized_graph_exports_to_graph_def():
    import json
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3, None), name="x")
        y = ek.cast(ek.nn.relu(ek.sigmoid(x) - 0.5), ek.float64) * 2.0
    out, _ = optimize(g, ["x", y.name], passes=["fusion"])
    g2 = gr.Graph()
    with g2.as_default():
        gr.import_graph_def(json.loads(json.dumps(out.as_graph_def())), name="")
    g2.verify()
    xv = _rand((3, 5))
    p1 = gr.compile_plan(g, [x], [y])
    p2 = gr.compile_plan(g2, [g2.get_tensor_by_name("x:0")], [g2.get_tensor_by_name(y.name)])
    assert_bitwise(p1(xv), p2(xv))
    assert [o.type for o in g2.get_operations()].count("FusedElementwise") == 1


def test_fusion_never_reorders_writes():
    # regression (found by test_scheduling's property test): x+x, tanh and (x+x)+w2 fused into one group fed
    # by the second assign_add and feeding the first would run the second write first (a wrong value, silently)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [3], name="x")
        v = ek.Variable(np.zeros(3), name="v")
        v1 = x + x
        a1 = v.assign_add(ek.tanh(v1))
        a2 = v.assign_add(ek.tanh(x))
        out = v1 + a2
        init = gr.global_variables_initializer()
    xv = np.array([0.5, -1.0, 2.0])
    first = np.tanh(xv + xv)
    with gr.Session(graph=g) as sess:
        sess.run(init)
        got_a1, got_out = sess.run([a1, out], {x: xv})
    np.testing.assert_allclose(got_a1, first)
    np.testing.assert_allclose(got_out, xv + xv + first + np.tanh(xv))


def test_numexpr_outside_its_checked_releases_is_not_used_and_results_stay_right(monkeypatch):
    """numexpr's compile-once interface is semi-private: an unchecked release falls back to NumPy kernels."""
    import numexpr
    if not numexpr_backend.available():
        pytest.skip(f"numexpr not used here: {numexpr_backend.unavailable_reason()}")
    assert numexpr_backend.unavailable_reason() == ""
    monkeypatch.setattr(numexpr, "__version__", "3.1.0")
    monkeypatch.setattr(numexpr_backend, "_ne", None)
    assert not numexpr_backend.available()
    assert "outside the checked releases" in numexpr_backend.unavailable_reason()
    fusion.clear_caches()
    g, x, y = _chain_graph(n=1)
    xv = np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4)
    ref, got, stats, plan = fused_and_reference(g, {x: xv}, [y], force="numexpr")   # gets NumPy instead
    assert [k.strategy for k in fused_kernels(plan)] == ["numpy"]
    np.testing.assert_array_equal(got[0], ref[0])
    monkeypatch.setattr(numexpr_backend, "_ne", None)       # back to the real check after the test
    fusion.clear_caches()


def test_numexpr_whose_interface_changed_is_not_used(monkeypatch):
    from numexpr import necompiler
    if not numexpr_backend.available():
        pytest.skip(f"numexpr not used here: {numexpr_backend.unavailable_reason()}")
    monkeypatch.setattr(necompiler, "NumExpr", lambda *a, **k: (_ for _ in ()).throw(TypeError("new API")))
    monkeypatch.setattr(numexpr_backend, "_ne", None)
    assert not numexpr_backend.available()
    assert "compile-once interface failed" in numexpr_backend.unavailable_reason()
    monkeypatch.undo()
    monkeypatch.setattr(numexpr_backend, "_ne", None)
    assert numexpr_backend.available()


def test_threaded_chunks_are_several_per_thread_taken_in_turns():
    # the body's steps are the unit of work: 2 threads over 64 steps cut the range into 4 chunks a thread
    # (so a thread the OS runs late holds a small share), covering it exactly once
    from graph_runtime.fusion.kernel import make_threaded_runner
    from eager import parallel
    seen, lock = [], threading.Lock()

    def body(lo, hi):
        with lock:
            seen.append((lo, hi))
    make_threaded_runner(2)(body, (), 64 * 1000, 1000)
    assert len(seen) == parallel.MAX_CHUNKS_PER_THREAD * 2
    covered = sorted(seen)
    assert covered[0][0] == 0 and covered[-1][1] == 64 * 1000
    assert all(a[1] == b[0] for a, b in zip(covered, covered[1:]))
