"""Lazy logical operators: `and_`, `or_`, `not_`, and comparisons.

With Python values they are exactly Python's `a and b` / `a or b` / `not a`
(returning the operand itself, evaluating `b` only when needed).  When the
first operand is a symbolic tensor they stage `cond` (so `b` still only runs
when needed at graph run time) or `logical_not`.
"""
from __future__ import annotations

import operator

import eager as ek

from ._tensors import is_symbolic


def _as_bool_tensor(x):
    e = ek
    t = e.convert_to_tensor(x) if not e.is_tensor(x) else x
    return t if t.dtype == e.bool else e.cast(t, e.bool)


def and_(a_fn, b_fn):
    a = a_fn()
    if is_symbolic(a):
        return ek.cond(a, lambda: _as_bool_tensor(b_fn()), lambda: _as_bool_tensor(a))
    return b_fn() if a else a


def or_(a_fn, b_fn):
    a = a_fn()
    if is_symbolic(a):
        return ek.cond(a, lambda: _as_bool_tensor(a), lambda: _as_bool_tensor(b_fn()))
    return a if a else b_fn()


def not_(a):
    if is_symbolic(a):
        return ek.logical_not(a)
    return not a


def eq(a, b):
    return ek.equal(a, b) if is_symbolic(a) or is_symbolic(b) else operator.eq(a, b)


def not_eq(a, b):
    return ek.not_equal(a, b) if is_symbolic(a) or is_symbolic(b) else operator.ne(a, b)
