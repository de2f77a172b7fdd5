"""Compiled arithmetic for big chunked kernels (numba, the optional `[native]` extra).

The chunked NumPy kernel (numpy_backend.build_chunked) makes one pass over each
chunk per instruction: `(tanh(2x+1)(2x+1)-x)^2+3` is six arithmetic passes and
one `tanh`.  Here each run of consecutive IEEE arithmetic instructions (add,
subtract, multiply, true_divide, negative, square on float32 or float64, all
operands of the instruction's own dtype), and the float32 tanh of
fast_tanh.py, becomes one compiled loop that keeps its intermediates in
registers and stores only the values read later; `maximum` (NumPy's rule:
the first operand if it is greater or NaN, else the second, so `maximum(0.0,
-0.0)` is -0.0 and a NaN's payload is kept), `greater` (a bool result) and a
multiply by a bool operand (the bool converted to the float dtype first, as
NumPy's loop does) join these runs, so relu and its gradient compile too; every other instruction
(`exp`, NumPy's own `tanh`, ...) stays NumPy's ufunc.

Bits: each element goes through the same IEEE operations in the same order as
the NumPy kernel: numba compiles `a * b + c` as a multiply and an add (no fused
multiply-add without `fastmath`, which is off), float32 stays float32, and
division follows NumPy's error model (inf and nan, no exception).  A float32
tanh is NumPy's `np.tanh` unless the kernel was built for compiling
(`fast_tanh_program`, chosen by kernel.py when the `fast_tanh` option is on):
then every variant of the kernel, NumPy's included, computes fast_tanh.py's
function (within 1 ulp of `np.tanh`), so the variants still agree.  On top of
that `kernel.py` runs a promoted kernel once beside the NumPy one and uses it
only if every output is bitwise equal (NaN payloads included).

`build(program, shapes, layout)` returns `fused(run, *inputs)` with the chunked
kernel's contract, or None: `compilable(program, layout)` is false (the layout
is not "flat", an instruction is hoisted or opaque, an output is not computed
in the loop), or no run has two instructions or a fast tanh.  The source holds
only names made here and integer literals; scalars are passed as arguments.
Compiling it costs numba's start-up (1-3 s the first time in a process) and a
few tenths of a second per loop, so `kernel.py` asks for it only for big
kernels called often (`PROMOTE_AFTER`).

Imports `numpy`, `eager.native` and sibling modules.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

import numpy as np

from eager import native

from .. import generated_source
from .fast_tanh import tanh32_core, tanh32_numpy
from .numpy_backend import Layout, _Env, _alloc, _call, _compile

_OPS = {np.add: "{0} + {1}", np.subtract: "{0} - {1}", np.multiply: "{0} * {1}", np.true_divide: "{0} / {1}",
        np.negative: "-{0}", np.square: "{0} * {0}", tanh32_numpy: "tanh32({0})"}
_MAXIMUM = "({0} if ({0} > {1} or {0} != {0}) else {1})"     # NumPy 2's maximum, NaN payloads included
_OPS[np.maximum] = _MAXIMUM
_OPS[np.greater] = "({0} > {1})"
_BOOL = np.dtype(np.bool_)
_FLOATS = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_F32 = np.dtype(np.float32)


def fast_tanh_program(program):
    """`program` with each float32 `np.tanh` computed by fast_tanh.py's function, or None if it has none."""
    instrs = [replace(i, fn=tanh32_numpy) if i.kind == "ufunc" and i.fn is np.tanh and i.dtype == _F32
              and program.dtypes[i.args[0]] == _F32 else i for i in program.instrs]
    if all(a is b for a, b in zip(instrs, program.instrs)):
        return None
    return replace(program, instrs=tuple(instrs), cache={})


def compilable(program, layout: Layout) -> bool:
    """Whether `build` can make a compiled kernel for this program and layout (numba aside)."""
    var = layout.varying
    return (layout.mode == "flat" and all(i.out in var and i.kind == "ufunc" for i in program.instrs)
            and set(program.outputs) <= {i.out for i in program.instrs})


def _eligible(program, ins) -> bool:
    if ins.kind != "ufunc" or ins.fn not in _OPS or ins.attrs:
        return False
    dts = [program.dtypes[a] for a in ins.args]
    if ins.fn is np.greater:        # floats of one dtype compared: a bool
        return ins.dtype == _BOOL and dts[0] in _FLOATS and dts[0] == dts[1]
    # a bool factor is converted to the float dtype first (relu's gradient: dy * (y > 0))
    allowed = (ins.dtype, _BOOL) if ins.fn is np.multiply else (ins.dtype,)
    return ins.dtype in _FLOATS and all(d in allowed for d in dts)


def _runs(program, looped: list) -> list:
    """The instructions in order, grouped: lists of >= 2 consecutive eligible ones, single others."""
    out: list = []
    for ins in looped:
        if _eligible(program, ins) and out and isinstance(out[-1], list) and _eligible(program, out[-1][-1]):
            out[-1].append(ins)
        else:
            out.append([ins] if _eligible(program, ins) else ins)
    # a lone fast tanh is a loop too: its NumPy form is many passes
    return [g if not isinstance(g, list) or len(g) > 1 or g[0].fn is tanh32_numpy else g[0] for g in out]


def build(program, shapes: dict, layout: Layout) -> Optional[Callable]:
    if not native.enabled() or not compilable(program, layout) or not native.available():
        return None
    looped = list(program.instrs)
    outs = set(program.outputs)
    groups = _runs(program, looped)
    if not any(isinstance(g, list) for g in groups):
        return None
    return _generate(program, shapes, layout, groups, outs)


def _generate(program, shapes, layout, groups, outs) -> Callable:
    env = _Env()
    n_in = len(program.input_slots)
    var = layout.varying
    # where each group's results are read: a value read outside its own group (or an output) is stored
    group_of = {}
    for gi, g in enumerate(groups):
        for ins in (g if isinstance(g, list) else [g]):
            group_of[ins.out] = gi
    read_outside = set(outs)
    for gi, g in enumerate(groups):
        for ins in (g if isinstance(g, list) else [g]):
            read_outside.update(a for a in ins.args if a in group_of and group_of[a] != gi)
    head, loop_args, loc = [], [], {}
    for k, s in enumerate(program.input_slots):
        if s in var:
            head.append(f"    x{k} = i{k}.reshape(-1)")
            loop_args.append(f"x{k}")
            loc[s] = f"x{k}_c"
    invariant = {s: f"i{k}" for k, s in enumerate(program.input_slots) if s not in var}
    invariant.update({s: env.bind("c", v) for s, v in program.consts.items()})
    scalars = {}
    for s, expr in invariant.items():            # 0-d arrays for NumPy's calls, NumPy scalars for the loops
        head.append(f"    h{s} = {env.bind('_asarray', np.asarray)}({expr}).reshape(())")
        head.append(f"    g{s} = h{s}[()]")
        loop_args += [f"h{s}", f"g{s}"]
        scalars[s] = f"g{s}"
    header = ["    for s in range(lo, hi, STEP):", "        e = s + STEP", "        if e > hi: e = hi",
              "        m = e - s"] + [f"        {a}_c = {a}[s:e]" for a in loop_args if a.startswith("x")]
    prologue = []
    out_names = {}
    for s in program.outputs:
        if s not in out_names:
            out_names[s] = f"o{len(out_names)}"
            head.append(f"    {out_names[s]} = {_alloc(env, program, shapes, s)}")
            head.append(f"    f{out_names[s]} = {out_names[s]}.reshape(-1)")
            loop_args.append(f"f{out_names[s]}")
            header.append(f"        f{out_names[s]}_c = f{out_names[s]}[s:e]")
            loc[s] = f"f{out_names[s]}_c"
    for gi, g in enumerate(groups):
        for ins in (g if isinstance(g, list) else [g]):
            if ins.out in read_outside and ins.out not in loc:
                name = f"b{ins.out}"
                prologue.append(f"    T{name} = {_alloc(env, program, shapes, ins.out, (layout.step,))}")
                header.append(f"        {name} = T{name}[:m]")
                loc[ins.out] = name
    block = []
    for gi, g in enumerate(groups):
        if isinstance(g, list):
            fn, reads, writes = _loop(program, g, loc, scalars, read_outside)
            block.append(f"        {env.bind('n', fn)}(m, {', '.join(reads + writes)})")
        else:
            args = [loc[a] if a in loc else f"h{a}" for a in g.args]
            block.append("        " + _call(env, g, args, loc[g.out]))
    lines = [f"STEP = {layout.step}", f"def body({', '.join(loop_args + ['lo', 'hi'])}):"]
    lines += prologue + header + block
    lines.append(f"def fused(run, {', '.join(f'i{k}' for k in range(n_in))}):")
    lines += head
    lines.append(f"    run(body, ({', '.join(loop_args)},), {layout.extent}, STEP)")
    rets = [out_names[s] if shapes[s] else f"{out_names[s]}[()]" for s in program.outputs]
    lines.append(f"    return {rets[0] if len(rets) == 1 else '(' + ', '.join(rets) + ',)'}")
    fn, src = _compile(env, lines, "fused", "native-chunked")
    fn.source = src
    return fn


def _loop(program, group: list, loc: dict, scalars: dict, read_outside: set) -> tuple:
    """One compiled loop for a run of arithmetic instructions: (function, arrays it reads, arrays it writes)."""
    reads, params, expr = [], {}, {}
    for ins in group:
        for a in ins.args:
            if a in expr or a in params:
                continue
            if a in scalars:
                params[a] = f"s{len(params)}"
                reads.append(scalars[a])
            else:
                params[a] = f"a{len(params)}"
                reads.append(loc[a])
        expr[ins.out] = f"v{len(expr)}"       # numbered in the loop: equal loops have equal sources
    body = []
    for ins in group:
        args = [expr.get(a) or (params[a] + "[i]" if params[a].startswith("a") else params[a]) for a in ins.args]
        if ins.fn is np.multiply:       # NumPy's loop casts a bool factor to the float dtype
            args = [f"{ins.dtype.name}({e})" if program.dtypes[a] == _BOOL else e for a, e in zip(ins.args, args)]
        body.append(f"        {expr[ins.out]} = {_OPS[ins.fn].format(*args)}")
    writes, out_params = [], []
    for ins in group:
        if ins.out in read_outside:
            p = f"w{len(out_params)}"
            out_params.append(p)
            writes.append(loc[ins.out])
            body.append(f"        {p}[i] = {expr[ins.out]}")
    names = [params[a] for a in params] + out_params
    src = "\n".join([f"def loop(m, {', '.join(names)}):", "    for i in range(m):"] + body) + "\n"
    return _compiled_loop(src), reads, writes


_LOOPS: dict = {}       # source -> compiled loop: numba compiles each distinct loop once per process
MAX_LOOPS = 256


_TANH32: list = []      # tanh32_core compiled (once per process, when a loop first needs it)


def tanh32_compiled() -> Callable:
    """fast_tanh.tanh32_core compiled by numba (callers check `native.available()`): other compiled kernels
    call it on float32 scalars, and LLVM inlines and vectorizes it in their loops."""
    if not _TANH32:
        _TANH32.append(native.jit(tanh32_core))
    return _TANH32[0]


def _compiled_loop(src: str) -> Callable:
    fn = _LOOPS.get(src)
    if fn is None:
        ns: dict = {"tanh32": tanh32_compiled(), "float32": np.float32, "float64": np.float64}
        generated_source.load(src, "native-loop", ns)      # kept in linecache: the loop may live all along
        fn = native.jit(ns["loop"])
        if len(_LOOPS) >= MAX_LOOPS:
            _LOOPS.clear()
        fn = _LOOPS.setdefault(src, fn)
    return fn
