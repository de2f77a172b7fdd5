"""A capture that a While body's fused kernel broadcasts, expanded to the full shape once per loop run.

An RNN's body adds its bias `b` (shape (64,)) to a (16, 64) matrix inside the
fused `tanh(x + m + b)` kernel on every iteration.  NumPy's add then runs its
broadcasting loop: 3.0 us here against 1.2 us for two contiguous (16, 64)
operands (about 2x at every size measured up to 256 x 256).  A capture is
fixed for the whole loop, so the generated loop (loop_plan.py) expands it once
before the loop and hands the kernel the contiguous copy:

    bx0 = _bcast(x3, (16, 64))               # once per loop run, before the loop
    ...
    v1 = k10(r0, v1, bx0)                    # the fused kernel's line, the copy for x3

Same bits: every element of every result is the same IEEE operation on the
same two operand values (a broadcast reads `b[j]` for element `(i, j)`, the
copy holds `b[j]` there).  The rewrite applies only where that holds
statically: the step is a straight-line NumPy fused kernel
(fusion/numpy_backend.build_straight, which never writes its inputs) with
fully known static shapes, and every instruction reading that input is a
ufunc whose result has the expanded shape (so no intermediate changes shape,
and no buffer assignment with it); the input is not an output of the program.
An expanded copy above `MAX_ELEMENTS` is not made (a big loop-invariant copy
for a loop that may run once).

`find(plan, captured)` returns {step index: {input position: shape}};
`rewrites(plan, em, captured, reg, rewrite)` wraps the given rewrites.

Imports `numpy`.
"""
from __future__ import annotations

import numpy as np

MAX_ELEMENTS = 1 << 16


def static_dims(t):
    """The tensor's static shape as a tuple of ints, or None if any dimension (or the rank) is unknown."""
    dims = t.shape.dims
    return None if dims is None or any(d is None for d in dims) else tuple(int(d) for d in dims)


def expansions(step, captured) -> dict:
    """{input position: full shape} of the fused `step`'s captured inputs that its kernel broadcasts and that
    may be handed to it expanded (module docstring)."""
    if (step.noop or step.op.type != "FusedElementwise" or step.attrs
            or getattr(step.kernel, "strategy", None) != "numpy" or getattr(step.kernel, "direct", None)):
        return {}
    program = step.op.get_attr("program")
    dims = [static_dims(t) for t in step.op.inputs]
    if any(d is None for d in dims):
        return {}
    shapes = program.shapes_for(dims)
    out = {}
    for k, (v, slot) in enumerate(zip(step.inputs, program.input_slots)):
        readers = [ins for ins in program.instrs if slot in ins.args]
        if v not in captured or slot in program.outputs or not readers:
            continue
        full = {shapes[ins.out] for ins in readers}
        if len(full) != 1 or any(ins.kind != "ufunc" for ins in readers):
            continue
        shape = full.pop()
        size = int(np.prod(shape, dtype=np.int64))
        if shape != shapes[slot] and size <= MAX_ELEMENTS and np.broadcast_shapes(shapes[slot], shape) == shape:
            out[k] = shape
    return out


def expand(x, shape):
    """`x` broadcast to `shape`, as a contiguous array of its own."""
    return np.ascontiguousarray(np.broadcast_to(x, shape))


def rewrites(plan, em, captured, reg: dict, rewrite: dict, skip=()) -> list:
    """Wrap `rewrite` ({step index: emit_steps rewrite}, updated in place) so the fused steps read expanded
    copies of the captures they broadcast; returns the lines making the copies before the loop.
    `reg`: {value id: register} of the captures; steps in `skip` run another kernel (loop_kernels.py)."""
    init: list = []
    made: dict = {}
    for si, step in enumerate(plan.steps):
        found = {} if si in skip else expansions(step, captured)
        if not found:
            continue
        subst = {}
        for k, shape in found.items():
            key = (step.inputs[k], shape)
            if key not in made:
                made[key] = f"bx{len(made)}"
                init.append(f"{made[key]} = {em.bind('_bcast', expand, share=True)}({reg[step.inputs[k]]}, "
                            f"{shape!r})")
            subst[k] = made[key]
        kname = em.bind("k", step.kernel, share=True)
        inner = rewrite.get(si)

        def fused(line, regs_in, targets, subst=subst, kname=kname, inner=inner, si=si):
            args = [subst.get(k, r) for k, r in enumerate(regs_in)]
            call = f"{kname}({', '.join(args)})"
            new = call if all(t == "_" for t in targets) else f"{', '.join(targets)} = {call}"
            return inner(new, args, targets) if inner is not None else [(new, si)]
        rewrite[si] = fused
    return init
