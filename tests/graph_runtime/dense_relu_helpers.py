"""Helpers for the tests of the dense-layer relu ops (ReluGradBiasGrad, BiasRelu): special values, bit views, and
the compiled kernel taken from a step's first call on, whatever the size."""
from __future__ import annotations

import numpy as np
import pytest

from eager import native
from graph_runtime import relu_bias_grad as rbg

SPECIAL = np.array([0x80000000, 0, 0x7fc00123, 0xffc00002, 0x7f800001, 0x7f800000, 0xff800000, 1, 0x80000001],
                   np.uint32).view(np.float32)


def bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def data(shape, seed, dtype=np.float32):
    """Normal values with every 7th element special (NaN payloads, a signalling NaN, +-0, +-inf, subnormals)."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    special = SPECIAL if dtype == np.float32 else np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf], dtype)
    a.reshape(-1)[::7] = np.resize(special, a.reshape(-1)[::7].shape)
    return a


def compile_at_once(monkeypatch, module) -> list:
    """Promote at the first call for any size; returns the list of shapes `module.native_call` ran on."""
    if not (native.enabled() and native.available()):
        pytest.skip("numba not installed, or native kernels turned off (GRAPHJIT_NATIVE=0)")
    monkeypatch.setattr(rbg, "PROMOTE_AFTER", 1)
    monkeypatch.setattr(rbg, "NATIVE_MIN_ELEMENTS", 1)
    calls = []
    real = module.native_call
    monkeypatch.setattr(module, "native_call", lambda a, b: calls.append(a.shape) or real(a, b))
    return calls


def rewrites() -> int:
    """How many ops a pass of these makes per matching pair: none without numba or with native kernels off."""
    return 1 if native.enabled() and native.installed() else 0
