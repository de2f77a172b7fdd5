"""How one fusible graph op becomes instructions of a fused program.

Three kinds of source op:

- a kernel that IS a NumPy ufunc (`AddV2` = `np.add`, `Tanh` = `np.tanh`, ...):
  one "ufunc" instruction, run with `out=` buffers by the NumPy backends;
- a composite kernel made only of ufunc calls (`Relu`, `Sigmoid`, `Rsqrt`,
  `SquaredDifference`, `ClipByValue`, ...): the op's own eager kernel is run
  once on `_Tracer` stand-ins (NumPy's `__array_ufunc__` protocol), which
  records each ufunc call as an instruction and each constant it creates as a
  typed constant slot.  The recipe IS the eager kernel, so there is no second
  copy to keep in step (`expand`, `expandable`);
- anything else flagged `elementwise` (`Cast`, `SelectV2`, `LeakyRelu`, ...):
  one "opaque" instruction calling the op's own kernel (allocates its result).

Alias ops (`OpDef.alias`: `Identity`, `StopGradient`) emit no instruction.
Before an op joins a group, `check_op` runs its kernel (and, for a composite
kernel, its traced expansion) on tiny arrays of the input dtypes: the kernel's
result dtype must be the dtype the graph declares, otherwise the op is not
fused (the unfused graph would not produce the declared dtype either, and the
fused kernel must behave exactly like it).

numexpr templates (`NE_TEMPLATES`, by ufunc; `NE_OPAQUE`, by op type) exist
only where numexpr computes the same operation in the same dtype:
float32/float64/bool.  numexpr 2.x evaluates `maximum`, `minimum` and `sign`
in float64 even for float32 inputs, so those are written with `where` and
comparisons (same NaN and signed-zero behaviour as NumPy's loops); Python
float literals would also upcast float32 to float64, so every constant is a
typed 0-d array passed as an input (`{zero}`/`{one}` placeholders).  Integer
ops, casts, rounding and floor division/modulo never go to numexpr.

`COST_CLASS` names the cost-model class of each ufunc (cost.py).

Imports `numpy` only.
"""
from __future__ import annotations

from typing import Optional

import numpy as np


class NotTraceable(Exception):
    """The kernel does something other than plain ufunc calls on its inputs and typed constants."""


class _Tracer:
    """Stands for one slot of builder `b` while an op's own kernel runs; records the ufunc calls."""

    __slots__ = ("b", "slot")
    __array_priority__ = 10_000

    def __init__(self, b, slot: int):
        self.b = b
        self.slot = slot

    @property
    def dtype(self) -> np.dtype:
        return self.b.slot_dtype(self.slot)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or set(kwargs) - {"dtype"}:
            raise NotTraceable(f"{ufunc.__name__}.{method} with {sorted(kwargs)}")
        like = next(x for x in inputs if isinstance(x, _Tracer))
        if "dtype" in kwargs and np.dtype(kwargs["dtype"]) != like.dtype:
            raise NotTraceable(f"{ufunc.__name__} computes in {kwargs['dtype']}, not {like.dtype}")
        slots = []
        for x in inputs:
            if isinstance(x, _Tracer):
                if x.b is not self.b:
                    raise NotTraceable("value of another trace")
                slots.append(x.slot)
            elif np.result_type(like.dtype, x) == like.dtype:     # a constant that keeps the dtype
                slots.append(self.b.const(x, like.slot))
            else:
                raise NotTraceable(f"constant {x!r} changes the dtype {like.dtype}")
        return _Tracer(self.b, self.b.ufunc(ufunc, *slots))

    def __array_function__(self, func, types, args, kwargs):
        raise NotTraceable(f"{func.__name__} is not a ufunc")

    def __array__(self, *args, **kwargs):
        raise NotTraceable("converted to an array")


def expand(opdef, b, arg_slots) -> int:
    """Run `opdef`'s own kernel on tracers over `arg_slots` of builder `b`; the result slot."""
    out = opdef.kernel(*[_Tracer(b, s) for s in arg_slots])
    if not isinstance(out, _Tracer) or out.b is not b:
        raise NotTraceable("the kernel's result is not computed from its inputs by ufuncs")
    return out.slot


_FN = {np.exp: "exp", np.expm1: "expm1", np.log: "log", np.log1p: "log1p", np.sqrt: "sqrt", np.sin: "sin",
       np.cos: "cos", np.tanh: "tanh", np.floor: "floor", np.ceil: "ceil", np.isnan: "isnan",
       np.isfinite: "isfinite", np.absolute: "abs"}
NE_TEMPLATES: dict = {
    np.add: "({0} + {1})", np.subtract: "({0} - {1})", np.multiply: "({0} * {1})",
    np.true_divide: "({0} / {1})", np.power: "({0} ** {1})", np.negative: "(-{0})",
    np.square: "({0} * {0})", np.reciprocal: "({one} / {0})",
    np.less: "({0} < {1})", np.less_equal: "({0} <= {1})", np.greater: "({0} > {1})",
    np.greater_equal: "({0} >= {1})", np.equal: "({0} == {1})", np.not_equal: "({0} != {1})",
    np.logical_and: "({0} & {1})", np.logical_or: "({0} | {1})", np.logical_not: "(~{0})",
    # NumPy: maximum(a, b) = a if (a > b or a is NaN) else b (so b when equal, NaN propagates)
    np.maximum: "where((({0} > {1}) | ({0} != {0})), {0}, {1})",
    np.minimum: "where((({0} < {1}) | ({0} != {0})), {0}, {1})",
    # NumPy: sign(-0.0) = +0.0 and sign(NaN) = NaN; x + 0 gives exactly that for both
    np.sign: "where(({0} > {zero}), {one}, where(({0} < {zero}), (-{one}), ({0} + {zero})))",
    **{u: name + "({0})" for u, name in _FN.items()},
}
NE_OPAQUE: dict = {"SelectV2": "where({0}, {1}, {2})"}
NE_DTYPES = frozenset({"float32", "float64", "bool"})

COST_CLASS: dict = {np.tanh: "tanh", np.sin: "trig", np.cos: "trig", np.exp: "exp", np.expm1: "exp",
                    np.log: "log", np.log1p: "log", np.power: "pow", np.floor_divide: "div", np.mod: "div"}


def kind_of(opdef, in_dtypes: tuple, attrs: dict) -> str:
    """"alias", "expand", "ufunc" or "opaque" for a fusible op with these input dtypes and attrs."""
    if opdef.alias:
        return "alias"
    if isinstance(opdef.kernel, np.ufunc):
        return "ufunc"
    if not attrs and expandable(opdef, in_dtypes):
        return "expand"
    return "opaque"


_PROBE = (-2.5, -1.0, -0.0, 0.0, 0.25, 1.0, 3.0)
_EXPANDS: dict = {}


def expandable(opdef, in_dtypes: tuple) -> bool:
    """True when the op's kernel traces to ufunc calls whose result equals the kernel's on probe values."""
    key = (opdef.name, tuple(np.dtype(d).str for d in in_dtypes))
    hit = _EXPANDS.get(key)
    if hit is None:
        hit = False
        try:
            with np.errstate(all="ignore"):
                args = [np.array(_PROBE).astype(d) for d in in_dtypes]
                want = np.asarray(opdef.kernel(*args))
                probe = _Probe()
                got = probe.values[expand(opdef, probe, [probe.input(a) for a in args])]
                hit = got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind in "fc")
        except Exception:  # noqa: BLE001 - anything the tracer cannot follow stays an opaque kernel call
            hit = False
        _EXPANDS[key] = hit
    return hit


def dummy(dtype: np.dtype, rank: int) -> np.ndarray:
    """A tiny array (all ones / True) of `dtype` with `rank` dims of size 1."""
    return np.ones((1,) * rank, dtype=dtype)


_CHECKED: dict = {}


def check_op(opdef, in_dtypes: tuple, in_ranks: tuple, attrs: dict, out_dtype: np.dtype) -> Optional[str]:
    """None if the op can be fused with these input dtypes, else the reason it cannot."""
    key = (opdef.name, tuple(in_dtypes), tuple(in_ranks), out_dtype,     # NumPy dtypes: equal by value
           tuple(sorted((k, repr(v)) for k, v in attrs.items())) if attrs else ())
    hit = _CHECKED.get(key, False)
    if hit is not False:
        return hit
    reason = None
    try:
        with np.errstate(all="ignore"):
            args = [dummy(d, r) for d, r in zip(in_dtypes, in_ranks)]
            res = opdef.kernel(*args, **attrs)
            if np.result_type(res) != out_dtype:
                reason = f"kernel gives {np.result_type(res)}, graph declares {out_dtype}"
    except Exception as e:  # noqa: BLE001 - any failure means "do not fuse"
        reason = f"kernel fails on dummy inputs: {type(e).__name__}: {e}"
    _CHECKED[key] = reason
    return reason


class _Probe:
    """A tiny builder that evaluates an expansion on concrete arrays (used by `expandable`)."""

    def __init__(self):
        self.values: list = []

    def input(self, a) -> int:
        self.values.append(np.asarray(a))
        return len(self.values) - 1

    def slot_dtype(self, s: int) -> np.dtype:
        return self.values[s].dtype

    def const(self, value, like: int) -> int:
        return self.input(np.asarray(value, dtype=self.values[like].dtype))

    def ufunc(self, u, *args) -> int:
        return self.input(u(*[self.values[a] for a in args]))
