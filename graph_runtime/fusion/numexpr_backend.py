"""numexpr kernels: the whole program as ONE numexpr expression, compiled once.

`build(program, shapes)` returns a kernel, or None when numexpr must not be
used for this program:

- numexpr is not importable, or `enabled` is False (tests switch it off);
- the program has several outputs, or its output is not an instruction;
- a value is not float32/float64/bool (numexpr has no int8/int16/uint8/float16
  and would widen them; integer division and modulo differ from NumPy's), or an
  instruction has no exact template (recipes.NE_TEMPLATES / NE_OPAQUE: casts,
  rounding, floor division, opaque kernels);
- the expression text is too long (a value used several times is written out
  at each use; numexpr merges the duplicate subtrees, but the text doubles), or
  numexpr refuses it (too many registers), or a trial run on one-element inputs
  gives another dtype than the graph's.

Constants are typed 0-d arrays passed as inputs (`c<slot>`, `k<dtype>_<name>`),
never literals: numexpr evaluates `x * 2.5` in float64 for a float32 `x`.  The
compiled `NumExpr` object is called directly with positional arrays (no
expression parsing, no frame inspection: `numexpr.evaluate`'s per-call
overhead).  Results agree with the unfused graph within float rounding: the
same operations in the same order, but numexpr's transcendental functions
(libm) may differ from NumPy's SIMD loops in the last bits.

Imports `numpy` (and `numexpr` lazily) and sibling modules.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .recipes import NE_DTYPES, dummy

MAX_EXPRESSION_CHARS = 20000
enabled = True        # tests set this to False to exercise the NumPy-only path (with monkeypatch)

_ne = None


def available() -> bool:
    """Is numexpr importable (and not switched off)?"""
    global _ne
    if not enabled:
        return False
    if _ne is None:
        try:
            from numexpr import necompiler
            _ne = necompiler
        except Exception:  # noqa: BLE001 - numexpr is optional
            _ne = False
    return _ne is not False


def expressible(program) -> bool:
    """Can numexpr compute this program exactly (ignoring size and availability)?"""
    if len(program.outputs) != 1:
        return False
    out = program.outputs[0]
    if not any(i.out == out for i in program.instrs):
        return False
    for ins in program.instrs:
        if ins.ne is None or ins.dtype.name not in NE_DTYPES:
            return False
        if any(program.dtypes[a].name not in NE_DTYPES for a in ins.args):
            return False
    return True


def expression(program) -> tuple:
    """`(expression text, {name: slot or constant array})` for the program's single output."""
    names: dict = {}
    text: dict = {}
    for k, s in enumerate(program.input_slots):
        text[s] = f"i{k}"
        names[f"i{k}"] = s
    for s, v in program.consts.items():
        text[s] = f"c{s}"
        names[f"c{s}"] = np.asarray(v)
    for ins in program.instrs:
        dt = ins.dtype.name
        extra = {}
        if "{zero}" in ins.ne or "{one}" in ins.ne:
            for label, value in (("zero", 0), ("one", 1)):
                n = f"k{dt}_{label}"
                names[n] = np.asarray(value, dtype=ins.dtype)
                extra[label] = n
        text[ins.out] = ins.ne.format(*[text[a] for a in ins.args], **extra)
    return text[program.outputs[0]], names


def build(program, shapes: dict) -> Optional[Callable]:
    if not available() or not expressible(program):
        return None
    ex, names = expression(program)
    if len(ex) > MAX_EXPRESSION_CHARS:
        return None
    used = [n for n in names if _mentions(ex, n)]
    sig = []
    for n in used:
        v = names[n]
        dt = program.dtypes[v] if isinstance(v, int) else v.dtype
        sig.append((n, _ne.getType(np.empty(0, dt))))
    try:
        compiled = _ne.NumExpr(ex, sig)
    except Exception:  # noqa: BLE001 - numexpr refuses it (e.g. too many registers): use NumPy
        return None
    n_in = len(program.input_slots)
    index = {s: k for k, s in enumerate(program.input_slots)}
    consts = {n: v for n, v in names.items() if not isinstance(v, int)}
    args = [f"i{index[names[n]]}" if isinstance(names[n], int) else n for n in used]
    out_slot = program.outputs[0]
    scalar = not shapes[out_slot]
    expected = program.dtypes[out_slot]
    # trial run: numexpr must give the dtype the graph declares
    trial = {f"i{k}": dummy(program.dtypes[s], len(shapes[s])) for k, s in enumerate(program.input_slots)}
    trial.update(consts)
    try:
        with np.errstate(all="ignore"):
            res = compiled(*[trial[a] for a in args], out=None, order="K", casting="safe", ex_uses_vml=False)
    except Exception:  # noqa: BLE001
        return None
    if res.dtype != expected:
        return None
    params = ", ".join(f"i{k}" for k in range(n_in))
    call = f"__cx({', '.join(args)}, out=None, order='K', casting='safe', ex_uses_vml=False)"
    src = f"def fused({params}):\n    return {call}{'[()]' if scalar else ''}\n"
    ns = dict(consts)
    ns["__cx"] = compiled
    exec(compile(src, "<graphjit-fused-numexpr>", "exec"), ns)
    fn = ns["fused"]
    fn.source = f"# numexpr: {ex}\n" + src
    fn.expression = ex
    return fn


def _mentions(ex: str, name: str) -> bool:
    import re
    return re.search(rf"\b{re.escape(name)}\b", ex) is not None
