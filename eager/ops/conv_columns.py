"""A convolution's im2col columns, kept from its forward for its filter gradient (one window copy, not two).

Conv2D copies every window of its input into an [M, kh*kw*C] buffer for
its GEMM; Conv2DBackpropFilter needs the very same buffer (cols^T @ dy) and
used to build it again: on the CNN step that was a second 7 MB copy plus the
padding.  `keep(x, key, cols)` remembers the columns the forward built for
input `x`; `find(x, key)` gives them back to the filter gradient.

Exact by construction, not by assumption: an entry holds `x` itself and a
copy of its bits, and `find` answers only for the same array object (same
geometry `key`) whose bits still equal the copy.  Tensors are immutable, but
a fed array can be written by its owner between two runs: then the bits
differ and the gradient builds its columns again.  The check reads x twice
(0.8 MB for the CNN's second layer) where a rebuild writes the columns
(7 MB).  Whether an entry is found never changes a result: the columns are
the same bytes either way and the GEMM is the same call.

Entries are process-wide (the filter gradient may run on another thread
than the forward): the most recent `ENTRIES` whose input some array still
holds (an entry whose input only it holds is dropped on the next `keep`:
its step is over), and only columns the forward built whole
(`conv_algorithms.COLS_BYTES`: the filter gradient then builds them whole
too, with the same GEMM call as on a find).  The columns live in
`eager.buffers` memory, recycled once an entry is dropped and nobody reads
them.  `set_enabled(False)` or `GRAPHJIT_CONV_COLUMNS=0` turns keeping off.

Imports numpy, `eager.buffers` and `eager.switches`.
"""
from __future__ import annotations

import collections
import sys
import threading

import numpy as np

from .. import buffers
from ..switches import Switch

ENTRIES = 4                     # a network's last layers: the backward reaches them first

_lock = threading.Lock()
_entries: collections.OrderedDict = collections.OrderedDict()     # id(x) -> (key, x, bits copy, cols)
_switch = Switch("GRAPHJIT_CONV_COLUMNS", "conv_columns.set_enabled")


def enabled() -> bool:
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """Keep columns (True), never (False) or as the environment says (None); returns the previous setting."""
    old = _switch.set(flag)
    if not _switch.value:
        with _lock:
            _entries.clear()
    return old


def _bits(a):
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else None


def keep(x: np.ndarray, key: tuple, cols: np.ndarray) -> None:
    """Remember `cols`, the columns of input `x` for geometry `key` (the caller no longer writes them)."""
    if _bits(x) is None:
        return
    copy = buffers.empty(x.shape, x.dtype)
    np.copyto(copy, x)
    with _lock:
        _entries.pop(id(x), None)
        for k in [k for k, entry in _entries.items() if _unused(entry)]:
            del _entries[k]                     # its input is dead everywhere else: no gradient will ask
        _entries[id(x)] = (key, x, copy, cols)
        while len(_entries) > ENTRIES:
            _entries.popitem(last=False)


def _unused(entry) -> bool:
    """Whether only this entry still holds its input array (the step that made it is over)."""
    return sys.getrefcount(entry[1]) <= _ENTRY_REFS


def _entry_refs() -> int:
    entry = ((), np.empty(1), None, None)
    return sys.getrefcount(entry[1])            # the tuple and the argument, as `_unused` sees it


_ENTRY_REFS = _entry_refs()


def find(x: np.ndarray, key: tuple):
    """The kept columns of `x` for `key`, or None (never kept, dropped, or x's bits changed since)."""
    with _lock:
        entry = _entries.get(id(x))
    if entry is None or entry[1] is not x or entry[0] != key:
        return None
    if not np.array_equal(_bits(x), _bits(entry[2])):
        return None
    return entry[3]
