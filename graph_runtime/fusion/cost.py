"""The cost model: which kernel strategy runs a fused program, given the concrete shapes.

Strategies:

- "numexpr": one numexpr evaluation per *stage* of the expression (usually
  one; a value reused several times gets a stage of its own, see
  numexpr_backend.py), compiled once, re-evaluated on every call.  Cheapest
  for tiny tensors, where a NumPy ufunc call costs ~0.3 us whatever its size;
  only for single-output programs numexpr can express exactly.
- "numpy": a generated straight-line function, one ufunc call per
  instruction, writing into `out=` buffers that are reused after each value's
  last use (no per-op temporaries).
- "chunked": the same ufuncs run over cache-sized chunks into preallocated
  buffers (memory-bound tensors), optionally split across threads.

Estimates (microseconds) use constants measured on the development machine
(NumPy 2.4 with SIMD loops, numexpr 2.14 without VML, float32; see
benchmarks/bench_fusion.py):

| | NumPy ufunc | numexpr |
|---|---|---|
| fixed cost per call | 0.30 us per ufunc | 0.9 us per evaluation |
| + per element, arithmetic | 0.12 ns | 0.36 ns |
| tanh | 0.30 ns | 11.5 ns |
| sin/cos | 0.50 ns | 2.6 ns |
| exp/expm1, log/log1p | 0.40 ns | 3.0 ns |
| pow | 1.0 ns | 5.0 ns |

numexpr's transcendental functions are libm calls, much slower than NumPy's
SIMD loops, so a group heavy in them stays on NumPy even when small: the
model decides per group.  numexpr is never used above `NE_MAX_ELEMENTS`
elements, where it starts its own threads (slower on this machine).  The
chunked strategy is used when the largest value is at least
`CHUNK_MIN_BUFFERS` chunk buffers big (below that the straight-line buffers
already stay in cache) and a chunk layout exists (numpy_backend.chunk_layout).

Imports the standard library only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

NP_CALL_US = 0.30
NP_ALLOC_US = 0.10
NE_CALL_US = 0.90
NP_NS = {"arith": 0.12, "tanh": 0.30, "trig": 0.50, "exp": 0.40, "log": 0.40, "pow": 1.0, "div": 1.0,
         "opaque": 1.5}
NE_NS = {"arith": 0.36, "tanh": 11.5, "trig": 2.6, "exp": 3.0, "log": 3.0, "pow": 5.0, "div": 5.0,
         "opaque": 3.0}
NE_MAX_ELEMENTS = 4096
CHUNK_MIN_BUFFERS = 4


@dataclass
class Choice:
    strategy: str                 # "numexpr" | "numpy" | "chunked"
    elements: int                 # elements of the largest value
    estimates: dict = field(default_factory=dict)   # strategy -> estimated microseconds

    def describe(self) -> str:
        est = ", ".join(f"{k} ~{v:.1f}us" for k, v in sorted(self.estimates.items()))
        return f"{self.strategy} ({self.elements} elements{'; ' + est if est else ''})"


def _size(shape) -> int:
    return int(math.prod(shape)) if shape else 1     # math.prod: np.prod costs ~10 us a call (thousands per group)


def numpy_estimate(program, shapes) -> float:
    us = 0.0
    for ins in program.instrs:
        n = _size(shapes[ins.out])
        scale = 2.0 if ins.dtype.itemsize == 8 else 1.0
        us += NP_CALL_US + n * NP_NS.get(ins.cost, 1.0) * scale / 1e3
    return us + NP_ALLOC_US * len(set(program.outputs))


def numexpr_estimate(program, shapes, full: int, stages: int = 1) -> float:
    us = (NE_CALL_US + NP_ALLOC_US) * stages
    for ins in program.instrs:
        scale = 2.0 if ins.dtype.itemsize == 8 else 1.0
        us += full * NE_NS.get(ins.cost, 3.0) * scale / 1e3
    return us


def choose(program, shapes: dict, chunk_bytes: int, numexpr_possible: bool, layout_possible,
           force=None, ne_stages=lambda: 1) -> Choice:
    """Pick a strategy.  `layout_possible()` and `ne_stages()` (numexpr calls per run) are asked only when needed."""
    full = max((_size(shapes[i.out]) for i in program.instrs), default=1)
    itemsize = max((i.dtype.itemsize for i in program.instrs), default=8)
    est = {"numpy": numpy_estimate(program, shapes)}
    if force == "numpy" or (force == "numexpr" and numexpr_possible) or (force == "chunked" and layout_possible()):
        return Choice(force, full, est)
    if full * itemsize >= CHUNK_MIN_BUFFERS * chunk_bytes and layout_possible():
        return Choice("chunked", full, est)
    if numexpr_possible and full <= NE_MAX_ELEMENTS:
        est["numexpr"] = numexpr_estimate(program, shapes, full, ne_stages())
        if est["numexpr"] < est["numpy"]:
            return Choice("numexpr", full, est)
    return Choice("numpy", full, est)
