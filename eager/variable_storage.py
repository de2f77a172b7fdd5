"""A `Variable`'s stored array: every read and every write of it goes through this module.

The array lives in the attribute `_stored` of the variable; no other module
touches that attribute (tests/eager/test_variable_storage_access.py scans the
sources).  The rules:

- Reads (`load`) take the variable's `_lock` for the load of the reference and
  return the array; the reader then holds a reference of its own.
- Writes happen holding `_lock` from the read of the old value to the store of
  the new one (`store`, or `load_locked` / `store_locked` inside a kernel that
  holds the lock already), so concurrent updates never lose an increment.
- An update may write INTO the stored array (`in_place_target`) only when
  nobody but the variable can see it: CPython with the GIL, a plain
  `np.ndarray` that owns its memory (`base is None`, so every view of it holds
  a reference to it), writeable, C-contiguous, of the result's shape and dtype,
  and whose reference count is exactly the variable's attribute plus this
  module's own locals (measured at import, not assumed).  A value tensor's array,
  a tape's saved read, a Session fetch, a plan register, a checkpoint writer or
  a view each hold a reference, so each forces a fresh array instead: what they
  hold stays a valid snapshot.  Because every reader takes the lock to load the
  reference, no reader can pick the array up between the check and the end of
  the write, so no reader ever sees it half updated.  Same ufunc, same operands:
  in place or not, the bits are the same.

`GRAPHJIT_INPLACE_VARIABLES=0` (or `set_inplace(False)`) turns in-place writes
off: every update then stores a fresh array.

A writer that needs the value for a while (a checkpoint) takes `snapshot`: the
array itself, read-only, instead of a copy; it holds a reference, so the rule
above keeps it unchanged until the writer drops it.

Imports numpy, `eager.errors`, `eager.switches`, `eager.tensor` and the standard library.
"""
from __future__ import annotations

import platform
import sys

import numpy as np

from .errors import FailedPreconditionError
from .switches import Switch
from .tensor import read_only

_switch = Switch("GRAPHJIT_INPLACE_VARIABLES", "eager.variable_storage.set_inplace")


def _gil_cpython() -> bool:
    """Reference counts and the GIL make the refcount rule exact only on CPython with the GIL."""
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return platform.python_implementation() == "CPython" and (is_gil_enabled is None or is_gil_enabled())


def _stored_refs(var):
    """(the stored array, its reference count seen from here): the count includes the attribute, the local
    `old` and getrefcount's argument.  Callers keep no other reference while they test the count."""
    old = var._stored
    return old, sys.getrefcount(old)


class _Probe:
    __slots__ = ("_stored",)


def _sole_refs():
    """The count `_stored_refs` sees for an array nobody else holds, or None if counts do not track holders
    (then nothing is ever written in place)."""
    probe = _Probe()
    probe._stored = np.empty(4)
    alone = _stored_refs(probe)[1]
    held = probe._stored
    if _stored_refs(probe)[1] != alone + 1 or held is None:
        return None
    return alone


_SOLE = _sole_refs() if _gil_cpython() else None


def inplace_enabled() -> bool:
    """Whether variable updates may write into the stored array (the module docstring's rule)."""
    return _SOLE is not None and _switch.get()


def set_inplace(flag: bool | None) -> bool:
    """Allow (True), forbid (False) or reset to the environment's setting (None) in-place variable updates;
    returns the previous setting."""
    return _switch.set(flag)


def init(var, value) -> None:
    """Give a new variable its first stored value (None: uninitialized)."""
    var._stored = value


def load(var):
    """The stored array (None when uninitialized), loaded under the variable's lock."""
    with var._lock:
        return var._stored


def load_locked(var):
    """The stored array, for a caller that holds `var._lock`."""
    return var._stored


def read_kernel(var):
    """ReadVariableOp's kernel: the stored array, loaded under the lock; an uninitialized variable raises."""
    with var._lock:             # `load` inline: one Python frame less on every read in a plan
        v = var._stored
    if v is None:
        uninitialized(var)
    return v


def snapshot(var):
    """The current value without a copy, read-only, for a writer that holds it while it works (a
    checkpoint): while it is held, an update writes a fresh array instead, so it never changes."""
    return np.asarray(read_only(read_kernel(var)))


def read_locked(var):
    """`read_kernel` for a kernel that holds `var._lock` already."""
    v = var._stored
    if v is None:
        uninitialized(var)
    return v


def uninitialized(var):
    raise FailedPreconditionError(f"Attempting to use uninitialized value {var.name}: run its initializer "
                                  f"(global_variables_initializer()) first", op_name="ReadVariableOp")


def store(var, new) -> None:
    """Store `new` under the variable's lock."""
    with var._lock:
        var._stored = new


def store_locked(var, new) -> None:
    """Store `new`, for a caller that holds `var._lock`."""
    var._stored = new


def compare_and_store(var, new, expected) -> bool:
    """Store `new` if the variable still holds exactly `expected` (None: always); True if stored."""
    with var._lock:
        if expected is not None and var._stored is not expected:
            return False
        var._stored = new
        return True


def in_place_target(var, operand=None):
    """The stored array if an update may overwrite it now (the rule above), else None.

    The caller holds `var._lock` and no reference to the stored array of its own.  `operand` (optional):
    the update's other operand; the result must keep the stored array's shape and dtype.
    """
    if _SOLE is None or not _switch.get():
        return None
    old, refs = _stored_refs(var)
    if refs != _SOLE or type(old) is not np.ndarray or old.base is not None:
        return None
    flags = old.flags
    if not (flags.owndata and flags.writeable and flags.c_contiguous):
        return None
    if operand is not None:
        t = type(operand)
        if (t is not np.ndarray and not isinstance(operand, np.generic)) or operand.dtype != old.dtype:
            return None
        if t is np.ndarray and operand.shape != old.shape and not _broadcasts_into(operand.shape, old.shape):
            return None
    return old


def _broadcasts_into(shape, target) -> bool:
    """Does an operand of `shape` broadcast to exactly `target` (so the result keeps the target's shape)?"""
    if len(shape) > len(target):
        return False
    return all(d == 1 or d == t for d, t in zip(reversed(shape), reversed(target)))
