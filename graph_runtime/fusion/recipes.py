"""How one fusible graph op becomes instructions of a fused program.

Three kinds of source op:

- a kernel that IS a NumPy ufunc (`AddV2` = `np.add`, `Tanh` = `np.tanh`, ...):
  one "ufunc" instruction, run with `out=` buffers by the NumPy backends;
- a composite kernel listed in `EXPANSIONS` (`Relu`, `Sigmoid`, `Rsqrt`,
  `SquaredDifference`, `ClipByValue`): the same ufuncs the kernel calls, in the
  same order, with the same typed constants, so results are bitwise equal;
- anything else flagged `elementwise` (`Cast`, `SelectV2`, `LeakyRelu`, ...):
  one "opaque" instruction calling the op's own kernel (allocates its result).

`Identity` is an alias (no instruction).  Before an op joins a group,
`check_op` runs its kernel and its recipe on tiny arrays of the input dtypes:
the kernel's result dtype must be the dtype the graph declares, otherwise the
op is not fused (the unfused graph would not produce the declared dtype
either, and the fused kernel must behave exactly like it).

numexpr templates (`NE_TEMPLATES`, by ufunc; `NE_OPAQUE`, by op type) exist
only where numexpr computes the same operation in the same dtype:
float32/float64/bool.  numexpr 2.x evaluates `maximum`, `minimum` and `sign`
in float64 even for float32 inputs, so those are written with `where` and
comparisons (same NaN and signed-zero behaviour as NumPy's loops); Python
float literals would also upcast float32 to float64, so every constant is a
typed 0-d array passed as an input (`{zero}`/`{one}` placeholders).  Integer
ops, casts, rounding and floor division/modulo never go to numexpr.

`COST_CLASS` names the cost-model class of each ufunc (cost.py).

Imports `numpy` and `eager.registry` only.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

ALIAS_OPS = frozenset({"Identity"})


def _relu(b, x):
    return b.ufunc(np.maximum, x, b.const(0, x))


def _sigmoid(b, x):      # eager/ops/math.py's _sigmoid_kernel: (tanh(x * 0.5) + 1) * 0.5
    half = b.const(0.5, x)
    t = b.ufunc(np.multiply, x, half)
    t = b.ufunc(np.tanh, t)
    t = b.ufunc(np.add, t, b.const(1, x))
    return b.ufunc(np.multiply, t, half)


def _rsqrt(b, x):
    return b.ufunc(np.reciprocal, b.ufunc(np.sqrt, x))


def _squared_difference(b, x, y):
    return b.ufunc(np.square, b.ufunc(np.subtract, x, y))


def _clip(b, x, lo, hi):
    return b.ufunc(np.minimum, b.ufunc(np.maximum, x, lo), hi)


EXPANSIONS: dict[str, Callable] = {
    "Relu": _relu,
    "Sigmoid": _sigmoid,
    "Rsqrt": _rsqrt,
    "SquaredDifference": _squared_difference,
    "ClipByValue": _clip,
}

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
    np.sign: "where(({0} > {zero}), {one}, where(({0} < {zero}), (-{one}), {0}))",
    **{u: name + "({0})" for u, name in _FN.items()},
}
NE_OPAQUE: dict = {"SelectV2": "where({0}, {1}, {2})"}
NE_DTYPES = frozenset({"float32", "float64", "bool"})

COST_CLASS: dict = {np.tanh: "tanh", np.sin: "trig", np.cos: "trig", np.exp: "exp", np.expm1: "exp",
                    np.log: "log", np.log1p: "log", np.power: "pow", np.floor_divide: "div", np.mod: "div"}


def kind_of(opdef) -> str:
    """"alias", "expand", "ufunc" or "opaque" for a fusible op type."""
    if opdef.name in ALIAS_OPS:
        return "alias"
    if opdef.name in EXPANSIONS:
        return "expand"
    if isinstance(opdef.kernel, np.ufunc):
        return "ufunc"
    return "opaque"


def dummy(dtype: np.dtype, rank: int) -> np.ndarray:
    """A tiny array (all ones / True) of `dtype` with `rank` dims of size 1."""
    return np.ones((1,) * rank, dtype=dtype)


_CHECKED: dict = {}


def check_op(opdef, in_dtypes: tuple, in_ranks: tuple, attrs: dict, out_dtype: np.dtype) -> Optional[str]:
    """None if the op can be fused with these input dtypes, else the reason it cannot."""
    key = (opdef.name, tuple(d.str for d in in_dtypes), tuple(in_ranks), out_dtype.str,
           tuple(sorted((k, repr(v)) for k, v in attrs.items())))
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
            elif kind_of(opdef) == "expand":
                probe = _Probe()
                refs = [probe.input(a) for a in args]
                r = EXPANSIONS[opdef.name](probe, *refs)
                if probe.values[r].dtype != out_dtype or not np.array_equal(probe.values[r], res):
                    reason = "expansion differs from the kernel"
    except Exception as e:  # noqa: BLE001 - any failure means "do not fuse"
        reason = f"kernel fails on dummy inputs: {type(e).__name__}: {e}"
    _CHECKED[key] = reason
    return reason


class _Probe:
    """A tiny builder that evaluates an expansion on concrete arrays (used by check_op)."""

    def __init__(self):
        self.values: list = []

    def input(self, a) -> int:
        self.values.append(np.asarray(a))
        return len(self.values) - 1

    def const(self, value, like: int) -> int:
        return self.input(np.asarray(value, dtype=self.values[like].dtype))

    def ufunc(self, u, *args) -> int:
        return self.input(u(*[self.values[a] for a in args]))
