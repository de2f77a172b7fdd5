"""TensorFlow's floating-point semantics: NaN and inf are values, kernels never warn.

NumPy reports division by zero, overflow and invalid operations as
RuntimeWarnings (errors under `-W error`); TensorFlow returns the IEEE result
silently.  graphjit does the same in every mode, through public interfaces of
`warnings` and NumPy only, and at no cost on the normal path:

- *Display*: one warnings filter (`warnings.filterwarnings`, action "ignore")
  matches RuntimeWarnings whose text is one of NumPy's floating-point messages
  ("overflow encountered in ...") and whose module is one of graphjit's kernel
  modules: `eager.*`, `graph_runtime.*`, and the generated plans and fused
  kernels, which run under the module name `graph_runtime.generated`
  (generated_source.py).  `keep_kernels_quiet()` keeps it first in
  `warnings.filters`: the eager dispatch point and every generated plan check
  that it is (one comparison) before running kernels, and put it back in front
  when a `catch_warnings` block or a new filter has displaced it (pytest, for
  one, imports test modules inside a `catch_warnings` block, which drops
  filters added meanwhile).  A warning attributed to the user's own code or to
  another library is untouched, and NumPy's error state is never changed for
  the user's code.  Kernels call NumPy's ufuncs (`np.add.reduce`,
  `np.multiply.accumulate`, ...) rather than NumPy's Python wrappers
  (`np.sum`, `ndarray.prod`), because NumPy attributes a warning to the Python
  frame that called the ufunc: through a wrapper that is NumPy's own module,
  which the filter must not silence.
- *Warnings as errors*: the filter is consulted before any "error" filter of
  the user's.  A kernel warning that NumPy attributes to another module (a
  NumPy function implemented in Python that a kernel still calls) can still
  meet an "error" filter and raise: then the run is repeated with NumPy's error state set to "ignore"
  (`rerun_quietly`): an eager op (`eager.dispatch.execute`), or a whole plan
  (the generated plan function catches RuntimeWarning, codegen.generate).
  The same holds for the `FloatingPointError` NumPy raises when the user's
  code runs graphjit under `np.errstate(...="raise")` (`RAISED`: both).  A
  rerun is safe only without side effects, so eager ops with effect "write"
  and plans holding such ops run under `ignoring()` from the start.  So do
  threads that run parts of a kernel (threaded fused kernels, parallel
  Sessions): a thread does not inherit NumPy's error state.

Cost: `ignoring()` is `np.errstate(all="ignore")` (about 3 us a use, so it is
used once per plan call or thread, never per eager op on the normal path),
and nothing on graphjit's own worker threads (device, inter-op and kernel
pools), which start quiet for good (`quiet_thread`, their pools'
initializer: they run nothing but graphjit's kernels); the
filter costs one list lookup and comparison per eager op or plan call, and
nothing more until a kernel actually produces a NaN or inf.

Imports `numpy` and the standard library only.
"""
from __future__ import annotations

import contextlib
import threading
import warnings

import numpy as np

# NumPy's floating-point error messages (numpy/_core/src/umath/extobj.c), matched at the start
FP_MESSAGES = r"(divide by zero|overflow|underflow|invalid value) encountered"
KERNEL_MODULES = r"(eager|graph_runtime)(\.|$)"
GENERATED_MODULE = "graph_runtime.generated"     # the __name__ generated plans and kernels run under


class _Thread(threading.local):
    quiet = False            # set for good on graphjit's own worker threads (quiet_thread)


_thread = _Thread()
_ALREADY_QUIET = contextlib.nullcontext()


def ignoring():
    """A context manager running its block with NumPy's floating-point warnings off (TensorFlow semantics)."""
    return _ALREADY_QUIET if _thread.quiet else np.errstate(all="ignore")


def quiet_thread() -> None:
    """A thread pool's initializer: this thread runs only graphjit's kernels, with NumPy's floating-point
    warnings off from now on (NumPy's error state is per thread, and a new thread starts with the default)."""
    np.seterr(all="ignore")
    _thread.quiet = True


def is_quiet() -> bool:
    """Are NumPy's floating-point warnings off in this context?"""
    return all(v == "ignore" for k, v in np.geterr().items() if k != "under")


# what NumPy's floating-point checks raise: a RuntimeWarning turned into an error by a warnings filter, or a
# FloatingPointError under np.errstate(...="raise")
RAISED = (RuntimeWarning, FloatingPointError)


def rerun_quietly(exc: BaseException, fn, *args, **kwargs):
    """`fn(*args)` again with NumPy's warnings off, after it raised `exc` (one of `RAISED`).

    If the warnings were off already, `exc` did not come from NumPy's floating-point checks: re-raised.
    """
    if is_quiet():
        raise exc
    with ignoring():
        return fn(*args, **kwargs)


def _install() -> tuple:
    warnings.filterwarnings("ignore", message=FP_MESSAGES, category=RuntimeWarning, module=KERNEL_MODULES)
    return warnings.filters[0]


FILTER = _install()      # compare with `warnings.filters[0]` by identity (see the module docstring)


def keep_kernels_quiet() -> None:
    """Put the kernel filter back at the front of `warnings.filters` if something displaced it."""
    global FILTER
    filters = warnings.filters
    if not filters or filters[0] is not FILTER:
        FILTER = _install()        # filterwarnings drops an equal entry before inserting it in front
