"""A While body's fused float32 tanh kernel compiled into one numba call (the optional `[native]` extra).

An RNN's body runs `tanh(x + m + b)` as a fused NumPy kernel on every
iteration: two adds and NumPy's tanh, about 7.5 us for (16, 64) of which tanh
is 5 us (NumPy's float32 tanh, ~3.7 ns an element here).  With numba
installed, the generated loop (loop_plan.py) calls instead one compiled
function computing the whole program element by element, with the tanh of
fusion/fast_tanh.py, which the compiler vectorizes with the arithmetic around
it:

    def kern(x0, x1, x2, o0):                 # for (16, 64) + (16, 64) + (64,)
        for i0 in range(16):
            for i1 in range(64):
                v3 = x0[i0, i1] + x1[i0, i1]
                v4 = v3 + x2[i1]
                o0[i0, i1] = tanh32(v4)

Bits: the arithmetic is the NumPy kernel's, operation by operation (no
fast-math: no reassociation, no fused multiply-add; float32 stays float32,
broadcast inputs are indexed as NumPy broadcasts them); the tanh is
fast_tanh.py's, within 1 ulp of NumPy's over all float32 inputs (the
documented bound for a fused kernel's transcendental call is
`fusion.TRANSCENDENTAL_MAX_ULP`): the same bits as the program computed in
NumPy with fast_tanh.py's `tanh32_numpy` (tests).  The choice is static, made
when the loop is generated, so a loop gives the same bits on every run:
numba can be imported, native kernels are enabled (`GRAPHJIT_NATIVE`), the
fusion option `fast_tanh` is on (`GRAPHJIT_FAST_TANH=0` gives NumPy's tanh and
the unfused graph's bits), and the step is a straight-line NumPy fused kernel
of at least `MIN_ELEMENTS` output elements with static shapes, float32
throughout, at least one tanh and only add, subtract, multiply, negative,
square and tanh.  Smaller kernels keep NumPy's (so that small loops, tests
among them, never pay numba's start-up, 1-3 s the first time
in a process; the compiled call is faster at every size measured, 64 to
16K elements: 5.0 -> 3.0 us at 64, 8.8 -> 5.8 us at 1024, 56 -> 46 us at
16K for `tanh(x + m + b)`, thread time at load 6).  A loop's generated
function is cached with these settings (`setting()`) in its key.  The kernel
is compiled when the loop is generated (`_compiled_now`), while the plan is
built: numba compiles on a function's first call, which would otherwise be
in the loop's first run, inside the step's deadline.

The source holds only names made here and integer literals (shapes);
constants of the program are passed as arguments.

Imports `numpy`, `eager.native`, `graph_runtime.fusion` and `broadcast_captures`.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from eager import native

from .. import generated_source
from ..fusion import get_options
from ..fusion.fast_tanh import tanh32_core
from .broadcast_captures import static_dims

MIN_ELEMENTS = 512
_F32 = np.dtype(np.float32)
_OPS = {np.add: "{0} + {1}", np.subtract: "{0} - {1}", np.multiply: "{0} * {1}", np.negative: "-{0}",
        np.square: "{0} * {0}", np.tanh: "tanh32({0})"}
_TANH32: list = []           # tanh32_core compiled, shared by every kernel made here
_KERNELS: dict = {}          # source -> compiled kernel: numba compiles each distinct kernel once per process
MAX_KERNELS = 64


def eligible(step, tanh: bool = True) -> Optional[tuple]:
    """`(program, slot shapes)` of a fused step this module may compile (module docstring), else None;
    without `tanh`, also a program without one (compiled_walk.py: the same bits as NumPy's then)."""
    if (step.noop or step.op.type != "FusedElementwise" or step.attrs
            or getattr(step.kernel, "strategy", None) != "numpy"):
        return None
    dims = [static_dims(t) for t in step.op.inputs]
    if any(d is None for d in dims):
        return None
    program = step.op.get_attr("program")
    if ((tanh and not any(i.fn is np.tanh for i in program.instrs))
            or any(i.kind != "ufunc" or i.fn not in _OPS for i in program.instrs)
            or any(program.dtypes[s] != _F32 for s in program.dtypes)
            or any(s not in {i.out for i in program.instrs} for s in program.outputs)
            or any(np.shape(v) != () for v in program.consts.values())):
        return None
    shapes = program.shapes_for(dims)
    full = shapes[program.outputs[0]]
    if any(shapes[s] != full for s in program.outputs) or int(np.prod(full)) < MIN_ELEMENTS:
        return None
    return program, shapes


def setting() -> bool:
    """Whether the settings allow compiled loop kernels now (native kernels and fast tanh on): part of a
    generated loop's cache key, so a loop generated under other settings is not reused."""
    return native.enabled() and get_options().fast_tanh


def usable() -> bool:
    """Whether compiled loop kernels may be made now (`setting()`, and numba importable)."""
    return setting() and native.available()


def compile_step(step) -> Optional[Callable]:
    """`fused(*inputs)`: the step's program as one compiled call, or None (module docstring)."""
    found = compile_kernel(step)
    if found is None:
        return None
    kern, program, shapes, src = found
    return _wrapper(program, shapes, kern, step.kernel, src)


def compile_kernel(step, tanh: bool = True) -> Optional[tuple]:
    """`(kern, program, shapes, source)`: the step's program compiled as `kern(*inputs, *consts, *outputs)`
    (scalar inputs as NumPy float32 scalars, consts in sorted slot order), or None (`eligible`)."""
    found = eligible(step, tanh)
    if found is None or not usable():
        return None
    program, shapes = found
    src = _source(program, shapes)
    kern = _KERNELS.get(src)
    if kern is None:
        if not _TANH32:
            _TANH32.append(native.jit(tanh32_core))
        ns: dict = {"tanh32": _TANH32[0]}
        generated_source.load(src, "loop-kernel", ns)
        if len(_KERNELS) >= MAX_KERNELS:
            _KERNELS.clear()
        kern = _KERNELS.setdefault(src, _compiled_now(native.jit(ns["kern"]), program, shapes))
    return kern, program, shapes, src


def _compiled_now(kern, program, shapes):
    """`kern` after one call on zeros of the step's shapes: numba compiles on a function's first call, and
    that must happen here, while the plan is built, not in the loop's first run, where the 1-3 s would
    count against the step's deadline (RunOptions.timeout_in_ms) and the first step's time."""
    ins = [np.zeros(shapes[s], _F32) if shapes[s] else _F32.type(0) for s in program.input_slots]
    consts = [_F32.type(0)] * len(program.consts)
    outs = [np.empty(shapes[s], _F32) for s in program.outputs]
    kern(*ins, *consts, *outs)
    return kern


def _wrapper(program, shapes, kern, numpy_kernel, src) -> Callable:
    """`fused(*inputs)` allocating the outputs and calling `kern`; inputs of other shapes than the static
    ones (numba does not check its indices) go to the NumPy kernel, which raises its error or broadcasts."""
    ins = [f"i{k}" for k in range(len(program.input_slots))]
    full = shapes[program.outputs[0]]
    outs = [f"o{k}" for k in range(len(program.outputs))]
    want = tuple(shapes[s] for s in program.input_slots)
    consts = [f"c{k}" for k in range(len(program.consts))]
    lines = [f"def fused({', '.join(ins)}):",
             f"    if ({''.join(f'{i}.shape, ' for i in ins)}) != want: return numpy_kernel({', '.join(ins)})"]
    lines += [f"    {o} = empty({full!r}, f32)" for o in outs]
    args = [f"f32s({i})" if not shapes[s] else i for i, s in zip(ins, program.input_slots)]
    lines.append(f"    kern({', '.join(args + consts + outs)})")
    lines.append(f"    return {outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ',)'}")
    ns = {"want": want, "numpy_kernel": numpy_kernel, "kern": kern, "empty": np.empty, "f32": _F32, "f32s": np.float32}
    ns.update({f"c{k}": np.float32(program.consts[s]) for k, s in enumerate(sorted(program.consts))})
    generated_source.load("\n".join(lines) + "\n", "loop-kernel-call", ns)
    fused = ns["fused"]
    fused.strategy = "native-loop"
    fused.source = src
    # for compiled_loop.py, which calls `kern` itself: only kernels taking arrays and nothing else
    plain = not program.consts and all(shapes[s] for s in program.input_slots)
    fused.kern, fused.want, fused.full = (kern, want, full) if plain else (None, None, None)
    return fused


def _source(program, shapes) -> str:
    full = shapes[program.outputs[0]]
    rank = len(full)
    ref = {s: f"c{k}" for k, s in enumerate(sorted(program.consts))}
    for k, s in enumerate(program.input_slots):
        sh = shapes[s]
        if not sh:
            ref[s] = f"x{k}"            # passed as a NumPy float32 scalar (`_wrapper`)
            continue
        # aligned on the right as NumPy broadcasts: a dimension of one is index 0
        idx = [("0" if n == 1 and full[rank - len(sh) + d] != 1 else f"i{rank - len(sh) + d}")
               for d, n in enumerate(sh)]
        ref[s] = f"x{k}[{', '.join(idx)}]"
    args = [f"x{k}" for k in range(len(program.input_slots))] + [ref[s] for s in sorted(program.consts)]
    args += [f"o{k}" for k in range(len(program.outputs))]
    lines = [f"def kern({', '.join(args)}):"]
    for d in range(rank):
        lines.append("    " * (d + 1) + f"for i{d} in range({full[d]}):")
    pad = "    " * (rank + 1)
    for ins in program.instrs:
        ref[ins.out] = f"v{ins.out}"
        lines.append(pad + f"v{ins.out} = {_OPS[ins.fn].format(*(ref[a] for a in ins.args))}")
    at = ", ".join(f"i{d}" for d in range(rank)) if rank else "()"
    lines += [pad + f"o{k}[{at}] = {ref[s]}" for k, s in enumerate(program.outputs)]
    return "\n".join(lines) + "\n"


def rewrites(plan, em, rewrite: dict) -> dict:
    """Wrap `rewrite` ({step index: emit_steps rewrite}, updated in place) so the steps compiled here call
    their compiled kernel; returns {step index: its `fused` wrapper}."""
    done = {}
    for si, step in enumerate(plan.steps):
        fused = compile_step(step)
        if fused is None:
            continue
        kname = em.bind("kn", fused)
        inner = rewrite.get(si)

        def call(line, regs_in, targets, kname=kname, inner=inner, si=si):
            new = f"{kname}({', '.join(regs_in)})"
            new = new if all(t == "_" for t in targets) else f"{', '.join(targets)} = {new}"
            return inner(new, regs_in, targets) if inner is not None else [(new, si)]
        rewrite[si] = call
        done[si] = fused
    return done
