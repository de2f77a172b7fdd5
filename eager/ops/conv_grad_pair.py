"""`Conv2DBackpropPair`: a convolution's input and filter gradients at the same time, on two cores (opt-in).

A Conv2D's two gradients read the same dy and nothing of each other.  With
`GRAPHJIT_CONV_GRAD_PAIR=1` (or `set_enabled(True)`), Conv2D's gradient rule emits this one op wherever
both are wanted (eagerly, when tracing and in Session graphs alike) instead of a Conv2DBackpropInput and a
Conv2DBackpropFilter.  Its kernel runs the two kernels as two parts of `eager.parallel.for_parts`, the
caller and an idle pool worker taking one each, with BLAS held on one thread meanwhile
(`eager.blas_threads.single`: two busy threads on two cores, never four).  When no worker is idle the
caller runs both, one after the other.

Off by default: the pair trades OpenBLAS's two threads inside each GEMM for one thread per gradient, which
pays only where the second core would otherwise idle through the non-GEMM parts of the gradients (the
`taps` input gradient's adds); after a two-thread GEMM OpenBLAS's own worker spins for about 0.1 s on that
core, so only a quiet machine can say whether it pays (benchmarks/results/2026-11-27-cnn-grad-pair.md has
the commands).

Bits: each gradient is its own kernel's computation (the same cost-model pick, the same sums) with BLAS on
one thread, the bits of `OPENBLAS_NUM_THREADS=1`, which can differ in the last place from a
multi-threaded BLAS run; eager, @function and Session all build the pair while the switch is on, so they
agree with each other.  Without threadpoolctl (`blas_threads.known()` false) the kernel runs the two
gradients one after the other on the calling thread: BLAS's thread count cannot be held there.

Gradient: linear in x (through the filter gradient), f (through the input gradient) and dy (both), like
the two ops it stands for.

Imports: numpy, the eager core, `eager.parallel`, `eager.blas_threads`, `eager.switches`, `nn_conv`'s kernels.
"""
from __future__ import annotations

import numpy as np

from .. import blas_threads, parallel
from ..dispatch import execute
from ..registry import Spec, op
from ..switches import Switch
from ._define import is_known_zero
from .array import shape as _shape

__all__: list = []

_switch = Switch("GRAPHJIT_CONV_GRAD_PAIR", "conv_grad_pair.set_enabled", default=False)


def enabled() -> bool:
    """Whether Conv2D's gradient rule emits the pair (read when the gradient is built)."""
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """Turn the pair on or off process-wide (None: the environment's default); returns the previous setting."""
    return _switch.set(flag)


def _pair_kernel(x, f, dy, strides, padding, dilations, *, input_kernel, filter_kernel):
    out = [None, None]
    x_shape, f_shape = np.array(x.shape, np.int32), np.array(f.shape, np.int32)

    def part(i):
        if i == 0:
            out[0] = input_kernel(x_shape, f, dy, strides, padding, dilations)
        else:
            out[1] = filter_kernel(x, f_shape, dy, strides, padding, dilations)
    if not blas_threads.known():
        part(0)
        part(1)
        return out[0], out[1]
    with blas_threads.single():
        parallel.for_parts(part, 2)
    return out[0], out[1]


def _infer_pair(specs, attrs):
    x, f, _ = specs
    return [Spec(x.shape, x.dtype), Spec(f.shape, f.dtype)]


def make_op(conv2d, conv2d_input, conv2d_filter):
    """Register the pair over nn_conv's three ops (nn_conv calls this once, after declaring them)."""
    def kernel(x, f, dy, strides, padding, dilations):
        return _pair_kernel(x, f, dy, strides, padding, dilations, input_kernel=conv2d_input.kernel,
                            filter_kernel=conv2d_filter.kernel)

    def grad(op_, gdx, gdf):
        x, f, dy = op_.inputs
        skip = getattr(op_, "skip_input_indices", ())
        gx = gf = gdy = None
        if not is_known_zero(gdf):          # df = BackpropFilter(x, dy): linear in x and in dy
            gx = None if 0 in skip else execute(conv2d_input, (_shape(x), gdf, dy), op_.attrs)
            gdy = None if 2 in skip else execute(conv2d, (x, gdf), op_.attrs)
        if not is_known_zero(gdx):          # dx = BackpropInput(f, dy): linear in f and in dy
            gf = None if 1 in skip else execute(conv2d_filter, (gdx, _shape(f), dy), op_.attrs)
            if 2 not in skip:
                more = execute(conv2d, (gdx, f), op_.attrs)
                gdy = more if gdy is None else gdy + more
        return [gx, gf, gdy]
    return op("Conv2DBackpropPair", kernel, _infer_pair, grad, num_outputs=2,
              doc="(input gradient, filter gradient) of Conv2D(x, f) for dy, computed at once; inputs (x, f, dy).")
