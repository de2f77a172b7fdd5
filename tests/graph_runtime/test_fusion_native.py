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
    assert _holder(plan).native is None and _holder(plan).state == "settled"
    fusion.clear_caches()
    ref, got, _, plan = fused_and_reference(g, {x: feeds[x]}, [w], numexpr=False, chunk_bytes=1024, threads=1,
                                            fast_tanh=False)
    for _ in range(4):
        assert_bitwise(ref, list(plan(feeds[x])))
    assert _holder(plan).native is None


def test_runs_group_only_ieee_arithmetic_of_one_float_dtype():
    b = fusion.ProgramBuilder()
    x = b.input(np.float32, (N,))
    i = b.input(np.int32, (N,))
    s1 = b.ufunc(np.multiply, x, x)
    s2 = b.ufunc(np.add, s1, x)
    s3 = b.ufunc(np.tanh, s2)
    s4 = b.ufunc(np.subtract, s3, x)
    s5 = b.ufunc(np.add, i, i)                          # integers stay NumPy's
    program = b.finish([s4, s5], [ek.float32, ek.int32], [])
    groups = native_backend._runs(program, list(program.instrs))
    assert [len(g) if isinstance(g, list) else g.fn.__name__ for g in groups] == [2, "tanh", "subtract", "add"]
