"""Conversion of one function object, cached per code object.

`convert_function(fn)` parses the source, runs the pipeline, compiles the
result (loader) and binds it to `fn`'s globals and closure cells.  The cache
maps a code object to the converted code (or to the failure reason), so a
nested function or lambda created anew on every call is converted once.
`is_library(fn)` decides what is never converted: this project's packages,
numpy, the standard library, and anything installed under site-packages.
"""
from __future__ import annotations

import os
import sys
import sysconfig
import threading
import types
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import gast

from eager.gc_pause import no_cyclic_gc

from ..pyct import naming, parsing, transformer
from ..pyct.loader import bind, compile_function
from ..pyct.transformer import ConversionError
from ..experimental import DEFAULT_FEATURES
from . import pipeline

_NEVER_CONVERT_ROOTS = {"eager", "graph_runtime", "tracing", "autograph", "numpy", "gast",
                        "astunparse", "pytest", "_pytest", "hypothesis"}
_LIB_DIRS = tuple({os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib",
                                                           "platlib")
                   if (p := sysconfig.get_paths().get(key))})
_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PROJECT_DIRS = tuple(os.path.join(_PROJECT_ROOT, p) + os.sep
                      for p in ("eager", "graph_runtime", "tracing", "autograph"))


@dataclass
class Converted:
    """The result of converting one code object (its converted source text is not kept: `converted_source`
    re-derives it on demand, so that conversion does not pay for unparsing every function)."""

    code: Optional[types.CodeType]
    error: Optional[str] = None
    warnings: tuple = ()


class ConversionCache:
    """Code object -> Converted, least recently used first out past `max_entries`.

    Keyed on the code object *and* its file and qualified name: code objects compare by value without
    them, so the same function text at the same line of two files would share one conversion, and the
    second would report the first one's file in staged ops' locations and tracebacks.  Bounded, since
    a long-lived process that converts generated or many short-lived functions would otherwise keep
    every code object and its conversion forever; a function evicted and called again is converted
    again (a few milliseconds).
    """

    DEFAULT_MAX_ENTRIES = 4096

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES):
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries

    @staticmethod
    def _key(code: types.CodeType, features: frozenset):
        return code, code.co_filename, getattr(code, "co_qualname", code.co_name), features

    def get(self, code: types.CodeType, features: frozenset = DEFAULT_FEATURES) -> Optional[Converted]:
        key = self._key(code, features)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, code: types.CodeType, entry: Converted, features: frozenset = DEFAULT_FEATURES) -> None:
        with self._lock:
            self._entries[self._key(code, features)] = entry
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


CACHE = ConversionCache()


def is_library(fn) -> bool:
    module = getattr(fn, "__module__", None) or ""
    root = module.split(".")[0]
    if root in _NEVER_CONVERT_ROOTS or root in getattr(sys, "stdlib_module_names", ()):
        return True
    code = getattr(fn, "__code__", None)
    if code is None:
        return True
    path = os.path.abspath(code.co_filename)
    return path.startswith(_LIB_DIRS) or path.startswith(_PROJECT_DIRS)


def _lambda_to_def(node: gast.Lambda) -> gast.FunctionDef:
    fn = gast.FunctionDef(name="lambda__", args=node.args, body=[gast.Return(value=node.body)],
                          decorator_list=[], returns=None, type_comment=None, type_params=[])
    for k in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        setattr(fn, k, getattr(node, k))
        setattr(fn.body[0], k, getattr(node, k))
    return fn


def convert_code(fn: types.FunctionType, ag_name: str = "ag__",
                 features: frozenset = DEFAULT_FEATURES) -> Converted:
    """Converts `fn`'s code with these optional features (cached); never raises for unsupported code."""
    entry = CACHE.get(fn.__code__, features)
    if entry is not None:
        return entry
    with no_cyclic_gc():   # its trees stay alive until it ends: collections would rescan them
        entry = _convert_code(fn, ag_name, features)
    CACHE.put(fn.__code__, entry, features)
    return entry


def _convert_code(fn: types.FunctionType, ag_name: str, features: frozenset) -> Converted:
    try:
        node, info, ctx = _converted_tree(fn, ag_name, features)
        code = compile_function(node, fn.__code__.co_freevars, ag_name, info.filename)
        if fn.__name__ == "<lambda>":
            code = code.replace(co_name="<lambda>")
        entry = Converted(code, warnings=tuple(ctx.warnings))
    except (parsing.ParseError, ConversionError) as e:
        entry = Converted(None, error=f"{type(e).__name__}: {e}")
    return entry


def _converted_tree(fn: types.FunctionType, ag_name: str, features: frozenset = DEFAULT_FEATURES):
    node, info = parsing.parse_function(fn)
    if isinstance(node, gast.Lambda):
        node = _lambda_to_def(node)
    namer, kinds = naming.Namer.scan(node)
    ctx = transformer.Context(namer, info, ag_name, kinds=kinds, features=features)
    return pipeline.run(node, ctx), info, ctx


def converted_source(fn: types.FunctionType, ag_name: str = "ag__", features: frozenset = DEFAULT_FEATURES) -> str:
    """The converted source text of `fn` (conversion is deterministic: this is the code `convert_code`
    compiled); raises what conversion raises."""
    node, _, _ = _converted_tree(fn, ag_name, features)
    return parsing.unparse(node)


def bind_converted(entry: Converted, fn: types.FunctionType, ag_module) -> types.FunctionType:
    new = bind(entry.code, fn, ag_module)
    new.__wrapped__ = fn
    new.autograph_converted = True
    return new


