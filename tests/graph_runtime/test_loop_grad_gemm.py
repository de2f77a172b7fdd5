"""A While gradient sums its weight terms over the iterations as one GEMM after the backward walk
(control_flow/summed_products.py): `dW = X.T @ DZ` over the stacked iterations, `db` one reduction.  The
bits are those of that GEMM (checked against NumPy), the same in a Session, under `@function` and through a
tape around a traced call; the values those of the per-iteration sums (the switch off), for early exits,
zero-trip loops, `maximum_iterations` and captured weights of any layout."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.control_flow import summed_products
from graph_runtime.control_flow.plans import compiled_plans
from tracing import function

RNG = np.random.default_rng(17)


@pytest.fixture
def switch():
    old = summed_products.set_enabled(None)
    yield summed_products.set_enabled
    summed_products.set_enabled(old)


def data(steps=12, batch=4, inputs=3, hidden=5, dtype=np.float32):
    xs = RNG.standard_normal((steps, batch, inputs)).astype(dtype)
    wx = (RNG.standard_normal((inputs, hidden)) * 0.5).astype(dtype)
    wh = (RNG.standard_normal((hidden, hidden)) * 0.5).astype(dtype)
    b = (RNG.standard_normal(hidden) * 0.1).astype(dtype)
    return xs, wx, wh, b


def rnn(xs, wx, wh, b, stop=None, limit=None, max_iter=None):
    """`h = tanh(xs[t] @ wx + h @ wh + b)` while `t < stop` (and, with `limit`, while sum(h) < limit)."""
    stop = xs.shape[0] if stop is None else stop

    def cond(t, h):
        return t < stop if limit is None else ek.logical_and(t < stop, ek.reduce_sum(h) < limit)

    def body(t, h):
        return t + 1, ek.tanh(ek.matmul(xs[t], wx) + ek.matmul(h, wh) + b)
    h0 = ek.zeros((xs.shape[1], wh.shape[0]), dtype=xs.dtype)
    return ek.while_loop(cond, body, [ek.constant(0), h0], maximum_iterations=max_iter)[1]


def session_grads(vals, **kw):
    g = gr.Graph()
    with g.as_default():
        phs = [gr.placeholder(ek.as_dtype(v.dtype), v.shape) for v in vals]
        h = rnn(*phs, **kw)
        fetches = [h] + gr.gradients(ek.reduce_sum(h * h), phs[1:])
    with gr.Session(graph=g) as sess:
        out = sess.run(fetches, dict(zip(phs, vals)))
    vjp = next(o for o in g.get_operations() if o.type == "WhileGrad").get_attr("vjp")
    return out, [p.source for p in compiled_plans(vjp, "grad_loop")]


def numpy_one_gemm_grads(xs, wx, wh, b):
    """The loop's values as NumPy computes them, then the weight sums as one GEMM over the iterations
    stacked from the last to the first."""
    hs = [np.zeros((xs.shape[1], wh.shape[0]), xs.dtype)]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ wx + hs[-1] @ wh + b))
    dh, dzs = 2 * hs[-1], []
    for t in range(xs.shape[0] - 1, -1, -1):
        dz = dh * (1 - np.square(hs[t + 1]))
        dzs.append(dz)
        dh = dz @ wh.T
    dz_all = np.concatenate(dzs)
    x_all = np.concatenate([xs[t] for t in range(xs.shape[0] - 1, -1, -1)])
    h_all = np.concatenate([hs[t] for t in range(xs.shape[0] - 1, -1, -1)])
    return hs[-1], x_all.T @ dz_all, h_all.T @ dz_all, np.add.reduce(dz_all, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weight_gradients_are_one_gemm_over_the_iterations_bit_for_bit(dtype, switch):
    vals = data(steps=40, dtype=dtype)
    got, sources = session_grads(vals)
    assert any("acc0 = _gram" in s and ".append(" in s for s in sources)
    for a, e in zip(got, numpy_one_gemm_grads(*vals)):
        assert a.dtype == e.dtype
        np.testing.assert_array_equal(a, e)


def test_the_switch_keeps_the_per_iteration_sums(switch, monkeypatch):
    vals = data(steps=40)
    switch(False)
    got_off, sources = session_grads(vals)
    assert not any(".append(" in s for s in sources)
    switch(True)
    got_on, _ = session_grads(vals)
    np.testing.assert_array_equal(got_on[0], got_off[0])          # the forward is not touched
    for a, e in zip(got_on[1:], got_off[1:]):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)
    monkeypatch.setenv("GRAPHJIT_LOOP_GRAD_GEMM", "0")
    switch(None)
    assert not summed_products.enabled()
    monkeypatch.setenv("GRAPHJIT_LOOP_GRAD_GEMM", "yes")
    with pytest.raises(ValueError, match="GRAPHJIT_LOOP_GRAD_GEMM must be 0 or 1"):
        switch(None)


def test_session_function_and_tape_give_the_same_bits(switch):
    vals = data(steps=30)
    got, _ = session_grads(vals)
    ws = [ek.Variable(v) for v in vals[1:]]

    @function
    def traced(x):
        with ek.GradientTape() as tape:
            h = rnn(x, *ws)
            y = ek.reduce_sum(h * h)
        return [h] + tape.gradient(y, ws)

    @function
    def forward(x):
        return rnn(x, *ws)
    x = ek.constant(vals[0])
    for a, e in zip(traced(x), got):
        np.testing.assert_array_equal(a.numpy(), e)
    with ek.GradientTape() as tape:                     # a tape around a traced call runs the same kernel
        h = forward(x)
        y = ek.reduce_sum(h * h)
    for a, e in zip(tape.gradient(y, ws), got[1:]):
        np.testing.assert_array_equal(a.numpy(), e)
    with ek.GradientTape() as tape:                     # eagerly: a tape over the Python loop
        h = rnn(x, *ws)
        y = ek.reduce_sum(h * h)
    for a, e in zip(tape.gradient(y, ws), got[1:]):
        np.testing.assert_allclose(a.numpy(), e, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kw", [dict(stop=0), dict(max_iter=0), dict(max_iter=5), dict(limit=1.5),
                                dict(stop=1)])
def test_early_exits_and_zero_trip_loops(kw, switch):
    vals = data(steps=12)
    switch(False)
    want, _ = session_grads(vals, **kw)
    switch(True)
    got, _ = session_grads(vals, **kw)
    for a, e in zip(got, want):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)
    if kw in (dict(stop=0), dict(max_iter=0)):
        assert not any(np.any(a) for a in got[1:])


@pytest.mark.parametrize("layout", ["F", "strided"])
def test_weights_and_inputs_of_any_layout(layout, switch):
    xs, wx, wh, b = data(steps=20)
    if layout == "F":
        xs, wh = np.asfortranarray(xs), np.asfortranarray(wh)
    else:
        wide = np.zeros((20, 4, 6), np.float32)
        wide[:, :, ::2] = xs
        xs = wide[:, :, ::2]
    switch(False)
    want, _ = session_grads((xs, wx, wh, b))
    switch(True)
    got, _ = session_grads((xs, wx, wh, b))
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("rows", [1, 64, 100, 127, 128, 129, 1600, 1601])
def test_gram_runs_small_gemms_whose_sum_is_the_product(rows, monkeypatch):
    """`gram(a, b)` is `a.T @ b` made of GEMMs of at most PART_MACS multiply-adds (BLAS keeps those on the
    calling thread), summed block after block."""
    a = RNG.standard_normal((rows, 32)).astype(np.float32)
    b = RNG.standard_normal((rows, 64)).astype(np.float32)
    q = summed_products.PART_MACS // (32 * 64)
    sizes, real = [], np.matmul

    def matmul(x, y, *args, **kw):
        sizes.append(x.shape[-2] * x.shape[-1] * y.shape[-1])
        return real(x, y, *args, **kw)
    monkeypatch.setattr(summed_products.np, "matmul", matmul)
    got = summed_products.gram(a, b)
    monkeypatch.undo()
    assert sizes and max(sizes) <= summed_products.PART_MACS
    blocks = [a[i:i + q].T @ b[i:i + q] for i in range(0, rows - rows % q if rows > q else 0, q)]
    want = a.T @ b if rows <= q else np.add.reduce(np.stack(blocks), 0)
    if rows > q and rows % q:
        want = want + a[rows - rows % q:].T @ b[rows - rows % q:]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, a.astype(np.float64).T @ b, rtol=1e-4, atol=1e-4)


def test_a_product_past_the_call_overhead_regime_stays_in_the_walk(switch):
    """A per-iteration weight GEMM bigger than PART_MACS runs in the walk as before (keeping every
    iteration's operands would hold their memory); the small bias sum is still deferred."""
    xs, wx, wh, b = data(steps=3, batch=64, inputs=80, hidden=80)
    got, sources = session_grads((xs, wx, wh, b))
    (src,) = sources
    assert 64 * 80 * 80 > summed_products.PART_MACS and "_gram" not in src and "_red" in src
    switch(False)
    want, _ = session_grads((xs, wx, wh, b))
    np.testing.assert_array_equal(got[1], want[1])           # dWx: the same per-iteration sums
    np.testing.assert_allclose(got[3], want[3], rtol=2e-5, atol=2e-5)
