"""Invariant operands of `maximum`/`minimum`/`fmax`/`fmin` as arrays that step through memory.

NumPy runs these four ufuncs' SIMD loop only when both operands step through
memory: against a stride-0 operand (a rank-0 constant, such as relu's zero) it
takes its scalar loop, 3-5x slower (a 64x256 float32 relu: about 14 us against
3.5 us with a zero array).  The same ufunc on the same element pairs gives the
same bits (NaN payloads and signed zeros included; the tests compare with the
rank-0 call), so the fused kernels hand them an array instead:

- the chunked kernel (numpy_backend.build_chunked) copies the value into a
  chunk-long row once per call of its loop body;
- the straight-line kernel (`full_constants`) gets, for each such rank-0
  constant (of the program, or a `Const` input), a read-only array of the instruction's output
  shape, made once when the kernel is built, when that shape holds between
  `FULL_MIN_ELEMENTS` (below, the scalar loop costs no more than reading an
  array) and `FULL_MAX_ELEMENTS` elements (above, the kernel is chunked, or
  the array would cost more memory than the loop saves).

eager/ops/relu_kernels.py does the same for the unfused Relu.  Imports numpy only.
"""
from __future__ import annotations

import numpy as np

ROW_UFUNCS = frozenset({np.maximum, np.minimum, np.fmax, np.fmin})
FULL_MIN_ELEMENTS = 512
FULL_MAX_ELEMENTS = 1 << 18


def full_constants(program, shapes: dict, scalars=None) -> dict:
    """{slot: read-only array of its one output shape} for the straight-line kernel (module docstring), for
    the program's constants and the inputs whose values are known when the kernel is built (`scalars`:
    {input position: 0-d value}, kernel.constant_scalars)."""
    known = dict(program.consts)
    known.update({program.input_slots[k]: np.asarray(v) for k, v in (scalars or {}).items()})
    out_shapes: dict = {}
    for ins in program.instrs:
        if ins.kind == "ufunc" and ins.fn in ROW_UFUNCS:
            for a in ins.args:
                if a in known:
                    out_shapes.setdefault(a, set()).add(tuple(shapes[ins.out]))
    full: dict = {}
    for slot, seen in out_shapes.items():
        value = known[slot]
        if len(seen) != 1 or value.size != 1:       # used at two shapes: keep the plain constant
            continue
        shape = seen.pop()
        if FULL_MIN_ELEMENTS <= int(np.prod(shape, dtype=np.int64)) <= FULL_MAX_ELEMENTS:
            arr = np.full(shape, value.reshape(()), value.dtype)
            arr.flags.writeable = False
            full[slot] = arr
    return full
