"""The vectorized float32 tanh of big compiled fused kernels (graph_runtime/fusion/fast_tanh.py).

Its accuracy was checked over all 2^32 inputs offline (benchmarks/tanh_ulp.py: at most 1 ulp from
NumPy's `np.tanh`); here a dense sample of bit patterns (the region near 0 where tanh(x) ~ x densest)
and the edge values, in its NumPy form and compiled; then through `@function` and a compiled plan: every variant
of a kernel (before and after promotion, serial or split) gives the same bits, within 1 ulp of eager
execution, and `fast_tanh=False` (or no numba) gives eager's bits.
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
from graph_runtime.fusion import TRANSCENDENTAL_MAX_ULP, FusionOptions
from graph_runtime.fusion.autotune import TunedKernel
from graph_runtime.fusion import native_backend
from graph_runtime.fusion.fast_tanh import tanh32_numpy
from tracing import function

from fusion_helpers import assert_bitwise, assert_within_ulp, fused_and_reference, fused_kernels
from native_marks import needs_native

kernel_module = importlib.import_module("graph_runtime.fusion.kernel")
needs_numba = pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba ([native]) not installed")
F32 = np.finfo(np.float32)
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1.1754942e-38, F32.tiny, 1e-30,
                  2.0 ** -12, 3e-4, 0.25, 0.5493061, 1.0, 2.0, 9.0, 9.01, 9.02, 9.5, 10.0, 88.7, 1e30, F32.max,
                  -F32.max, -9.02, -0.5493061, -3e-4, -1e-30], np.float32)


def _bits(x) -> int:
    return int(np.float32(x).view(np.uint32))


def _sample() -> np.ndarray:
    """Every 4099th float32 bit pattern, every 257th from 2^-30 to 2^-8 (where tanh(x) rounds to x or
    nearly), every pattern of a stretch around 0.55 (tanh = 0.5), and the edges."""
    spread = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near0 = np.arange(_bits(2.0 ** -30), _bits(2.0 ** -8), 257, dtype=np.uint32).view(np.float32)
    mid = np.arange(_bits(0.55) - 25_000, _bits(0.55) + 25_000, dtype=np.uint32).view(np.float32)
    return np.concatenate([spread, near0, -near0, mid, -mid, EDGES])


def _ulps(a, b) -> np.ndarray:
    """Distance on the ordered float32 line (NaN pairs removed by the caller)."""
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def test_edge_values():
    with np.errstate(all="ignore"):
        got, want = tanh32_numpy(EDGES), np.tanh(EDGES)
    assert got.dtype == np.float32
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(np.signbit(got[:4]), [False, True, False, True])        # +-0 keep their sign
    assert got[2] == 1.0 and got[3] == -1.0
    assert np.array_equal(got[6:10], EDGES[6:10])                                   # denormals and tiny: x
    assert (np.abs(got[np.abs(EDGES) >= 9.02]) == 1.0).all()
    assert _ulps(got[~nan], want[~nan]).max() <= 1


def test_dense_sample_within_one_ulp_of_numpy_and_the_documented_bound():
    x = _sample()
    with np.errstate(all="ignore"):
        got, want = tanh32_numpy(x), np.tanh(x)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    d = _ulps(got[~nan], want[~nan])
    assert d.max() <= 1 <= TRANSCENDENTAL_MAX_ULP
    assert (d == 0).mean() > 0.9          # mostly NumPy's very bits


def test_numpy_form_writes_into_out_even_in_place():
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    want = tanh32_numpy(x)
    y = x.copy()
    assert tanh32_numpy(y, y) is y and np.array_equal(y, want)
    z = np.empty((), np.float32)
    tanh32_numpy(np.asarray(np.float32(2.0)), out=z)
    assert z == tanh32_numpy(np.array([2.0], np.float32))[0]


@needs_numba
def test_compiled_gives_the_numpy_forms_bits():
    x = _sample()
    assert native.available()
    core = native_backend.tanh32_compiled()       # the function the fused kernels' loops call

    def fill(a, out):
        for i in range(a.shape[0]):
            out[i] = core(a[i])
    got = np.empty_like(x)
    native.jit(fill)(x, got)
    with np.errstate(all="ignore"):
        assert_bitwise([tanh32_numpy(x)], [got])


# ------------------------------------------------------------------ in fused kernels
N = 5000


@pytest.fixture
def small_thresholds(monkeypatch):
    monkeypatch.setattr(kernel_module, "NATIVE_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(kernel_module, "FAST_TANH_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(kernel_module, "THREAD_MIN_ELEMENTS", 1000)
    monkeypatch.setattr(kernel_module, "PROMOTE_AFTER", 3)
    fusion.clear_caches()
    yield
    fusion.clear_caches()


def _values():
    v = np.random.default_rng(3).standard_normal(N).astype(np.float32) * 4
    v[:len(EDGES)] = EDGES
    return v


def _f(m, x):
    return m.tanh(x * 2.0 + 1.0)


def _eager_parts(xv):
    arg = (ek.constant(xv) * 2.0 + 1.0).numpy()
    return tanh32_numpy(arg), np.tanh(arg)


@needs_native
@pytest.mark.parametrize("threads", [1, 2])
def test_traced_kernel_gives_the_same_bits_on_every_call_and_every_thread_count(small_thresholds, threads):
    xv = _values()
    fast, eager_tanh = _eager_parts(xv)
    with fusion.options(chunk_bytes=1024, threads=threads, numexpr=False):
        f = function(lambda t: _f(ek, t))
        results = [f(ek.constant(xv)).numpy() for _ in range(8)]
    holder = fused_kernels(f.get_concrete_function(ek.constant(xv))._plan)[0]
    assert isinstance(holder, TunedKernel) and holder.native is not None
    # after promotion only compiled variants run: the NumPy form of the fast tanh is many passes
    assert all(label.startswith("native") for label in holder.labels)
    for r in results:            # before the promotion (NumPy form), at it, and compiled afterwards
        assert_bitwise([fast], [r])
    assert_within_ulp([eager_tanh], [results[-1]], 1)
    assert_within_ulp([_f(ek, ek.constant(xv)).numpy()], [results[-1]], TRANSCENDENTAL_MAX_ULP)


@needs_native
def test_plan_with_fast_tanh_off_or_without_native_gives_the_unfused_bits(small_thresholds):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (N,), name="x")
        z = _f(ek, x) * x
    feeds = {x: _values()}
    for opts, native_on in [({"fast_tanh": False}, True), ({}, False)]:
        fusion.clear_caches()
        with native.options(enabled=native_on):
            ref, got, _, plan = fused_and_reference(g, feeds, [z], numexpr=False, chunk_bytes=1024, threads=1,
                                                    **opts)
            for _ in range(5):
                assert_bitwise(ref, list(plan(*feeds.values())))
        k = fused_kernels(plan)[0]
        # promoted, with NumPy's tanh; without native, the plain kernel (nothing to time for a promotion)
        assert (k.native is not None) if native_on else not isinstance(k, TunedKernel)
    fusion.clear_caches()
    ref, _, _, plan = fused_and_reference(g, feeds, [z], numexpr=False, chunk_bytes=1024, threads=1)
    outs = [list(plan(*feeds.values())) for _ in range(5)]
    assert not np.array_equal(ref[0], outs[-1][0], equal_nan=True)      # the fast tanh did run
    for o in outs:
        assert_bitwise(outs[0], o)


def test_switch_from_the_environment_and_bad_values(monkeypatch):
    monkeypatch.setenv("GRAPHJIT_FAST_TANH", "0")
    assert FusionOptions().fast_tanh is False
    monkeypatch.setenv("GRAPHJIT_FAST_TANH", "1")
    assert FusionOptions().fast_tanh is True
    monkeypatch.setenv("GRAPHJIT_FAST_TANH", "yes")
    with pytest.raises(ValueError, match="GRAPHJIT_FAST_TANH must be 0 or 1"):
        FusionOptions()
    monkeypatch.delenv("GRAPHJIT_FAST_TANH")
    with pytest.raises(ValueError, match="fast_tanh must be a bool"):
        FusionOptions(fast_tanh=1)
