"""Opt-in (`GRAPHJIT_OWN_CORES=1`): while a compiled step with convolutions runs, graphjit owns the cores.

On the 2-core machine OpenBLAS runs each big GEMM on both cores and then keeps
its worker thread spinning for about 0.1 s (benchmarks/results/
2026-11-27-cnn-cores-switch.md): through every memory-bound kernel of a CNN
step that worker holds the core `eager.parallel`'s pool would use.  With the
switch on:

- a plan holding one of `OP_TYPES` (`graph_runtime` wraps its generated
  function with `wrap`) runs inside `running()`: the BLAS libraries on one
  thread for the whole run (`blas_threads.single`, process-wide, restored
  when the run ends), so its GEMMs leave no spinning worker, and
  `parallel.claimed()`, so im2col copies, scatter-adds, pooling and its
  gradient split over the cores;
- the convolutions run their GEMMs in batch parts on the caller and the pool,
  one BLAS thread each (`conv_algorithms._split`), in a plan and eagerly
  alike, so a convolution gives the same bits eagerly, under `@function` and
  in a Session (those of `OPENBLAS_NUM_THREADS=1`'s parts; they can differ in
  the last place from whole GEMMs, as results on different BLAS thread counts
  do).

Off by default: what it gains depends on whether the second core is free,
which only a quiet machine shows (benchmarks/results/2026-11-27-cnn-own-cores.md
has the A/B commands).  Other GEMMs of such a plan (a dense layer after the
convolutions) run on one BLAS thread too.  `set_enabled(flag)` switches it
at run time: a wrapped plan reads the switch on every call.

Imports `eager.blas_threads`, `eager.parallel`, `eager.switches`.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable

from . import blas_threads, parallel
from .switches import Switch

OP_TYPES = frozenset({"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"})

_switch = Switch("GRAPHJIT_OWN_CORES", "own_cores.set_enabled", default=False)


def enabled() -> bool:
    """Whether steps with convolutions own the cores (`GRAPHJIT_OWN_CORES=1` or `set_enabled(True)`)."""
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """On, off, or None (the environment's setting again); returns the previous setting."""
    return _switch.set(flag)


def wanted(op_types: Iterable[str]) -> bool:
    """Whether a plan running ops of these types should own the cores when the switch is on."""
    return not OP_TYPES.isdisjoint(op_types)


class running:
    """`with running():` BLAS on one thread and convolution/pooling kernels split over the cores."""

    def __enter__(self):
        self._blas = blas_threads.single()
        self._blas.__enter__()
        self._claim = parallel.claimed()
        self._claim.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self._claim.__exit__(*exc)
        finally:
            self._blas.__exit__(*exc)
        return False


def wrap(fn: Callable) -> Callable:
    """`fn` run inside `running()` whenever the switch is on at the call."""
    @functools.wraps(fn)
    def owning(*args):
        if not _switch.get():
            return fn(*args)
        with running():
            return fn(*args)
    return owning
