"""NumPy kernels for fused programs: a straight-line function, or a cache-blocked chunk loop.

Both generate Python source (in `linecache` while the kernel lives, so tracebacks show
it) that calls the program's ufuncs with `out=` buffers.  Buffer assignment
(`_Buffers`): a group output gets its own array up front; every other value
reuses a buffer of the same shape and dtype whose occupant is dead (in place
when the occupant is an argument of this very instruction: elementwise ufuncs
allow exact aliasing), or an output buffer whose own value comes later than
this value's last use, or else a new temporary.  A chain of N ops therefore
runs in its output buffer, allocating nothing else.  Opaque instructions call
their op's kernel, which allocates its result (never reused: a kernel may
return a view of its input).

Straight-line (`build_straight`), for small and medium tensors:

    def fused(i0):
        o0 = u1(i0)               # tanh: the first writer allocates the buffer
        u2(o0, c3, o0)            # multiply(o0, c3, out=o0)
        ...
        return o0

(A buffer's first writer allocates it, which is cheaper than `np.empty` plus
`out=`; rank-0 buffers are allocated with `np.empty`, since a ufunc on 0-d
inputs returns a NumPy scalar, which cannot be an `out=` argument.)  A block
of statements repeated verbatim (an unrolled loop's rounds, once buffer
assignment has settled) is written as a `for` loop over it (`reroll`): the
same calls in the same order, in a source whose compile time does not grow
with the number of rounds (reroll.py).

Chunked (`build_chunked`), for large tensors: values that vary along the chunked
dimension are computed chunk by chunk into chunk-sized scratch buffers (or the
matching slice of an output array); values that do not (bias vectors,
scalars) are *hoisted*: computed once, at their own shape, before the loop.
Layouts (`chunk_layout`): "flat" when every value is either the full shape or
a single element (C-contiguous inputs are viewed as 1-D; a non-contiguous
input falls back to the straight-line kernel), else "rows" (chunks of rows
along axis 0; values whose axis 0 has size 1 or that have a lower rank
broadcast and are hoisted).  The loop body is a function of `(lo, hi)`, so
`run_range`-style runners can split the range across threads.  In the flat
layout, `maximum`/`minimum`/`fmax`/`fmin` against a loop-invariant value
(relu's zero) get a chunk-long row of that value, copied once per call of
the body, and in a straight-line kernel an array of the value made when the
kernel is built: against a stride-0 operand NumPy runs their scalar loop, 3-5x
slower (invariant_rows.py).

Every call is the same ufunc on the same dtypes as the unfused op, so results
are bitwise identical to the unfused graph.

The source holds only names made here, integer literals (shapes, chunk sizes)
and the declared attr keywords of opaque ops (`eager.registry.attr_keywords`:
strings of the op's code, never of the program, which may come from a
GraphDef).

Imports `numpy`, `eager.registry` and sibling modules.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from eager import buffers
from eager.registry import attr_keywords, get

from .. import generated_source
from .invariant_rows import ROW_UFUNCS, full_constants
from .reroll import reroll

_KEYWORD_OUT = ROW_UFUNCS
# against a stride-0 operand (a rank-0 constant: relu's zero) these take NumPy's scalar loop: kernels give
# them an array of the value instead (invariant_rows.py)
_ROW_UFUNCS = ROW_UFUNCS


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


class _Env:
    """Closure variables of a generated function."""

    def __init__(self):
        self.names: list = []
        self.values: list = []
        self._ids: dict = {}

    def bind(self, prefix: str, obj, share: bool = True) -> str:
        key = (prefix, id(obj))
        if share and key in self._ids:
            return self._ids[key]
        name = f"{prefix}{len(self.names)}"
        self.names.append(name)
        self.values.append(obj)
        self._ids[key] = name
        return name


def _compile(env: _Env, lines: list, entry: str, tag: str) -> tuple:
    src = ["def __make(__K):"]
    if env.names:
        src.append(f"    {', '.join(env.names)}{',' if len(env.names) == 1 else ''} = __K")
    src += ["    " + ln for ln in lines]
    src.append(f"    return {entry}")
    source = "\n".join(src) + "\n"
    ns: dict = {}
    filename = generated_source.load(source, f"fused-{tag}", ns)
    fn = ns["__make"](tuple(env.values))
    generated_source.evict_with(fn, filename)
    return fn, source


@dataclass
class _Buf:
    name: str
    key: tuple                 # (shape, dtype str) it can hold
    busy_until: int            # instruction index of the occupant's last use (-1: free)
    reserved: Optional[int]    # position of the output instruction it belongs to, if any
    exists: bool = False       # has the buffer been allocated yet (by np.empty or by its first writer)?


class _Buffers:
    """Assign an `out=` buffer to every ufunc instruction (see the module docstring)."""

    def __init__(self, program, instrs: list, key_of: Callable, outputs: set, last_use: dict):
        self.bufs: list = []
        self.key_of = key_of
        self.last_use = last_use
        self.pos = {ins.out: k for k, ins in enumerate(instrs)}
        self.reserved: dict = {}      # output slot -> _Buf
        self.outputs = outputs

    def reserve(self, slot: int, name: str, exists: bool) -> None:
        b = _Buf(name, self.key_of(slot), -1, self.pos[slot], exists)
        self.bufs.append(b)
        self.reserved[slot] = b

    def take(self, slot: int, k: int, new_name: Callable) -> tuple:
        """(buffer name, first_write) for the value of instruction k writing `slot`."""
        b = self.reserved.get(slot)
        if b is None:
            key, last = self.key_of(slot), self.last_use.get(slot, k)
            for c in self.bufs:
                if c.key == key and c.busy_until <= k and (c.reserved is None or (c.reserved > k and
                                                                                   last <= c.reserved)):
                    b = c
                    break
        if b is None:
            b = _Buf(new_name(), self.key_of(slot), -1, None)
            self.bufs.append(b)
        b.busy_until = self.last_use.get(slot, k)
        first, b.exists = not b.exists, True
        return b.name, first


def _last_uses(instrs: list, outputs) -> dict:
    last: dict = {}
    for k, ins in enumerate(instrs):
        for a in ins.args:
            last[a] = k
    for s in outputs:
        last[s] = len(instrs) + 1
    return last


def _call(env: _Env, ins, args: list, out: Optional[str]) -> str:
    fn = env.bind("u" if ins.kind == "ufunc" else "k", ins.fn)
    parts = list(args)
    if ins.attrs:
        kws = attr_keywords(get(ins.op_type), len(ins.args), ins.attrs, f"fused op {ins.source!r}")
        parts += [f"{kw}={env.bind('a', v, share=False)}" for kw, v in kws]
    if out is not None:
        # positional `out` is ~25 ns cheaper per call than the keyword (deprecated for maximum/minimum)
        parts.append(f"out={out}" if ins.fn in _KEYWORD_OUT else out)
    return f"{fn}({', '.join(parts)})"


def _emit_block(env, program, instrs, loc: dict, bufs: _Buffers, alloc: Callable, lines: list, indent: str,
                out_copy: dict, rows: Optional[dict] = None) -> None:
    """Emit the calls of `instrs`; `loc` maps slots to expressions; results land in `bufs`' buffers.

    `rows`: slot -> the expression of its value as a row, used instead of `loc` by `_ROW_UFUNCS`.

    `alloc(slot, name, lines, indent)` is called on a buffer's first write: it may emit an allocation
    (and return False: the call then writes with `out=`), or return True: the call allocates the buffer.
    """
    counter = itertools.count(len(lines))
    for k, ins in enumerate(instrs):
        args = [loc[a] for a in ins.args]
        if rows and ins.fn in _ROW_UFUNCS:
            args = [rows.get(a, e) for a, e in zip(ins.args, args)]
        if ins.kind == "ufunc":
            name, first = bufs.take(ins.out, k, lambda: f"t{next(counter)}")
            if first and alloc(ins.out, name, lines, indent):
                lines.append(indent + f"{name} = {_call(env, ins, args, None)}")    # the ufunc allocates it
            else:
                lines.append(indent + _call(env, ins, args, name))
            loc[ins.out] = name
        else:
            name = f"v{ins.out}"
            lines.append(indent + f"{name} = {_call(env, ins, args, None)}")
            loc[ins.out] = name
            if ins.out in out_copy:
                lines.append(indent + f"{env.bind('_copyto', np.copyto)}({out_copy[ins.out]}, {name})")
                loc[ins.out] = out_copy[ins.out]


def _returns(program, loc: dict, shapes: dict, buffered: set) -> str:
    items = []
    for s in program.outputs:
        e = loc[s]
        if s in buffered and not shapes[s]:
            e = f"{e}[()]"       # rank 0: a NumPy scalar, like the unfused ufunc returns
        items.append(e)
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ",)"


def build_straight(program, shapes: dict, scalars=None) -> Callable:
    """A straight-line kernel for these concrete slot shapes (`scalars`: {input position: 0-d value} of inputs
    known when it is built, see invariant_rows.py)."""
    env = _Env()
    n_in = len(program.input_slots)
    loc = {s: f"i{k}" for k, s in enumerate(program.input_slots)}
    loc.update({s: env.bind("c", v) for s, v in program.consts.items()})
    instrs = list(program.instrs)
    outs = set(program.outputs)
    last = _last_uses(instrs, outs)
    bufs = _Buffers(program, instrs, lambda s: (shapes[s], program.dtypes[s].str), outs, last)
    body: list = []
    buffered: set = set()
    for ins in instrs:
        if ins.out in outs and ins.kind == "ufunc" and ins.out not in bufs.reserved:
            bufs.reserve(ins.out, f"o{len(bufs.reserved)}", False)
            buffered.add(ins.out)

    def first_write(slot, name, lines, indent) -> bool:
        """A buffer's first writer allocates it (cheaper than np.empty + out=), except rank 0 (scalars)."""
        if shapes[slot]:
            return True
        lines.append(indent + f"{name} = {_alloc(env, program, shapes, slot)}")
        return False

    rows = {s: env.bind("c", v) for s, v in full_constants(program, shapes, scalars).items()}
    _emit_block(env, program, instrs, loc, bufs, first_write, body, "    ", {}, rows)
    lines = [f"def fused({', '.join(f'i{k}' for k in range(n_in))}):"] + reroll(body, "    ")
    lines.append(f"    return {_returns(program, loc, shapes, buffered)}")
    fn, src = _compile(env, lines, "fused", "straight")
    fn.source = src
    return fn


def _alloc(env, program, shapes, slot, shape=None) -> str:
    shape = shapes[slot] if shape is None else shape
    # large outputs come from eager.buffers' pool (a dead array of the same size, no fresh pages)
    return f"{env.bind('_empty', buffers.empty)}({tuple(shape)!r}, {env.bind('_d', program.dtypes[slot])})"


# ------------------------------------------------------------------ chunked
@dataclass
class Layout:
    mode: str             # "flat" | "rows"
    full: tuple           # the largest value's shape
    extent: int           # flat: number of elements; rows: size of axis 0
    step: int             # elements (flat) or rows (rows) per chunk
    varying: frozenset    # slots computed chunk by chunk


def chunk_layout(program, shapes: dict, chunk_bytes: int) -> Optional[Layout]:
    """How to cut this program into chunks, or None when it cannot be (or would not gain)."""
    slots = list(shapes)
    full = max((shapes[i.out] for i in program.instrs), key=_size, default=())
    if not full:
        return None
    itemsize = max(program.dtypes[s].itemsize for s in slots)
    if all(shapes[s] == full or _size(shapes[s]) == 1 for s in slots):
        varying = frozenset(s for s in slots if shapes[s] == full and _size(full) > 1)
        step = max(1024, chunk_bytes // itemsize)
        n = _size(full)
        return Layout("flat", full, n, step, varying) if n > step else None
    rank, rows = len(full), full[0]
    inner = _size(full[1:])
    step = max(1, chunk_bytes // (itemsize * max(inner, 1)))
    if rows <= step:
        return None
    varying = frozenset(s for s in slots if len(shapes[s]) == rank and shapes[s][0] == rows)
    return Layout("rows", full, rows, step, varying)


def build_chunked(program, shapes: dict, layout: Layout, fallback: Callable) -> tuple:
    """`kernel(run, *inputs)`; `run(body, args, extent, step)` executes `body(*args, lo, hi)` over the range."""
    env = _Env()
    n_in = len(program.input_slots)
    var = layout.varying
    flat = layout.mode == "flat"
    instrs = list(program.instrs)
    hoisted = [i for i in instrs if i.out not in var]
    looped = [i for i in instrs if i.out in var]
    outs = set(program.outputs)
    head: list = []
    loc = {s: f"i{k}" for k, s in enumerate(program.input_slots)}
    loc.update({s: env.bind("c", v) for s, v in program.consts.items()})
    if flat:
        conds = [f"i{k}.flags.c_contiguous" for k, s in enumerate(program.input_slots) if s in var]
        if conds:
            head.append(f"    if not ({' and '.join(conds)}): return {env.bind('fallback', fallback)}"
                        f"({', '.join(f'i{k}' for k in range(n_in))})")
    # hoisted values: straight-line at their own shapes (fresh arrays, they are small)
    for ins in hoisted:
        head.append(f"    v{ins.out} = {_call(env, ins, [loc[a] for a in ins.args], None)}")
        loc[ins.out] = f"v{ins.out}"
    # loop arguments: varying inputs (flat views), output arrays, loop-invariant values
    loop_args: list = []
    inner: dict = {}
    for k, s in enumerate(program.input_slots):
        if s in var:
            head.append(f"    x{k} = i{k}.reshape(-1)" if flat else f"    x{k} = i{k}")
            loop_args.append(f"x{k}")
            inner[s] = ("slice", f"x{k}")
    out_arrays: dict = {}
    for ins in looped:
        if ins.out in outs and ins.out not in out_arrays:
            name = f"o{len(out_arrays)}"
            out_arrays[ins.out] = name
            head.append(f"    {name} = {_alloc(env, program, shapes, ins.out)}")
            head.append(f"    f{name} = {name}.reshape(-1)" if flat else f"    f{name} = {name}")
            loop_args.append(f"f{name}")
            inner[ins.out] = ("out", f"f{name}")
    used = {a for ins in looped for a in ins.args if a not in var}
    for s in sorted(used):
        name = f"h{s}"
        expr = loc[s]
        if flat and shapes[s] != ():
            expr = f"{env.bind('_asarray', np.asarray)}({expr}).reshape(())"
        head.append(f"    {name} = {expr}")
        loop_args.append(name)
        inner[s] = ("invariant", name)
    # the loop body: scratch buffers allocated once per call of `body`, sliced to each chunk
    prologue: list = []
    header = ["    for s in range(lo, hi, STEP):", "        e = s + STEP", "        if e > hi: e = hi",
              "        m = e - s"]
    iloc: dict = {}
    for s, (kind, name) in inner.items():
        if kind == "invariant":
            iloc[s] = name
        else:
            iloc[s] = f"{name}_c"
            header.append(f"        {name}_c = {name}[s:e]")

    rows: dict = {}
    if flat:
        for s in sorted({a for ins in looped if ins.fn in _ROW_UFUNCS for a in ins.args if a not in var}):
            prologue.append(f"    R{s} = {env.bind('_empty', np.empty)}({layout.step}, {env.bind('_d', program.dtypes[s])})")
            prologue.append(f"    {env.bind('_copyto', np.copyto)}(R{s}, {iloc[s]})")     # a bit copy
            header.append(f"        r{s} = R{s}[:m]")
            rows[s] = f"r{s}"

    def scratch(slot, name, lines, indent) -> bool:
        shape = (layout.step,) if flat else (layout.step,) + tuple(shapes[slot][1:])
        prologue.append(f"    T{name} = {_alloc(env, program, shapes, slot, shape)}")
        header.append(f"        {name} = T{name}[:m]")
        return False

    last = _last_uses(looped, outs)
    if flat:
        key_of = lambda s: ((), program.dtypes[s].str)  # noqa: E731
    else:
        key_of = lambda s: (tuple(shapes[s][1:]), program.dtypes[s].str)  # noqa: E731
    bufs = _Buffers(program, looped, key_of, outs, last)
    kinds = {ins.out: ins.kind for ins in looped}
    for s in out_arrays:
        if kinds[s] == "ufunc":
            bufs.reserve(s, iloc[s], True)
    copy_into = {s: iloc[s] for s in out_arrays if kinds[s] != "ufunc"}
    block: list = []
    _emit_block(env, program, looped, iloc, bufs, scratch, block, "        ", copy_into, rows)
    lines = [f"STEP = {layout.step}", f"def body({', '.join(loop_args + ['lo', 'hi'])}):"]
    lines += prologue + header + block
    # the kernel: hoisted values, output arrays, the chunk loop (run by `run`), results
    lines.append(f"def fused(run, {', '.join(f'i{k}' for k in range(n_in))}):")
    lines += head
    lines.append(f"    run(body, ({', '.join(loop_args)}{',' if len(loop_args) == 1 else ''}), {layout.extent}, STEP)")
    final = dict(loc)
    final.update(out_arrays)
    lines.append(f"    return {_returns(program, final, shapes, set(out_arrays))}")
    fn, src = _compile(env, lines, "fused", "chunked")
    fn.source = src
    return fn


def run_serial(body, args, extent, step) -> None:
    """Run the whole chunk range on the calling thread."""
    body(*args, 0, extent)
