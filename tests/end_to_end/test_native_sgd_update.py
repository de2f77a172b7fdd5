"""Plain SGD's `w -= g * lr` in one pass (eager.native.sgd_update): the bits of NumPy's two ufuncs.

The one-pass kernel runs when the update writes into the variable's own array
(eager/variable_storage.py), numba is installed and the arrays are big: for
`ResourceApplyGradientDescent` eagerly and for the memory pass's
`InplaceApplyGradientDescent` in plans.  Each test compares it, forced on for
every size, with native kernels off, bit for bit: the kernel itself on edge
values, and SGD steps eagerly, under `@function` and in a Session.
"""
import importlib.util
import json

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native, variable_storage
from graph_runtime.graph_def import GraphDefError
from tracing import function

needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                 reason="numba is not installed (the [native] extra)")


def _edge_values(dtype, n=4096, seed=0):
    rng = np.random.default_rng(seed)
    info = np.finfo(dtype)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, info.tiny, -info.tiny, info.tiny / 4, info.max,
                        -info.max, info.eps, 1.0, -1.0], dtype)
    x = (rng.standard_normal(n) * rng.choice([1e-30, 1e-3, 1.0, 1e3, 1e30], n)).astype(dtype)
    x[:special.size] = special
    return x


@needs_numba
@pytest.mark.filterwarnings("ignore::RuntimeWarning")       # NumPy's reference meets inf and NaN on purpose
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernel_gives_numpys_bits_on_edge_values(dtype):
    assert native.available()
    w, g = _edge_values(dtype, seed=1), _edge_values(dtype, seed=2)
    g[13:26] = _edge_values(dtype)[:13][::-1]           # every special value against every other
    # w close to g * lr: the difference cancels, so a product kept wider (or a fused multiply-add) shows
    near = np.nextafter(np.multiply(g, dtype(0.1)), np.inf, dtype=dtype)
    for w_, lr in ((w, dtype(0.1)), (w, dtype(-3.0)), (w, dtype(np.inf)), (w, dtype(np.nan)), (w, dtype(0.0)),
                   (near, dtype(0.1))):
        want = np.subtract(w_, np.multiply(g, lr))
        got = w_.copy()
        native.sgd_update(got, g, lr)
        assert got.tobytes() == want.tobytes(), lr


def _spy(monkeypatch):
    calls = []
    real = native.sgd_update

    def counting(*a):
        calls.append(a[0].shape)
        return real(*a)
    monkeypatch.setattr(native, "sgd_update", counting)
    return calls


def _sgd_run(mode, steps=3):
    """Values after `steps` SGD steps (lr 0.1) of a dense layer with a 300x200 weight."""
    rng = np.random.default_rng(5)
    w0 = (rng.standard_normal((300, 200)) * 0.1).astype(np.float32)
    x = rng.standard_normal((16, 300)).astype(np.float32)
    if mode == "session":
        g = gr.Graph()
        with g.as_default():
            w = ek.Variable(w0)
            loss = ek.reduce_sum(ek.tanh(ek.matmul(ek.constant(x), w)))
            (dw,) = gr.gradients(loss, [w])
            up = w.assign_sub(dw * np.float32(0.1), read_value=False)
            init = gr.global_variables_initializer()
        sess = gr.Session(graph=g)
        sess.run(init)
        for _ in range(steps):
            sess.run(up)
        return sess.run(w)
    w = ek.Variable(w0)
    opt = ek.optimizers.SGD(0.1)

    def step(xt):
        with ek.GradientTape() as tape:
            loss = ek.reduce_sum(ek.tanh(ek.matmul(xt, w)))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
    run = function(step) if mode == "function" else step
    for _ in range(steps):
        run(ek.constant(x))
    return w.numpy()


@needs_numba
@pytest.mark.parametrize("mode", ["eager", "function", "session"])
def test_sgd_steps_give_the_same_bits_with_the_one_pass_kernel(mode, monkeypatch):
    with native.options(enabled=False):
        want = _sgd_run(mode)
    calls = _spy(monkeypatch)
    with native.options(enabled=True, min_bytes=0):
        got = _sgd_run(mode)
    assert (300, 200) in calls                  # the one-pass kernel did run
    assert got.tobytes() == want.tobytes()


def test_without_in_place_writes_the_one_pass_kernel_never_runs(monkeypatch):
    calls = _spy(monkeypatch)
    old = variable_storage.set_inplace(False)
    try:
        with native.options(enabled=True, min_bytes=0):
            got = _sgd_run("function")
    finally:
        variable_storage.set_inplace(old)
    assert calls == []
    with native.options(enabled=False):
        assert got.tobytes() == _sgd_run("function").tobytes()


def test_a_held_gradient_is_never_overwritten_eagerly():
    w = ek.Variable(np.ones((400, 300), np.float32))
    g = ek.constant(np.full((400, 300), 2.0, np.float32))
    opt = ek.optimizers.SGD(0.5)
    with native.options(min_bytes=0):
        for _ in range(2):
            opt.apply_gradients([(g, w)])
    np.testing.assert_array_equal(g.numpy(), 2.0)
    np.testing.assert_array_equal(w.numpy(), -1.0)


def test_an_imported_graph_never_decides_the_donated_sgd_update():
    """An imported InplaceApplyGradientDescent would compute the product into the caller's fed array."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        v = ek.Variable(np.ones((2, 3), np.float32), name="v")
        v.assign_sub(x * np.float32(0.5))
    gd = json.loads(json.dumps(g.as_graph_def()))
    node = next(n for n in gd["nodes"] if n["op"] == "AssignSubVariableOp")
    node["op"] = "InplaceApplyGradientDescent"
    node["inputs"] = ["Const_1:0", "x:0"]               # (alpha, delta): the product would go into x
    node["attrs"] = dict(node["attrs"], index=1)
    with gr.Graph().as_default(), pytest.raises(GraphDefError, match="only the memory pass may decide"):
        gr.import_graph_def(gd, name="")
