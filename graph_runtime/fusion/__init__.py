"""Elementwise fusion: groups of elementwise ops become one generated kernel.

- `groups.py`: which ops are fusible and how they group (convex, maximal, greedy).
- `recipes.py`: how each op type becomes program instructions (ufunc, expansion,
  opaque kernel) and its numexpr template.
- `program.py`: the expression program (`Program`, `ProgramBuilder`, `interpret`).
- `cost.py`: the cost model choosing numexpr / straight-line NumPy / chunked.
- `numpy_backend.py`, `numexpr_backend.py`: kernel generators; `native_backend.py`: the arithmetic of big
  chunked kernels as numba loops (optional `[native]` extra; promoted when hot, same bits); `fast_tanh.py`:
  the float32 tanh those loops vectorize.
- `kernel.py`: the `FusedElementwise` OpDef; kernels generated when a plan is
  compiled (per run-time shape when static shapes are unknown); `autotune.py`: the run-time choice
  among a big chunked kernel's variants of equal bits (serial or split, NumPy or compiled arithmetic).
- `options.py`: settings (`options(enabled=False)` per thread, `set_options` process-wide).
- `codec.py`: GraphDef encoding of the `program` attr (optimized graphs export).

The graph pass itself is `graph_runtime/passes/fusion.py` (pass name "fusion").

Accuracy (the documented bound, enforced by tests/graph_runtime/test_fusion_random.py):
the NumPy backends call the very ufuncs the unfused ops call, so their results
are bitwise identical.  numexpr kernels are exact (bitwise, NaN compared as
NaN) for every IEEE operation (+, -, *, /, sqrt, comparisons, select,
max/min, abs, floor, ...); each transcendental function (exp, expm1, log,
log1p, sin, cos, tanh, pow) is within `TRANSCENDENTAL_MAX_ULP` = 3 ulp of
NumPy's result for the same input (libm vs NumPy's SIMD loops; measured on
10^6 inputs: float32 exp 2, sin/cos 1, tanh and log 3 ulp; float64 tanh 3,
the rest 0).  Later operations carry such a difference along like any rounding
difference (a subtraction of nearly equal values would magnify it; sigmoid's
kernel has none: exp(min(x, 0)) / (1 + exp(-|x|)), accurate in both tails).  Signed zeros are
NumPy's (sign(-0.0) = +0.0); the sign of a NaN may differ.  A big chunked kernel that will run
compiled (numba installed, at least `kernel.FAST_TANH_MIN_ELEMENTS` elements) computes float32 tanh with
fast_tanh.py's vectorized function, in every variant and from its first call: at most 1 ulp from
NumPy's result over all 2^32 inputs (edge values exact), as does a While body's small tanh kernel
compiled as one call (control_flow/loop_kernels.py); `options(fast_tanh=False)` or
`GRAPHJIT_FAST_TANH=0` gives NumPy's tanh there, and with `numexpr=False` every fused kernel is then
bitwise the unfused graph.

Imports its own submodules only; numexpr is optional.
"""
from .options import FusionOptions, get_options, set_options, options
from .program import Program, ProgramBuilder, interpret
from .groups import Group, find_groups, fusible_reason
from .kernel import FUSED_ELEMENTWISE, make_kernel, build_for_shapes, plan_strategy, clear_caches
from . import numexpr_backend
from .numexpr_backend import TRANSCENDENTAL_MAX_ULP
from . import codec  # noqa: F401 (registers the GraphDef codec of `Program`)

__all__ = ["FusionOptions", "get_options", "set_options", "options", "Program", "ProgramBuilder", "interpret",
           "Group", "find_groups", "fusible_reason", "FUSED_ELEMENTWISE", "make_kernel", "build_for_shapes",
           "plan_strategy", "clear_caches", "numexpr_backend", "TRANSCENDENTAL_MAX_ULP"]
