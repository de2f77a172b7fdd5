"""A tiny pattern matcher over graph tensors (in the spirit of tinygrad's `PatternMatcher`).

Patterns describe a small expression tree rooted at the op being rewritten:

    P("Mul", V("x"), C("one", is_one), commute=True)    # x * 1 or 1 * x
    P("Neg", P("Neg", V("x")))                          # --x

- `V(name)` matches any tensor and binds it (a name used twice must bind the
  same tensor: `P("Mul", V("x"), V("x"))` is `x * x`).
- `C(name, pred)` matches a `Const` output (not a preserved/fed one) whose
  value satisfies `pred(ndarray)`.
- `P(types, *src, name=None, commute=False)` matches a tensor produced (as
  output 0) by an op of one of `types` whose inputs match `src`; `commute`
  also tries the two inputs swapped.  Interior ops never match across a
  barrier (a preserved op: fed values are arbitrary), when they carry
  control inputs (dropping them would lose an ordering), nor on another
  device than the root (a rewrite never merges ops of two devices).

A `Rule` pairs a pattern with a rewrite function `fn(b, m) -> tensor | None`
(`b`: a `Builder` for the op being rewritten; `m`: the bindings, a dict from
name to dst tensor, `m[name + "_op"]` the op of an interior match).  Returning
None means "does not apply" (e.g. a shape or dtype condition failed).  `exact`
records whether the rewrite is bitwise exact for every input (tests compare
bitwise) or only numerically equivalent (better accuracy, e.g. `Log1p`).

Imports NumPy only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np


@dataclass(frozen=True)
class Pat:
    types: Optional[tuple] = None           # None: any tensor
    src: Optional[tuple] = None
    name: Optional[str] = None
    pred: Optional[Callable] = None         # constant predicate (implies a Const)
    commute: bool = False


def P(types, *src, name=None, commute=False) -> Pat:
    return Pat((types,) if isinstance(types, str) else tuple(types), tuple(src), name, None, commute)


def V(name: str) -> Pat:
    return Pat(None, None, name)


def C(name: str, pred: Callable) -> Pat:
    return Pat(None, None, name, pred)


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: Pat
    fn: Callable
    exact: bool = True
    doc: str = ""


class Builder:
    """What a rewrite function sees: the op being rewritten and ways to build its replacement."""

    def __init__(self, rw, op, inputs, attrs, out_spec):
        self.rw = rw
        self.op = op                # the src op
        self.inputs = inputs        # its dst inputs
        self.attrs = attrs
        self.out = out_spec         # Spec of its output 0 (shape tuple/None, dtype)

    def emit(self, op_type: str, *inputs, **attrs):
        return self.rw.emit(op_type, list(inputs), attrs, like=self.op)._outputs[0]

    def const(self, value):
        return self.rw.const(value, like=self.op)

    def value(self, t) -> Optional[np.ndarray]:
        return self.rw.const_value(t)

    def same_as_output(self, t) -> bool:
        """t has the op's output dtype and exactly its static shape, with a known rank."""
        s = self.out.shape
        return (t._dtype is self.out.dtype and s is not None and t._shape._dims is not None
                and tuple(t._shape._dims) == tuple(s))

    def single_use(self, t) -> bool:
        return self.rw.single_use(t)


def _match(rw, pat: Pat, t, m: dict, device: str) -> bool:
    if pat.types is None:
        if pat.pred is not None:
            key = (pat.pred, id(t))         # t lives as long as the pass: its id is a stable key
            ok = rw.memo.get(key)
            if ok is None:
                ok = rw.memo[key] = _pred_on_const(rw, pat.pred, t)
            if not ok:
                return False
        return _bind(pat.name, t, m)
    op = t._op
    if (t._index != 0 or op._opdef.name not in pat.types or rw.is_barrier(t) or op._control_inputs
            or op._device != device):
        return False
    if not _match_inputs(rw, pat, list(op._inputs), m, device):
        return False
    if pat.name:
        m[pat.name + "_op"] = op
    return _bind(pat.name, t, m)


def _match_inputs(rw, pat: Pat, inputs: list, m: dict, device: str) -> bool:
    if len(inputs) != len(pat.src):
        return False
    saved = dict(m)
    if all(_match(rw, p, x, m, device) for p, x in zip(pat.src, inputs)):
        return True
    if pat.commute and len(inputs) == 2:
        m.clear()
        m.update(saved)
        if _match(rw, pat.src[0], inputs[1], m, device) and _match(rw, pat.src[1], inputs[0], m, device):
            return True
    m.clear()
    m.update(saved)
    return False


def _bind(name, t, m) -> bool:
    if name is None:
        return True
    prev = m.get(name)
    if prev is not None:
        return prev is t
    m[name] = t
    return True


def _pred_on_const(rw, pred, t) -> bool:
    """`pred` on t's constant value (False when t is not constant), evaluated once per pass for each
    small numeric value: a trace makes one Const per Python scalar (`y * 0.5` on 1,000 lines is 1,000
    equal constants), and each evaluation costs an errstate switch and a NumPy reduction."""
    v = rw.const_value(t)
    if v is None:
        return False
    if not isinstance(v, np.ndarray) or v.size > 16 or v.dtype.kind not in "biufc":
        return _safe_pred(pred, v)
    vkey = (pred, v.dtype.str, v.shape, v.tobytes())    # equal bytes, dtype and shape: the same value
    ok = rw.memo.get(vkey)
    if ok is None:
        ok = rw.memo[vkey] = _safe_pred(pred, v)
    return ok


def _safe_pred(pred, v) -> bool:
    try:
        with np.errstate(all="ignore"):
            return bool(pred(v))
    except Exception:   # noqa: BLE001 - a predicate that cannot judge does not match
        return False


class RuleTable:
    """Rules indexed by root op type; `apply(rw, op, inputs, attrs, out_spec)` -> (rule, tensor) or None."""

    def __init__(self, rules):
        self.rules = list(rules)
        self.by_type: dict = {}
        for r in self.rules:
            if r.pattern.types is None:
                raise ValueError(f"rule {r.name}: the root of a pattern must name op types")
            for ty in r.pattern.types:
                self.by_type.setdefault(ty, []).append(r)

    def apply(self, rw, op, inputs, attrs, out_spec, enabled=None):
        rules = self.by_type.get(op._opdef.name)
        if not rules:
            return None
        b = None
        for r in rules:
            if enabled is not None and not enabled(r):
                continue
            m: dict = {}
            if not _match_inputs(rw, r.pattern, list(inputs), m, op._device):
                continue
            if b is None:
                b = Builder(rw, op, inputs, attrs, out_spec)
            res = r.fn(b, m)
            if res is not None:
                return r, res
        return None
