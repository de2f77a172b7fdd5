"""Compiled control flow: bodies run through the optimizer, While loops are one generated function,
scalar arithmetic and `x[t]` are cheap -- and every result is unchanged (eager vs Session vs @function,
optimizer on/off, gradients against central differences)."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime import fusion
from graph_runtime.control_flow import summed_products
from graph_runtime.control_flow.plans import compiled_plans
from tracing import function

RNG = np.random.default_rng(3)


def _op(g, type_):
    return next(o for o in g.get_operations() if o.type == type_)


def rnn(xs, wx, wh, b, index="getitem"):
    """A tanh RNN over xs[t] as a while_loop (works eagerly and in graphs)."""
    steps = xs.shape[0]
    ta = ek.TensorArray(xs.dtype, size=steps).unstack(xs) if index == "tensor_array" else None

    def body(t, h):
        x_t = ta.read(t) if ta is not None else xs[t]
        return t + 1, ek.tanh(ek.matmul(x_t, wx) + ek.matmul(h, wh) + b)
    return ek.while_loop(lambda t, h: t < steps, body, [ek.constant(0), ek.zeros((xs.shape[1], wh.shape[0]),
                                                                                  dtype=xs.dtype)])[1]


def rnn_numpy(xs, wx, wh, b):
    h = np.zeros((xs.shape[1], wh.shape[0]), xs.dtype)
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
    return h


def rnn_inputs(dtype=np.float32, steps=7):
    return [RNG.standard_normal(s).astype(dtype) * sc for s, sc in
            (((steps, 3, 4), 1.0), ((4, 5), 0.3), ((5, 5), 0.3), ((5,), 0.1))]


def run_session(program, values, config=None):
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder(ek.as_dtype(v.dtype), v.shape) for v in values]
        out = program(*phs)
    with gr.Session(graph=g, config=config) as sess:
        return sess.run(out, dict(zip(phs, values))), g


# ------------------------------------------------------------------ bodies are optimized
@pytest.mark.parametrize("index", ["getitem", "tensor_array"])
def test_rnn_body_is_fused_and_results_match_eager_numpy_and_function(index):
    vals = rnn_inputs()
    want = rnn_numpy(*vals)
    got, g = run_session(lambda *a: rnn(*a, index=index), vals)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rnn(*[ek.constant(v) for v in vals], index=index).numpy(), want, rtol=1e-5,
                               atol=1e-6)
    fn = function(lambda *a: rnn(*a, index=index))
    np.testing.assert_allclose(np.asarray(fn(*vals)), want, rtol=1e-5, atol=1e-6)
    body = _op(g, "StatelessWhile").get_attr("body")
    (plan,) = compiled_plans(body)
    report = plan.optimization_report
    assert report is not None and report.changes("fusion") == 3          # AddV2, AddV2, Tanh -> one kernel
    assert [s.op.type for s in plan.steps].count("FusedElementwise") == 1
    (loop,) = compiled_plans(body, "loop")
    # a counted loop (control_flow/counter.py): `t < 7` stepped by one runs over a range
    assert "for t in range(t0, end):" in loop.source and "plan(" not in loop.source.split("def loop")[1]


def test_body_constants_are_folded_and_duplicates_merged():
    def prog(x):
        def body(i, v):
            k = ek.constant(2.0, "float64") * ek.constant(3.0, "float64")   # folded once, not computed per iteration
            return i + 1, v * k + ek.sin(v) + ek.sin(v)      # sin(v) computed once (CSE)
        return ek.while_loop(lambda i, v: i < 4, body, [ek.constant(0), x])[1]
    x = np.array([0.5, -1.0, 2.0])
    # (the outer graph's loop_invariant pass would hoist the constant product out of the body: keep it in)
    got, g = run_session(prog, [x], gr.SessionConfig(disabled_passes=("loop_invariant",)))
    want = x.copy()
    for _ in range(4):
        want = want * 6.0 + np.sin(want) + np.sin(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    (plan,) = compiled_plans(_op(g, "StatelessWhile").get_attr("body"))
    rep = plan.optimization_report
    assert rep.changes("constant_folding") >= 1 and rep.changes("common_subexpression") >= 1
    assert not any(s.op.type == "Mul" and all(i.op.type == "Const" for i in s.op.inputs) for s in plan.steps)


def test_session_config_reaches_bodies():
    vals = rnn_inputs(steps=3)
    want = rnn_numpy(*vals)
    for config, fused in [(gr.SessionConfig(disabled_passes=("fusion",)), False),
                          (gr.SessionConfig(optimize=False), None), (None, True)]:
        got, g = run_session(rnn, vals, config)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        (plan,) = compiled_plans(_op(g, "StatelessWhile").get_attr("body"))
        if fused is None:
            assert plan.optimization_report is None
        else:
            assert (plan.optimization_report.changes("fusion") > 0) is fused


def test_nested_bodies_are_optimized():
    def prog(x):
        def outer(i, v):
            def inner(j, w):
                return j + 1, ek.tanh(w * 0.5 + 0.25) * 2.0
            v = ek.while_loop(lambda j, w: j < 3, inner, [ek.constant(0), v])[1]
            v = ek.cond(ek.reduce_sum(v) > 0, lambda: ek.exp(-v) * 0.5 + 1.0, lambda: v * v - 1.0 + v)
            return i + 1, v
        return ek.while_loop(lambda i, v: i < 2, outer, [ek.constant(0), x])[1]
    x = np.array([0.3, -0.2, 0.9])
    got, g = run_session(prog, [x])
    want = prog(ek.constant(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    outer_body = _op(g, "StatelessWhile").get_attr("body")
    inner_while = next(o for o in outer_body.get_operations() if o.type == "StatelessWhile")
    inner_if = next(o for o in outer_body.get_operations() if o.type == "StatelessIf")
    for body in [inner_while.get_attr("body"), inner_if.get_attr("then_branch"), inner_if.get_attr("else_branch")]:
        (plan,) = compiled_plans(body)
        assert plan.optimization_report.changes("fusion") >= 3


def test_side_effects_in_optimized_bodies_run_every_iteration_in_order():
    v = ek.Variable(np.zeros(3))

    def prog(x):
        def body(i, acc):
            v.assign_add(x * 2.0 + 1.0)           # fusable, but its effect must stay per iteration
            return i + 1, acc + v.read_value() * 0.5
        return ek.while_loop(lambda i, acc: i < 3, body, [ek.constant(0), ek.zeros_like(x)])[1]
    x = np.array([1.0, 2.0, 3.0])
    got, _ = run_session(prog, [x])
    step = x * 2.0 + 1.0
    np.testing.assert_allclose(got, (step + 2 * step + 3 * step) * 0.5)
    np.testing.assert_allclose(v.numpy(), 3 * step)


# ------------------------------------------------------------------ gradients keep using the traced body
def test_gradient_built_after_the_forward_plan_ran_is_still_exact():
    vals = [v.astype(np.float64) for v in rnn_inputs(steps=4)]
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder("float64", v.shape) for v in vals]
        y = ek.reduce_sum(rnn(*phs))
    sess = gr.Session(graph=g)
    feed = dict(zip(phs, vals))
    y0 = sess.run(y, feed)                                   # compiles the optimized (fused) loop
    with g.as_default():
        grads = gr.gradients(y, phs[1:])                     # activates the grad state afterwards
    got = sess.run(grads, feed)
    assert sess.run(y, feed) == y0
    eps = 1e-6
    for k, w in enumerate(vals[1:]):
        num = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            wp, wm = w.copy(), w.copy()
            wp[idx] += eps
            wm[idx] -= eps
            plus, minus = dict(feed), dict(feed)
            plus[phs[k + 1]], minus[phs[k + 1]] = wp, wm
            num[idx] = (sess.run(y, plus) - sess.run(y, minus)) / (2 * eps)
        np.testing.assert_allclose(got[k], num, rtol=1e-5, atol=1e-8)
    body = _op(g, "StatelessWhile").get_attr("body")
    saving = [p for p in compiled_plans(body, "loop") if "hist.append" in p.source]
    assert saving and all(p.optimization_report is not None for p in compiled_plans(body) if len(p.returns) > 2)


def _saving_body_plans(g):
    """The compiled plans of the While body that return saved values besides the loop variables."""
    return [p for p in compiled_plans(_op(g, "StatelessWhile").get_attr("body")) if len(p.returns) > 2]


def test_the_forward_loop_of_a_gradient_is_fused_and_keeps_the_unfused_bits():
    """A While whose gradient runs in the same plan saves body values per iteration; its body is optimized
    all the same (the saved tensors preserved), with NumPy kernels bit for bit what the unfused graph gives."""
    vals = rnn_inputs(steps=6)
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder("float32", v.shape) for v in vals]
        h = rnn(*phs)
        grads = gr.gradients(ek.reduce_sum(h), phs[1:])
    feed = dict(zip(phs, vals))
    with fusion.options(numexpr=False):
        fused = gr.Session(graph=g).run([h] + grads, feed)
        (plan,) = _saving_body_plans(g)
        assert plan.optimization_report.changes("fusion") == 3           # AddV2, AddV2, Tanh -> one kernel
        assert [s.op.type for s in plan.steps].count("FusedElementwise") == 1
        plain = gr.Session(graph=g, config=gr.SessionConfig(disabled_passes=("fusion",))).run([h] + grads, feed)
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a, b)
    # the same values eagerly (a tape over the Python loop) and through a traced function's gradient
    ws = [ek.Variable(v) for v in vals[1:]]
    with ek.GradientTape() as tape:
        loss = ek.reduce_sum(rnn(ek.constant(vals[0]), *ws))
    eager = tape.gradient(loss, ws)

    @function
    def traced(x):
        with ek.GradientTape() as t:
            y = ek.reduce_sum(rnn(x, *ws))
        return t.gradient(y, ws)
    for want, e, f in zip(fused[1:], eager, traced(ek.constant(vals[0]))):
        np.testing.assert_allclose(e.numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(f.numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_forward_loop_saving_a_nested_loop_s_values_is_left_as_traced():
    """A saved value that is a nested op's own saved values names tensors deeper down: left alone."""
    def prog(x, w):
        def outer(i, v):
            inner = ek.while_loop(lambda j, u: j < 2, lambda j, u: (j + 1, ek.tanh(u * w + 0.5) * 2.0),
                                  [ek.constant(0), v])[1]
            return i + 1, inner * w + 1.0
        return ek.while_loop(lambda i, v: i < 3, outer, [ek.constant(0), x])[1]
    x, w = np.array([0.3, -0.2, 0.9]), np.array([0.5, 1.5, -0.7])
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder("float64", [3]) for _ in range(2)]
        (dw,) = gr.gradients(ek.reduce_sum(prog(*phs)), phs[1:])
    with gr.Session(graph=g) as sess:
        got = sess.run(dw, dict(zip(phs, (x, w))))
    wv = ek.Variable(w)
    with ek.GradientTape() as tape:
        loss = ek.reduce_sum(prog(ek.constant(x), wv))
    np.testing.assert_allclose(got, tape.gradient(loss, wv).numpy(), rtol=1e-12)
    assert all(p.optimization_report is None for p in _saving_body_plans(g))


def test_gradient_of_x_indexed_by_the_loop_counter():
    xs = RNG.standard_normal((5, 3))

    def prog(x):
        def body(t, acc):
            return t + 1, acc + ek.sin(x[t]) * ek.cast(t + 1, "float64")
        return ek.reduce_sum(ek.while_loop(lambda t, acc: t < 5, body, [ek.constant(0), ek.zeros(3, "float64")])[1])
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float64", xs.shape)
        y = prog(x)
        (dx,) = gr.gradients(y, [x])
    with gr.Session(graph=g) as sess:
        got = sess.run(dx, {x: xs})
    np.testing.assert_allclose(got, np.cos(xs) * np.arange(1, 6)[:, None], rtol=1e-12)


# ------------------------------------------------------------------ the generated loop
def test_loop_errors_name_the_failing_body_op():
    def prog(x):
        def body(t, acc):
            return t + 1, acc + x[t]
        return ek.while_loop(lambda t, acc: t < 10, body, [ek.constant(0), ek.zeros(3)])[1]
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", [None, 3])
        y = prog(x)
    with gr.Session(graph=g) as sess:
        np.testing.assert_allclose(sess.run(y, {x: np.ones((10, 3), np.float32)}), [10, 10, 10])
        with pytest.raises(ek.errors.InvalidArgumentError, match=r"StridedSlice.*out of bounds"):
            sess.run(y, {x: np.ones((4, 3), np.float32)})


def test_while_gradient_runs_one_generated_backward_loop_with_numpy_s_sums(monkeypatch):
    """The backward walk is one generated function; with the weight terms summed per iteration (the
    one-GEMM sums off: test_loop_grad_gemm.py), capture cotangents are summed from the last iteration to
    the first (float64: the same additions in the same order as this NumPy BPTT, so equal bits)."""
    monkeypatch.setattr(summed_products, "enabled", lambda: False)
    xs, wx, wh, b = [v.astype(np.float64) for v in rnn_inputs(steps=9)]
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder("float64", v.shape) for v in (xs, wx, wh, b)]
        grads = gr.gradients(ek.reduce_sum(rnn(*phs)), phs[1:])
    with gr.Session(graph=g) as sess:
        got = sess.run(grads, dict(zip(phs, (xs, wx, wh, b))))
    hs = [np.zeros((xs.shape[1], wh.shape[0]))]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ wx + hs[-1] @ wh + b))
    dh, want = np.ones_like(hs[-1]), [None, None, None]
    for t in range(xs.shape[0] - 1, -1, -1):
        dz = dh * (1 - hs[t + 1] * hs[t + 1])
        for k, term in enumerate((xs[t].T @ dz, hs[t].T @ dz, dz.sum(0))):
            want[k] = term if want[k] is None else want[k] + term
        dh = dz @ wh.T
    for a, e in zip(got, want):
        np.testing.assert_array_equal(a, e)
    vjp = _op(g, "WhileGrad").get_attr("vjp")
    loops = compiled_plans(vjp, "grad_loop")
    assert loops and "for t in range(n - 1, -1, -1):" in loops[0].source
    assert "transpose_" not in loops[0].source     # the transposed products run without keyword arguments


@pytest.mark.parametrize("limit", [-2, 0, 3, 50])
def test_maximum_iterations_in_the_generated_loop(limit):
    def prog(x):
        return ek.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * 2.0), [ek.constant(0), x],
                             maximum_iterations=limit)
    x = np.array([1.0, 3.0])
    (i, v), _ = run_session(prog, [x])
    n = max(0, min(limit, 10))
    assert i == n
    np.testing.assert_array_equal(v, x * 2.0 ** n)
    i_e, v_e = prog(ek.constant(x))
    assert int(i_e) == n


def test_scalar_arithmetic_is_emitted_as_operators_with_unchanged_dtypes():
    def prog(a, b):
        def body(i, s, f):
            return i + 1, s * 3 - i, f * 1.5 + 0.25
        return ek.while_loop(lambda i, s, f: ek.logical_and(i < 6, s >= -1000), body, [ek.constant(0), a, b])
    a, b = np.int32(2), np.float32(0.5)
    (i, s, f), g = run_session(prog, [np.asarray(a), np.asarray(b)])
    want_s, want_f = np.int32(2), np.float32(0.5)
    for k in range(6):
        want_s, want_f = want_s * np.int32(3) - np.int32(k), want_f * np.float32(1.5) + np.float32(0.25)
    assert (type(i), type(s), type(f)) == (np.int32, np.int32, np.float32)
    assert s == want_s and f == want_f
    (loop,) = compiled_plans(_op(g, "StatelessWhile").get_attr("body"), "loop")
    assert " + s" in loop.source and " < s" in loop.source


def test_big_loop_still_has_constant_memory_and_no_recursion():
    g = gr.Graph()
    with g.as_default():
        n = gr.placeholder("int32", [])
        out = ek.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + 0.5), [ek.constant(0), ek.constant(0.0)])
    with gr.Session(graph=g) as sess:
        i, s = sess.run(out, {n: 200_000})
    assert i == 200_000 and s == 100_000.0


# ------------------------------------------------------------------ x[t] with a tensor index
def test_tensor_index_static_shape_negative_index_and_errors():
    xs = np.arange(24, dtype=np.float32).reshape(4, 6)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", [4, 6])
        t = gr.placeholder("int32", [])
        y = x[t]
        assert y.shape.as_list() == [6]
    with gr.Session(graph=g) as sess:
        for k in (0, 3, -1, -4):
            np.testing.assert_array_equal(sess.run(y, {x: xs, t: k}), xs[k])
        for k in (4, -5):
            with pytest.raises(ek.errors.InvalidArgumentError, match="StridedSlice"):
                sess.run(y, {x: xs, t: k})
    np.testing.assert_array_equal(ek.constant(xs)[ek.constant(-2)].numpy(), xs[-2])


def test_stack_of_scalars_keeps_dtype():
    for dt in ("int32", "int64", "float32", "bool"):
        got = ek.stack([ek.constant(1, dt), ek.constant(0, dt)]).numpy()
        assert got.dtype == np.dtype(dt) and got.shape == (2,)
    np.testing.assert_array_equal(ek.stack([ek.constant([1, 2]), ek.constant([3, 4])]).numpy(), [[1, 2], [3, 4]])


def test_gather_fast_path_matches_take_and_checks_bounds():
    p = np.arange(24.0).reshape(4, 6)
    for idx, axis in [(np.int32(2), 0), (np.array([3, 0, 3]), 0), (np.array([[5], [0]]), -1), (np.int64(5), 1),
                      (np.array([], np.int32), 0)]:
        got = ek.gather(ek.constant(p), ek.constant(idx), axis=axis).numpy()
        np.testing.assert_array_equal(got, np.take(p, idx, axis=axis))
    for idx, axis, bad in [(np.int32(4), 0, 4), (np.array([1, -1]), 0, -1), (np.array([0, 6]), 1, 6),
                           (np.int32(-1), -1, -1)]:
        with pytest.raises(ek.errors.InvalidArgumentError, match=f"GatherV2: index {bad} is not in"):
            ek.gather(ek.constant(p), ek.constant(idx), axis=axis)
