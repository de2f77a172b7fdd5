"""`no_cyclic_gc()`: pause the cyclic garbage collector while a first call builds its graph.

Converting, tracing, optimizing and compiling a function build tens of
thousands of objects that all stay alive until the end (tree nodes, ops,
tensors, plans).  Every generational collection triggered meanwhile walks all
of them again, so collections cost a share that grows with the function's
length (15-35% of a 1,000-4,000-line first call, measured).  Nothing built
there needs collecting before it ends, so the collector pauses meanwhile.

`gc.disable()` is process-wide: the sections are counted under a lock, the
first one to start records whether the collector was enabled, and the last one
to end re-enables it only if it was (a user who turned it off keeps it off).
Sections may nest and may run concurrently in several threads; each one ends
on every path, exceptions included.  A `gc.enable()`/`gc.disable()` made by
user code while a section runs is overridden when the last section ends.
Imports nothing from the project.
"""
from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_active = 0            # sections currently running, in any thread
_was_enabled = False   # the collector's state when the first of them started


@contextlib.contextmanager
def no_cyclic_gc():
    """Pause cyclic collection for the `with` block (see the module docstring)."""
    global _active, _was_enabled
    with _lock:
        if _active == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _was_enabled:
                gc.enable()


def paused_sections() -> int:
    """How many `no_cyclic_gc` sections are running now (for tests and diagnostics)."""
    return _active
