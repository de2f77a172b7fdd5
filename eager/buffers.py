"""Recycled memory for large kernel outputs: the next step reuses a dead array instead of faulting in new pages.

A training step allocates the same large arrays every time (a convolution's
output, a pooling gradient, ...).  Above glibc's mmap threshold each one
comes fresh from the kernel, which zeroes every page on first touch: the CNN
step took about 1,900 page faults under `@function` and 5,300 eagerly
(measured: a third of an eager step's CPU time).  `empty(shape, dtype)`
hands out an array from a process-wide pool of buffers instead, when one of
the right byte size is free, as TensorFlow's allocator hands out memory it
keeps.

When is a pooled buffer free?  Every array `empty` returns is a view of
the pool's owner buffer, and every further view, slice or reshape of it keeps
that owner alive (NumPy's `base`), so the owner's reference count is the
pool's own references and nothing else exactly when no array anywhere still
uses its memory (CPython's reference counting makes that exact and
immediate).  Memory handed to code that keeps a raw pointer without keeping
the array (ctypes addresses) would break this: the kernels using `empty`
never do that, and their outputs reach users only as arrays.

Limits: arrays under `MIN_BYTES` come from `np.empty` (NumPy's allocator is
cheaper there); the pool keeps at most `MAX_BYTES` in all; when a new size
does not fit, free buffers of other sizes are dropped first, and if it still
does not fit the array comes from `np.empty`.  `GRAPHJIT_RECYCLE=0` or
`set_enabled(False)` turns the pool off (everything from `np.empty`).  Reuse
never changes a result: `empty` promises no contents, as `np.empty`.

Imports numpy, `eager.switches` and the standard library.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from .switches import Switch

MIN_BYTES = 256 << 10          # smaller arrays: np.empty (no page-fault cost worth a pool look-up)
MAX_BYTES = 96 << 20           # most memory the pool keeps (free or in use)

_lock = threading.Lock()
_pool: dict = {}               # nbytes -> [owner uint8 arrays]
_state = {"bytes": 0}
_switch = Switch("GRAPHJIT_RECYCLE", "buffers.set_enabled")


def _free_refs() -> int:
    """getrefcount of a free owner as `_take` sees it (its list, the loop name, the argument): measured, not assumed."""
    bucket = [np.empty(1, np.uint8)]
    counts = [sys.getrefcount(owner) for owner in bucket]     # the same references as `_take`'s loop
    return counts[0]


_FREE_REFS = _free_refs()


def enabled() -> bool:
    """Whether large kernel outputs come from the pool."""
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """Turn the pool on or off process-wide (None: the default); returns the previous setting.

    Turning it off also drops the free buffers (the ones in use stay with their users)."""
    old = _switch.set(flag)
    if not _switch.value:
        with _lock:
            _drop_free(None)
    return old


def _take(bucket):
    for owner in bucket:
        if sys.getrefcount(owner) == _FREE_REFS:
            return owner
    return None


def _drop_free(keep) -> None:
    """Forget the free buffers of every size but `keep` (their memory goes back to the allocator)."""
    for nbytes in list(_pool):
        if nbytes == keep:
            continue
        bucket = _pool[nbytes]
        busy = [owner for owner in bucket if sys.getrefcount(owner) > _FREE_REFS]
        _state["bytes"] -= nbytes * (len(bucket) - len(busy))
        if busy:
            _pool[nbytes] = busy
        else:
            del _pool[nbytes]


def empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array, from the pool when it is large (see the module docstring)."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if nbytes < MIN_BYTES or not enabled():
        return np.empty(shape, dtype)
    with _lock:
        bucket = _pool.get(nbytes)
        owner = _take(bucket) if bucket else None
        if owner is None:
            if _state["bytes"] + nbytes > MAX_BYTES:
                _drop_free(nbytes)
            if _state["bytes"] + nbytes > MAX_BYTES:
                return np.empty(shape, dtype)
            owner = np.empty(nbytes, np.uint8)
            _pool.setdefault(nbytes, []).append(owner)
            _state["bytes"] += nbytes
        return owner.view(dtype).reshape(shape)


def zeros(shape, dtype) -> np.ndarray:
    """`empty(shape, dtype)` filled with zeros."""
    out = empty(shape, dtype)
    out.fill(0)
    return out


def pooled_bytes() -> int:
    """Bytes the pool holds now (free or in use)."""
    return _state["bytes"]
