"""Generated Python source: compiled under a `<graphjit-...>` name, shown in tracebacks while it lives.

Plans (codegen.py) and fused kernels (fusion/numpy_backend.py, fusion/numexpr_backend.py) are
Python source that graphjit writes itself, from identifiers and literals it made (values are
passed in by reference, never pasted into the text).  `load` compiles and runs such a source
under a fresh file name `<graphjit-TAG-N>` and registers the text in `linecache`, so tracebacks
and debuggers show the generated lines.  The code runs under the module name
`fp_semantics.GENERATED_MODULE`, so NumPy's floating-point warnings from it are kernel
warnings, never shown.  `evict_with(owner, filename)` drops the `linecache` entry when `owner`
(the function compiled from it) is garbage: a process that compiles many plans keeps only the
text of the plans that are still alive.

Imports `eager.fp_semantics` and the standard library.
"""
from __future__ import annotations

import itertools
import linecache
import weakref

from eager import fp_semantics

PREFIX = "<graphjit-"
_counter = itertools.count()


def load(source: str, tag: str, namespace: dict) -> str:
    """Run `source` in `namespace` under a new `<graphjit-TAG-N>` file name (returned), in linecache."""
    filename = f"{PREFIX}{tag}-{next(_counter)}>"
    namespace.setdefault("__name__", fp_semantics.GENERATED_MODULE)    # its warnings are kernel warnings
    exec(compile(source, filename, "exec"), namespace)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename


def evict_with(owner, filename: str) -> None:
    """Forget `filename`'s source in linecache once `owner` has been garbage collected."""
    weakref.finalize(owner, linecache.cache.pop, filename, None)
