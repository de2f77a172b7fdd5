"""Both cores for memory-bound kernels: one bounded pool, one thread per core, batch chunking.

NumPy's ufuncs, copies and reductions release the GIL, so a kernel that
streams through a large array (im2col copies, col2im scatter-adds, pooling
and its gradient, large fused elementwise groups) can run its batch on
several threads at once.  `for_range(body, n, nbytes)` runs `body(lo, hi)`
over `[0, n)`: on the calling thread alone when the work is small, else cut
into contiguous chunks (about `CHUNK_BYTES` of traffic each, at most
`MAX_CHUNKS_PER_THREAD` per thread) that the caller and the pool's workers
take in turn from a shared counter.  A worker the operating system does not
schedule soon (a loaded machine) leaves its chunks to the caller, which then
waits only for the chunk a worker holds, and withdraws a worker that never
started: splitting costs little even when no core is free.

Sizing and limits:

- The pool holds one worker per core but one (the caller is the other
  thread), started on first use (`cores()`: `os.sched_getaffinity`).
- Who splits: the chunked fused elementwise kernels always may (each one
  autotunes serial against split on its first calls and rechecks the choice, `fusion/autotune.py`);
  the convolution and pooling kernels only when asked, through
  `GRAPHJIT_KERNEL_THREADS=n` or `set_threads(n)` (`threads()`, default 1),
  or while some thread holds `claimed()` (`eager.own_cores`: a compiled step
  with convolutions under `GRAPHJIT_OWN_CORES=1`).
  Measured on the development machine while other work kept both cores
  busy, splitting them gave no wall-time gain and cost 5-20% more CPU time
  per CNN step (benchmarks/RESULTS.md), so it is off until a machine shows
  it pays.
- A worker is asked to help only if one is idle (a non-blocking
  semaphore): when other threads already use the pool (a parallel Session's
  inter-op threads, data pipeline threads), kernels run serially instead of
  queueing, so there are never more busy threads than cores plus callers.
- Work below 2 * `MIN_BYTES` of memory traffic runs serially: waking a
  worker and joining it costs tens of microseconds, which a kernel moving
  less than ~2 MB does not win back (benchmarks/bench_summary.py prints the
  measured threshold table).
- `for_range` bodies must not call BLAS: OpenBLAS runs its own threads (one
  per core), and a GEMM inside a chunk would oversubscribe the cores.
  Kernels call their GEMMs on the calling thread, between split phases;
  `for_parts` runs parts that do call BLAS, for a caller that holds BLAS
  on one thread meanwhile (`eager.blas_threads.single`).
- A body that is itself running on a worker never splits again (no nested
  waits on the pool).

Chunks run on workers with NumPy's floating-point warnings off, as the plans
do (`fp_semantics`: a thread does not inherit the caller's setting).  After
a chunk raises, no new chunk starts; the first exception is re-raised on the
caller once no chunk is running any more, so nothing still writes into a
buffer the caller reuses.

Results do not depend on the split: bodies write disjoint slices with the
same ufunc calls as the serial loop, so the bits are the same.

Imports `numpy` (through `fp_semantics`) and the standard library only.
"""
from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from . import fp_semantics

MIN_BYTES = 1 << 20            # half the memory traffic below which a kernel runs on the calling thread
CHUNK_BYTES = 1 << 20          # memory traffic per chunk the threads take turns on
MAX_CHUNKS_PER_THREAD = 4

_lock = threading.Lock()
_state = {"threads": None, "pool": None, "idle": None, "claims": 0}
_local = threading.local()


def cores() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:    # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _default_threads() -> int:
    env = os.environ.get("GRAPHJIT_KERNEL_THREADS")
    if not env:
        return 1               # off unless asked for (module docstring: it did not pay where measured)
    try:
        n = int(env)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"GRAPHJIT_KERNEL_THREADS must be a positive integer, got {env!r}")
    return n


def threads() -> int:
    """How many threads a split convolution or pooling kernel uses, the caller included (1: never splits).

    At least `cores()` while some thread holds `claimed()`."""
    n = _state["threads"]
    if n is None:
        with _lock:
            if _state["threads"] is None:
                _state["threads"] = _default_threads()
            n = _state["threads"]
    return max(n, cores()) if _state["claims"] > 0 else n


class claimed:
    """`with claimed():` convolution and pooling kernels split over the cores (`threads()` >= `cores()`).

    Process-wide, nesting across threads: the setting holds while any thread is inside (`eager.own_cores`
    runs a step's plan in it).
    """

    def __enter__(self):
        with _lock:
            _state["claims"] += 1
        return self

    def __exit__(self, *exc):
        with _lock:
            _state["claims"] -= 1
        return False


def set_threads(n: int | None) -> int:
    """Split convolution and pooling kernels over `n` threads (1: never; None: the default, see the module
    docstring); returns the previous count.  Process-wide; kernels already running keep their count."""
    if n is not None and (type(n) is not int or n < 1):
        raise ValueError(f"set_threads: n must be None or an int >= 1, got {n!r}")
    with _lock:
        old = _state["threads"] if _state["threads"] is not None else _default_threads()
        _state["threads"] = n if n is not None else _default_threads()
    return old


def _pool(workers: int):
    """The pool and its idle-worker semaphore, with at least `workers` workers."""
    with _lock:
        if _state["pool"] is None or _state["pool"]._max_workers < workers:
            if _state["pool"] is not None:
                _state["pool"].shutdown(wait=False)
            workers = max(workers, cores() - 1, 1)
            _state["pool"] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="graphjit-kernel",
                                                initializer=_mark_worker)
            _state["idle"] = threading.Semaphore(workers)
        return _state["pool"], _state["idle"]


def _mark_worker():
    _local.worker = True
    fp_semantics.quiet_thread()


def _after_fork():
    # a forked child has none of the parent's threads: start a pool of its own when it needs one
    _state["pool"] = _state["idle"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def chunks(n: int, nbytes: int, min_bytes: int | None = None, threads_: int | None = None) -> int:
    """How many chunks `for_range` would cut `n` items moving `nbytes` into (1: it runs serially)."""
    if min_bytes is None:
        min_bytes = MIN_BYTES
    t = threads() if threads_ is None else threads_
    if t <= 1 or n <= 1 or nbytes < 2 * min_bytes or getattr(_local, "worker", False):
        return 1
    return int(min(n, MAX_CHUNKS_PER_THREAD * t, max(t, nbytes // CHUNK_BYTES)))


def _helper(take, idle):
    try:
        with fp_semantics.ignoring():
            take()
    finally:
        idle.release()


def for_range(body: Callable[[int, int], object], n: int, nbytes: int, min_bytes: int | None = None,
              threads_: int | None = None) -> None:
    """Run `body(lo, hi)` over `[0, n)` in contiguous chunks, on the pool when it pays (module docstring).

    `threads_`: the thread count for this call (the fused kernels pass the count they autotuned), else
    `threads()`.
    """
    t = threads() if threads_ is None else threads_
    k = chunks(n, nbytes, min_bytes, t)
    if k <= 1:
        body(0, n)
        return
    bounds = [n * i // k for i in range(k + 1)]
    _run(lambda i: body(bounds[i], bounds[i + 1]), k, t)


def for_parts(body: Callable[[int], object], k: int, threads_: int | None = None) -> None:
    """Run `body(i)` for i in `[0, k)` on the caller and up to `threads_ - 1` idle workers (default: `cores()`).

    The parts are the caller's (fixed by shapes, so results never depend on who runs which); a part
    may call BLAS (the caller keeps BLAS itself on one thread meanwhile, `eager.blas_threads`) and
    never splits again.
    """
    t = cores() if threads_ is None else threads_
    if t <= 1 or k <= 1 or getattr(_local, "worker", False):
        for i in range(k):
            body(i)
        return
    _local.worker = True       # the caller's own parts do not split again either
    try:
        _run(body, k, t)
    finally:
        _local.worker = False


def _run(part: Callable[[int], object], k: int, t: int) -> None:
    """`part(i)` for i in [0, k), taken in turns by the caller and up to t - 1 idle workers."""
    pool, idle = _pool(t - 1)
    counter = itertools.count()        # next() on it is atomic: each chunk is taken once
    failed: list = []

    def take():
        while not failed:
            i = next(counter)
            if i >= k:
                return
            try:
                part(i)
            except BaseException:
                failed.append(True)    # the others stop taking chunks
                raise

    helpers = []
    for _ in range(t - 1):
        if not idle.acquire(blocking=False):
            break              # the pool is busy with other callers: fewer helpers, or none
        helpers.append(pool.submit(_helper, take, idle))
    try:
        take()
    finally:
        errors = []
        for f in helpers:
            if f.cancel():     # never started (its thread was not scheduled): nothing to wait for
                idle.release()
            else:
                errors.append(f.exception())      # waits for the chunk it holds
    for e in errors:
        if e is not None:
            raise e
