"""Fusion settings: on/off, numexpr on/off, threads, chunk size, the vectorized tanh.

`FusionOptions` is a frozen record; `get_options()` returns the one in force.
`set_options(**changes)` replaces the process-wide default (returns the previous
one).  `options(...)` changes them for the current thread (or asyncio task) only,
as a context manager, so one thread's `with options(...)` never changes what
another thread compiles:

    with graph_runtime.fusion.options(enabled=False):
        f = function(g)          # traced and compiled without fusion

The settings are read when a graph is optimized (`enabled`) and when a fused
op's kernel is generated at plan compile time (the rest): plans compiled
earlier keep the kernels they were built with.  Per-run overrides also come
through the pass manager: `SessionConfig(disabled_passes=("fusion",))` turns
the pass off for one Session, and `optimize(..., options={"fusion": {...}})`
passes a dict of these fields to the pass.

`numexpr` is only used when it is importable (the optional `fusion` extra);
`numexpr=False` forces the NumPy backends (tests use it); `force` picks a
strategy regardless of the cost model when that strategy can run the program
(tests and benchmarks).  `threads=None` means
"split large tensors over up to `eager.parallel.cores()` threads of the
kernel pool when that measures faster" (see autotune.py);
`threads=1` never splits; a larger number always splits large tensors over
that many threads.  `fast_tanh` (default on; `GRAPHJIT_FAST_TANH=0` turns
it off): a big chunked kernel that will run compiled (numba, the `[native]`
extra) computes float32 tanh with the vectorized function of fast_tanh.py,
within 1 ulp of NumPy's, in all its variants, and so does a While body's
compiled tanh kernel (control_flow/loop_kernels.py); off: NumPy's `np.tanh`,
the unfused graph's bits.

Imports `eager.switches`.
"""
from __future__ import annotations

import contextlib
import contextvars
import threading
from dataclasses import dataclass, field, replace
from typing import Optional

from eager.switches import env_flag


@dataclass(frozen=True)
class FusionOptions:
    enabled: bool = True
    numexpr: bool = True              # allowed to use numexpr for small dispatch-bound groups
    threads: Optional[int] = None     # None: autotune splitting over the kernel pool; 1: never split
    chunk_bytes: int = 128 * 1024     # bytes per chunk buffer of the cache-blocked strategy
    min_ops: int = 2                  # smallest group worth fusing (compute ops, Identity not counted)
    max_distance: int = 64            # an op joins a group only if created <= this many ops after it
    force: Optional[str] = None       # "numexpr" | "numpy" | "chunked": skip the cost model when possible
    fast_tanh: bool = field(default_factory=lambda: env_flag("GRAPHJIT_FAST_TANH"))   # module docstring

    def __post_init__(self):
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(f"FusionOptions: threads must be None or an int >= 1, got {self.threads!r}")
        if not isinstance(self.chunk_bytes, int) or self.chunk_bytes < 1024:
            raise ValueError(f"FusionOptions: chunk_bytes must be an int >= 1024, got {self.chunk_bytes!r}")
        if self.force not in (None, "numexpr", "numpy", "chunked"):
            raise ValueError(f"FusionOptions: force must be None, 'numexpr', 'numpy' or 'chunked', got "
                             f"{self.force!r}")
        if type(self.fast_tanh) is not bool:
            raise ValueError(f"FusionOptions: fast_tanh must be a bool, got {self.fast_tanh!r}")
        if not isinstance(self.min_ops, int) or self.min_ops < 1:
            raise ValueError(f"FusionOptions: min_ops must be an int >= 1, got {self.min_ops!r}")


_lock = threading.Lock()
_default = [FusionOptions()]
# Set only inside `with options(...)`; None means "the process-wide default".
_scoped: contextvars.ContextVar = contextvars.ContextVar("graphjit_fusion_options", default=None)


def get_options() -> FusionOptions:
    scoped = _scoped.get()
    return _default[0] if scoped is None else scoped


def set_options(**changes) -> FusionOptions:
    """Replace fields of the process-wide default options; returns the previous default.

    Inside a `with options(...)` block of this thread the block's options stay in force.
    """
    with _lock:
        old = _default[0]
        _default[0] = replace(old, **changes)
    return old


@contextlib.contextmanager
def options(**changes):
    """Change the fusion options for this thread (or asyncio task) only, until the block exits."""
    token = _scoped.set(replace(get_options(), **changes))
    try:
        yield get_options()
    finally:
        _scoped.reset(token)


def merged(overrides: Optional[dict]) -> FusionOptions:
    """The current options with per-call `overrides` (a dict of field values) applied."""
    cur = get_options()
    return replace(cur, **overrides) if overrides else cur
