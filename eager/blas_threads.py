"""The BLAS library's thread count, read and lowered through threadpoolctl (optional, the `[native]` extra).

A convolution whose GEMMs run in batch parts on `eager.parallel`'s pool
(one part per thread at a time) must keep OpenBLAS from starting its own
threads inside each part: two parts each on two BLAS threads would ask four
threads of two cores.  NumPy gives no access to the BLAS thread count;
threadpoolctl does, for OpenBLAS, MKL and BLIS alike.

- `known()`: whether the count can be read and set (threadpoolctl installed
  and a BLAS library found).  Without it the kernels keep their GEMMs on the
  calling thread, where the BLAS library uses its own threads.
- `count()`: the count now.  The convolutions split their GEMMs only where
  it is 1: where BLAS runs on several threads, each whole GEMM already uses
  the cores, and the parts measured slower (docs/architecture.md).
- `single()`: a context in which the BLAS libraries run on one thread.
  Entries from several threads nest: the first lowers the count, the last
  one out restores what it was.  The setting is process-wide, so a GEMM
  another thread starts meanwhile also runs on one thread; its result can
  then differ in the last bits from a run on several BLAS threads, as it
  already does between `OPENBLAS_NUM_THREADS` settings.  When the count
  is 1 already (`OPENBLAS_NUM_THREADS=1`), nothing is changed.

Setting the count is a ctypes call into the library (about 6 us measured);
finding the libraries (threadpoolctl scans the loaded shared objects, about
5 ms) happens once, on first use.  `GRAPHJIT_BLAS_SPLIT=0` makes `known()`
false (kernels keep their GEMMs whole, as without threadpoolctl);
`GRAPHJIT_BLAS_SPLIT=1` (`split_forced()`) asks the convolutions to split
their GEMMs even where BLAS runs on several threads (each part then runs
inside `single()`): an opt-in, to be measured on a quiet machine, because
OpenBLAS's own worker threads keep spinning for a while (about 0.1 s) after
any GEMM that used them, on the core the pool's worker needs.

Imports the standard library (threadpoolctl lazily, on first use).
"""
from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_state = {"libs": None, "depth": 0, "saved": None}


def _libraries() -> list:
    libs = _state["libs"]
    if libs is None:
        with _lock:
            if _state["libs"] is None:
                _state["libs"] = _find()
            libs = _state["libs"]
    return libs


def _find() -> list:
    if os.environ.get("GRAPHJIT_BLAS_SPLIT", "") == "0":
        return []
    try:
        from threadpoolctl import ThreadpoolController   # optional extra ([native])
    except ImportError:
        return []
    try:
        libs = ThreadpoolController().select(user_api="blas").lib_controllers
    except Exception:          # threadpoolctl could not inspect this process: behave as without it
        return []
    # a library whose count cannot be read could not be given its count back: leave it (and its GEMMs) alone
    readable = [lib for lib in libs if isinstance(lib.get_num_threads(), int)]
    return readable if len(readable) == len(libs) else []


def split_forced() -> bool:
    """`GRAPHJIT_BLAS_SPLIT=1`: convolution GEMMs in parts even where BLAS runs on several threads."""
    return os.environ.get("GRAPHJIT_BLAS_SPLIT", "") == "1"


def known() -> bool:
    """Whether the BLAS thread count can be read and lowered (see the module docstring)."""
    return bool(_libraries())


def count() -> int | None:
    """The BLAS libraries' largest thread count now, or None when unknown."""
    libs = _libraries()
    return max(lib.get_num_threads() for lib in libs) if libs else None


def _restore(saved) -> None:
    for lib, n in saved or ():
        if n != 1:
            lib.set_num_threads(n)


def _after_fork():
    # a child has only the forking thread: a section other threads held is over, give BLAS its count back
    if _state["depth"]:
        _restore(_state["saved"])
    _state["depth"], _state["saved"] = 0, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class single:
    """`with single():` BLAS calls run on one thread (process-wide; nests across threads)."""

    def __enter__(self):
        libs = _libraries()
        with _lock:
            if _state["depth"] == 0:
                saved = [(lib, lib.get_num_threads()) for lib in libs]
                for lib, n in saved:
                    if n != 1:
                        lib.set_num_threads(1)
                _state["saved"] = saved     # the libraries with their counts: restored even if `libs` changes
            _state["depth"] += 1
        return self

    def __exit__(self, *exc):
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                _restore(_state["saved"])
                _state["saved"] = None
        return False
