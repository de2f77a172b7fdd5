"""The expression program of one fused group: what the `FusedElementwise` op's attr holds.

A `Program` is a straight-line list of `Instr`s over numbered *slots*.  A slot
holds an input of the fused op (`input_slots[i]` is input i), a typed constant
introduced by an expansion (`consts`), or the result of one instruction
(`instr.out`).  Instructions are in a topological order (the source ops'
creation order), so every argument slot is defined before it is used.
`outputs` lists the slot of each output of the fused op (an output may be an
input slot when a group output is an `Identity` of an input).

Each instruction records the source op it came from (`source`, `op_type`) for
reports, error messages and numexpr templates.  Static shapes (`static_shapes`,
None dims allowed) are what the pass saw; `shapes_for(input_shapes)` gives the
concrete shape of every slot once the input shapes are known (each
instruction's shape is the broadcast of its arguments', exactly as the
unfused ops compute it, so no instruction does more work than its source op).

`interpret(program, *arrays)` is the reference evaluation (one fresh array per
instruction, the same calls the unfused graph makes); the generated kernels
(numpy_backend.py, numexpr_backend.py) must agree with it.

Imports `numpy`, `eager` and `recipes` only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from eager.errors import InvalidArgumentError
from eager.shape import broadcast_shapes
from eager.registry import Spec

from .recipes import COST_CLASS, NE_OPAQUE, NE_TEMPLATES, dummy, expand, kind_of


@dataclass(eq=False)
class Instr:
    """One elementwise step: `out = fn(*args, **attrs)` (a ufunc, or an op kernel for "opaque")."""

    kind: str                  # "ufunc" | "opaque"
    fn: Callable
    args: tuple                # slots
    out: int                   # slot
    dtype: np.dtype
    attrs: dict = field(default_factory=dict)
    source: str = ""           # name of the graph op it comes from
    op_type: str = ""
    ne: Optional[str] = None   # numexpr template ("({0} + {1})"), None: not expressible
    cost: str = "arith"        # cost-model class (cost.py)

    def label(self) -> str:
        name = self.fn.__name__ if self.kind == "ufunc" else self.op_type
        return f"{name}({', '.join(f'%{a}' for a in self.args)})"


@dataclass(eq=False)
class Program:
    n_slots: int
    input_slots: tuple
    in_dtypes: tuple           # np.dtype per input
    consts: dict               # slot -> 0-d (or small) typed array
    instrs: tuple
    outputs: tuple             # slot per output
    out_dtypes: tuple          # eager DType per output
    static_shapes: dict        # slot -> static shape tuple (None dims) or None (unknown rank)
    dtypes: dict               # slot -> np.dtype
    members: tuple = ()        # (source op name, op type) of every fused op, in order
    sources: tuple = ()        # (op type, attrs, arg slots, out dtype name, name) per fused op (codec.py)
    cache: dict = field(default_factory=dict, repr=False)   # kernels by concrete input shapes (kernel.py)

    # -- shapes --------------------------------------------------------------------------------
    def shapes_for(self, input_shapes) -> dict:
        """Concrete shape of every slot given the inputs' shapes (NumPy broadcasting per instruction)."""
        shapes = {s: tuple(sh) for s, sh in zip(self.input_slots, input_shapes)}
        shapes.update({s: v.shape for s, v in self.consts.items()})
        seen: dict = {}       # argument shapes -> their broadcast (a program has few distinct combinations)
        for ins in self.instrs:
            args = ins.args
            if len(args) == 1:
                shapes[ins.out] = shapes[args[0]]
                continue
            key = tuple([shapes[a] for a in args])
            out = seen.get(key)
            if out is None:
                out = seen[key] = np.broadcast_shapes(*key)
            shapes[ins.out] = out
        return shapes

    def infer(self, specs: list) -> list:
        """Output `Spec`s for input specs (static shapes with None dims), checking the input dtypes."""
        if len(specs) != len(self.input_slots):
            raise InvalidArgumentError(f"FusedElementwise: expected {len(self.input_slots)} inputs, got "
                                       f"{len(specs)}", op_name="FusedElementwise")
        shapes: dict = {}
        for i, (s, slot, dt) in enumerate(zip(specs, self.input_slots, self.in_dtypes)):
            if s.dtype.np_dtype != dt:
                raise InvalidArgumentError(f"FusedElementwise: input {i} must be {dt}, got {s.dtype.name}",
                                           op_name="FusedElementwise")
            shapes[slot] = None if s.shape is None else tuple(s.shape)
        shapes.update({s: v.shape for s, v in self.consts.items()})
        memo: dict = {}
        for ins in self.instrs:
            shapes[ins.out] = static_broadcast(shapes, ins.args, memo)
        return [Spec(shapes[s], dt) for s, dt in zip(self.outputs, self.out_dtypes)]

    def signature(self) -> tuple:
        """A hashable key: programs with equal signatures compute the same function (kernels are shared)."""
        sig = getattr(self, "_signature", None)
        if sig is None:
            sig = (tuple(self.input_slots), tuple(d.str for d in self.in_dtypes),
                   tuple((s, v.dtype.str, v.shape, v.tobytes()) for s, v in sorted(self.consts.items())),
                   tuple((i.kind, i.fn, i.args, i.out, i.dtype.str, _freeze(i.attrs)) for i in self.instrs),
                   tuple(self.outputs))
            self._signature = sig
        return sig

    # -- description ------------------------------------------------------------------------------
    def op_types(self) -> list:
        return [t for _, t in self.members]

    def summary(self) -> str:
        counts: dict = {}
        for t in self.op_types():
            counts[t] = counts.get(t, 0) + 1
        parts = [f"{t}x{n}" if n > 1 else t for t, n in counts.items()]
        return f"{len(self.members)} ops [{', '.join(parts)}] -> {len(self.outputs)} output(s)"

    def listing(self) -> str:
        """One line per instruction, for debugging and golden tests."""
        lines = [f"inputs: {', '.join(f'%{s}: {d}' for s, d in zip(self.input_slots, self.in_dtypes))}"]
        for s, v in self.consts.items():
            lines.append(f"%{s} = const {v.dtype}({v.item() if v.size == 1 else v.shape})")
        for ins in self.instrs:
            lines.append(f"%{ins.out}: {ins.dtype} = {ins.label()}    # {ins.source}")
        lines.append(f"outputs: {', '.join(f'%{s}' for s in self.outputs)}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<fused program: {self.summary()}>"


def _freeze(attrs: dict) -> tuple:
    out = []
    for k in sorted(attrs):
        v = attrs[k]
        try:
            hash(v)
        except TypeError:
            v = ("id", id(v))
        out.append((k, v))
    return tuple(out)


def interpret(program: Program, *arrays):
    """Reference evaluation: each instruction on fresh arrays, like the unfused ops."""
    vals: dict = {s: a for s, a in zip(program.input_slots, arrays)}
    vals.update(program.consts)
    for ins in program.instrs:
        vals[ins.out] = ins.fn(*[vals[a] for a in ins.args], **ins.attrs)
    outs = tuple(vals[s] for s in program.outputs)
    return outs[0] if len(outs) == 1 else outs


# ------------------------------------------------------------------ building
_UFUNC_DTYPE: dict = {}


def _ufunc_out_dtype(u, dtypes: tuple) -> np.dtype:
    key = (u, dtypes)           # NumPy dtypes hash and compare by value
    hit = _UFUNC_DTYPE.get(key)
    if hit is None:
        with np.errstate(all="ignore"):
            hit = _UFUNC_DTYPE[key] = np.result_type(u(*[dummy(d, 0) for d in dtypes]))
    return hit


def static_broadcast(shapes: dict, args, memo: dict) -> Optional[tuple]:
    """The static broadcast shape (None dims unknown) of slots `args`, memoized per pair of shapes in
    `memo` (a fused group has few distinct pairs)."""
    shape = shapes[args[0]]
    for a in args[1:]:
        other = shapes[a]
        hit = memo.get((shape, other))
        if hit is None:
            hit = memo[(shape, other)] = broadcast_shapes(shape, other, "FusedElementwise")
        shape = hit
    return shape


_DTYPE_NAMES: dict = {}


def _dtype_name(dtype) -> str:
    """`np.dtype(dtype).name`, cached (the property builds its string on every read)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


class ProgramBuilder:
    """Accumulates slots and instructions for one group (used by the fusion pass)."""

    def __init__(self):
        self.n = 0
        self.input_slots: list = []
        self.in_dtypes: list = []
        self.consts: dict = {}
        self.instrs: list = []
        self.dtypes: dict = {}
        self.shapes: dict = {}
        self._source = ("", "")
        self.sources: list = []
        self._broadcasts: dict = {}      # (shape, shape) -> broadcast: a group has few distinct pairs

    def _slot(self, dtype, shape) -> int:
        s = self.n
        self.n += 1
        self.dtypes[s] = np.dtype(dtype)
        self.shapes[s] = None if shape is None else tuple(shape)
        return s

    def input(self, dtype, shape) -> int:
        s = self._slot(dtype, shape)
        self.input_slots.append(s)
        self.in_dtypes.append(np.dtype(dtype))
        return s

    def slot_dtype(self, s: int) -> np.dtype:
        return self.dtypes[s]

    def const(self, value, like: int) -> int:
        arr = np.asarray(value, dtype=self.dtypes[like])
        s = self._slot(arr.dtype, arr.shape)
        self.consts[s] = arr
        return s

    def _shape(self, args) -> Optional[tuple]:
        return static_broadcast(self.shapes, args, self._broadcasts)

    def ufunc(self, u, *args) -> int:
        dt = _ufunc_out_dtype(u, tuple(self.dtypes[a] for a in args))
        s = self._slot(dt, self._shape(args))
        self.instrs.append(Instr("ufunc", u, tuple(args), s, dt, {}, self._source[0], self._source[1],
                                 NE_TEMPLATES.get(u), COST_CLASS.get(u, "arith")))
        return s

    def opaque(self, kernel, attrs: dict, dtype, op_type: str, *args) -> int:
        s = self._slot(dtype, self._shape(args))
        self.instrs.append(Instr("opaque", kernel, tuple(args), s, np.dtype(dtype), dict(attrs), self._source[0],
                                 op_type, NE_OPAQUE.get(op_type), "opaque"))
        return s

    def add_op(self, opdef, attrs: dict, arg_slots: list, out_dtype, name: str) -> int:
        """Append the instructions for one graph op; returns the slot of its result."""
        self._source = (name, opdef.name)
        self.sources.append((opdef.name, dict(attrs), tuple(arg_slots), _dtype_name(out_dtype), name))
        kind = kind_of(opdef, tuple(self.dtypes[s] for s in arg_slots), attrs)
        if kind == "alias":
            return arg_slots[0]
        if kind == "expand":
            return expand(opdef, self, arg_slots)
        if kind == "ufunc":
            return self.ufunc(opdef.kernel, *arg_slots)
        return self.opaque(opdef.kernel, attrs, out_dtype, opdef.name, *arg_slots)

    def finish(self, outputs: list, out_dtypes: list, members: list) -> Program:
        return Program(self.n, tuple(self.input_slots), tuple(self.in_dtypes), dict(self.consts),
                       tuple(self.instrs), tuple(outputs), tuple(out_dtypes), dict(self.shapes), dict(self.dtypes),
                       tuple(members), tuple(self.sources))
