"""Big chunked kernels promoted to compiled arithmetic loops (numba, `[native]`): NumPy's bits, or no promotion.

The thresholds are lowered here (the defaults keep numba out of every process that does not call a big
kernel often) and chunks made small, so that a few thousand elements exercise the chunk loop.
"""
from __future__ import annotations

import importlib
import importlib.util

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native
from graph_runtime import fusion
from graph_runtime.fusion import native_backend
from graph_runtime.fusion.autotune import TunedKernel
from tracing import function

from fusion_helpers import assert_bitwise, fused_and_reference, fused_kernels
from native_marks import needs_native

kernel_module = importlib.import_module("graph_runtime.fusion.kernel")
# find_spec, not native.available(): collecting this file must not import numba (about a second, on every
# xdist worker, most of which never run these tests)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba ([native]) not installed")

N = 5000


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    monkeypatch.setattr(kernel_module, "NATIVE_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(kernel_module, "PROMOTE_AFTER", 2)
    fusion.clear_caches()
    yield
    fusion.clear_caches()


def _values(dtype):
    v = np.random.default_rng(1).standard_normal(N).astype(dtype) * 3
    v[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30, 2.0]
    return v


def _expr(m, x, y):
    """Arithmetic runs around a tanh, with a division that meets zeros and an output read again."""
    a = (x * 2.0 + 1.0) / (y - 2.0)
    t = m.tanh(a)
    b = m.square(t * a - x) + 3.0
    return -(b / y) * (a - 0.5)


def _short(m, x, y):
    """One arithmetic run (with a division meeting zeros) after a tanh: one compiled loop."""
    return m.tanh(x) * ((x * 2.0 - y) / y)


def _holder(plan):
    k = fused_kernels(plan)[0]
    assert isinstance(k, TunedKernel)
    return k


# Each distinct loop costs numba a compile per dtype (0.3-0.6 s): float64 gets the one-loop program, whose
# compiled loop the traced test below reuses (same program, same loop source).
@needs_native
@pytest.mark.parametrize("dtype, expr", [(ek.float32, _expr), (ek.float64, _short)], ids=["float32", "float64"])
def test_promoted_kernel_gives_the_numpy_kernels_bits(dtype, expr):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(dtype, (N,), name="x")
        y = gr.placeholder(dtype, (N,), name="y")
        z = expr(ek, x, y)
    feeds = {x: _values(dtype.np_dtype), y: _values(dtype.np_dtype)[::-1].copy()}
    # fast_tanh off: the float32 program's tanh is NumPy's (test_fusion_fast_tanh.py tests the other)
    ref, got, _, plan = fused_and_reference(g, feeds, [z], numexpr=False, chunk_bytes=1024, threads=1,
                                            fast_tanh=False)
    holder = _holder(plan)
    for _ in range(8):        # promotion (checked against NumPy on that call), then the timed trial
        assert_bitwise(ref, list(plan(*feeds.values())))
    assert holder.native is not None and holder.state == "settled"
    holder.pin("native, serial")
    for seed in range(3):
        feeds = {x: _values(dtype.np_dtype) * (seed + 1), y: np.roll(_values(dtype.np_dtype), seed + 1)}
        with np.errstate(all="ignore"):
            want = gr.compile_plan(g, list(feeds), [z])(*feeds.values())
        assert_bitwise(list(want), list(plan(*feeds.values())))


@needs_native
def test_traced_function_promotes_and_matches_eager():
    xv = _values(np.float64)
    yv = xv[::-1].copy() + 0.5
    with fusion.options(chunk_bytes=1024, threads=1):
        f = function(lambda a, b: _short(ek, a, b))
        results = [f(ek.constant(xv), ek.constant(yv)).numpy() for _ in range(10)]
    want = _short(ek, ek.constant(xv), ek.constant(yv)).numpy()
    for r in results:
        assert_bitwise([want], [r])
    holder = _holder(f.get_concrete_function(ek.constant(xv), ek.constant(yv))._plan)
    assert holder.native is not None and holder.state == "settled"


def test_no_promotion_without_native_or_when_nothing_to_compile():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (N,), name="x")
        y = gr.placeholder(ek.float32, (N,), name="y")
        z = _expr(ek, x, y)
        w = ek.tanh(ek.exp(x))                          # no arithmetic run to compile
    feeds = {x: _values(np.float32), y: _values(np.float32) + 0.5}
    with native.options(enabled=False):
        _, _, _, plan = fused_and_reference(g, feeds, [z], numexpr=False, chunk_bytes=1024, threads=1)
        for _ in range(4):
            plan(*feeds.values())
    assert not isinstance(fused_kernels(plan)[0], TunedKernel)     # nothing can compile: no timing wrapper
    fusion.clear_caches()
    ref, got, _, plan = fused_and_reference(g, {x: feeds[x]}, [w], numexpr=False, chunk_bytes=1024, threads=1,
                                            fast_tanh=False)
    for _ in range(4):
        assert_bitwise(ref, list(plan(feeds[x])))
    assert getattr(fused_kernels(plan)[0], "native", None) is None


def test_runs_group_only_ieee_arithmetic_of_one_float_dtype():
    b = fusion.ProgramBuilder()
    x = b.input(np.float32, (N,))
    i = b.input(np.int32, (N,))
    s1 = b.ufunc(np.multiply, x, x)
    s2 = b.ufunc(np.add, s1, x)
    s3 = b.ufunc(np.tanh, s2)
    s4 = b.ufunc(np.subtract, s3, x)
    s5 = b.ufunc(np.maximum, s4, x)                     # maximum, greater and a bool factor join the run
    s6 = b.ufunc(np.multiply, x, b.ufunc(np.greater, s5, x))
    s7 = b.ufunc(np.add, i, i)                          # integers stay NumPy's
    s8 = b.ufunc(np.greater, i, i)
    program = b.finish([s6, s7, s8], [ek.float32, ek.int32, ek.bool], [])
    groups = native_backend._runs(program, list(program.instrs))
    assert [len(g) if isinstance(g, list) else g.fn.__name__ for g in groups] == [2, "tanh", 4, "add", "greater"]


_SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-30]


def _special_pairs(dtype):
    """x, y of length N whose first entries are every pair of special values (and a NaN with a payload)."""
    nan_payload = np.array([np.nan], dtype)
    nan_payload.view(np.uint32 if dtype == np.float32 else np.uint64)[0] |= 5
    specials = np.concatenate([np.array(_SPECIALS, dtype), nan_payload])
    xs, ys = np.meshgrid(specials, specials)
    x, y = _values(dtype), np.roll(_values(dtype), 7)
    x[:xs.size], y[:ys.size] = xs.ravel(), ys.ravel()
    return x, y


def fused_programs(plan) -> list:
    return [s.op.get_attr("program") for s in plan.steps if s.op.type == "FusedElementwise"]


def _relu_step(x, y):
    """The CNN's loss-gradient kernel's shape: maximum, relu, its square, and relu's gradient (a multiply by
    the bool `greater`), over special values in both operands."""
    from eager.dispatch import execute
    from eager.registry import get
    r = ek.nn.relu(ek.maximum(x, y))
    return ek.square(r), execute(get("ReluGrad"), (r * y * 2.0, r), {})


@needs_native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_maximum_greater_and_bool_multiply_compile_with_numpys_bits(dtype):
    xv, yv = _special_pairs(dtype)
    want = [t.numpy() for t in _relu_step(ek.constant(xv), ek.constant(yv))]
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.as_dtype(dtype), (N,), name="x")
        y = gr.placeholder(ek.as_dtype(dtype), (N,), name="y")
        outs = list(_relu_step(x, y))
    feeds = {x: xv, y: yv}
    ref, _, _, plan = fused_and_reference(g, feeds, outs, numexpr=False, chunk_bytes=1024, threads=1)
    assert_bitwise(want, ref)
    holder = _holder(plan)
    for _ in range(4):
        plan(*feeds.values())
    assert holder.native is not None and holder.state == "settled"
    program = fused_programs(plan)[0]
    assert all(isinstance(g, list) for g in native_backend._runs(program, list(program.instrs)))  # no NumPy call
    holder.pin("native, serial")
    assert_bitwise(want, list(plan(*feeds.values())))
    with gr.Session(graph=g) as sess:
        assert_bitwise(want, list(sess.run(outs, feed_dict=feeds)))
    with fusion.options(chunk_bytes=1024, threads=1):
        f = function(_relu_step)
        for _ in range(4):
            got = [t.numpy() for t in f(ek.constant(xv), ek.constant(yv))]
    assert_bitwise(want, got)


def test_a_kernel_that_cannot_compile_is_not_timed_for_promotion():
    # a bias broadcast over rows is not a flat layout, which the compiled loops do not take: the kernel
    # stays the plain chunked one, with no timing wrapper on its calls
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (50, 100), name="x")
        b = gr.placeholder(ek.float32, (100,), name="b")
        z = ek.tanh(x + b) * 2.0
    feeds = {x: np.random.default_rng(2).standard_normal((50, 100)).astype(np.float32),
             b: np.linspace(-1, 1, 100, dtype=np.float32)}
    ref, got, _, plan = fused_and_reference(g, feeds, [z], numexpr=False, chunk_bytes=1024, threads=1)
    (k,) = fused_kernels(plan)
    assert not isinstance(k, TunedKernel)
    for _ in range(4):
        assert_bitwise(ref, list(plan(*feeds.values())))
