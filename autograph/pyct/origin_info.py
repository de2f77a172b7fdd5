"""Origin info: generated code keeps the user's file and line numbers.

Strategy (simpler than TF's source map): the user's function is parsed with
its real line numbers and the converted tree is compiled with the user's file
name, so every generated node carries the (file, line) of the user statement
it came from.  Tracebacks, `inspect.getsource` of nested functions, and the
creation site recorded for graph ops therefore name the user's code directly,
with the exception type and message untouched.  `inherit` gives generated
nodes their origin's position; `user_location` finds the user frame that
called a runtime operator, for error messages.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import gast

from .walk import all_nodes

_POS = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Frames in these packages are never "the user's line".
_LIBRARY_DIRS = tuple(os.path.join(_ROOT, p) + os.sep
                      for p in ("autograph", "eager", "graph_runtime", "tracing"))


@dataclass(frozen=True)
class Location:
    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


def inherit(nodes, origin: gast.AST) -> None:
    """Gives every node in `nodes` (and children) lacking a position that of
    its nearest positioned ancestor, starting from `origin`."""
    if not isinstance(nodes, (list, tuple)):
        nodes = [nodes]
    base = header(origin)
    if base["lineno"] is None:
        return
    base = tuple(base[k] for k in _POS)
    for n in nodes:
        if isinstance(n, gast.AST):
            _fill(n, base)


def base_of(origin: gast.AST):
    """The (lineno, col_offset, end_lineno, end_col_offset) `inherit(nodes, origin)` gives positionless nodes,
    or None when `origin` has no position (then `inherit` does nothing)."""
    base = header(origin)
    return None if base["lineno"] is None else tuple(base[k] for k in _POS)


def header(origin: gast.AST) -> dict:
    """`origin`'s position limited to its first line (for a compound
    statement: its header, e.g. `while i < n:`).  Generated code takes this
    one: with the whole span, Python would attribute a generated call such as
    `ag__.while_stmt(...)` to the statement's *last* line (a call's location
    follows its callee's end), and so would tracebacks and the creation sites
    recorded for the ops it builds."""
    pos = {k: getattr(origin, k, None) for k in _POS}
    if pos["lineno"] is None or pos["end_lineno"] in (None, pos["lineno"]):
        return pos
    head = getattr(origin, "test", None) or getattr(origin, "iter", None)
    pos["end_lineno"] = pos["lineno"]
    if head is not None and getattr(head, "end_lineno", None) == pos["lineno"]:
        pos["end_col_offset"] = head.end_col_offset
    else:
        pos["end_col_offset"] = (pos["col_offset"] or 0) + 1
    return pos


def fill_from(node: gast.AST, base: tuple) -> None:
    """`inherit` from an explicit (lineno, col_offset, end_lineno, end_col_offset) instead of an origin node."""
    _fill(node, base)


def _fill(node: gast.AST, base: tuple) -> None:
    """`base`: the nearest positioned ancestor's (lineno, col_offset, end_lineno, end_col_offset)."""
    if "lineno" in node._attributes:
        if getattr(node, "lineno", None) is None:
            node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = base
        else:
            lineno, col = node.lineno, getattr(node, "col_offset", None)
            end = getattr(node, "end_lineno", None)
            base = (lineno, col, lineno, col) if end is None else \
                (lineno, col, end, getattr(node, "end_col_offset", None))
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, list):
            for item in value:
                if isinstance(item, gast.AST):
                    _fill(item, base)
        elif isinstance(value, gast.AST):
            _fill(value, base)


def strip(tree: gast.AST) -> None:
    """Removes positions (used on template trees before splicing)."""
    for n in all_nodes(tree):
        if "lineno" in getattr(n, "_attributes", ()):
            for k in _POS:
                setattr(n, k, None)


def shift(tree: gast.AST, line_delta: int, col_delta: int) -> None:
    """Moves positions of a tree parsed from dedented text back to the file."""
    for n in all_nodes(tree):
        if getattr(n, "lineno", None) is not None:
            n.lineno += line_delta
            n.end_lineno = (n.end_lineno or n.lineno - line_delta) + line_delta
            n.col_offset = (n.col_offset or 0) + col_delta
            n.end_col_offset = (n.end_col_offset or 0) + col_delta


def user_location(depth: int = 1) -> Location | None:
    """The innermost frame of converted code (it refers to `ag__`), else the
    innermost frame outside this project's packages."""
    f = sys._getframe(depth)
    fallback = None
    while f is not None:
        code = f.f_code
        if not os.path.abspath(code.co_filename).startswith(_LIBRARY_DIRS):
            if "ag__" in code.co_freevars:
                return Location(code.co_filename, f.f_lineno, code.co_name)
            fallback = fallback or Location(code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return fallback


def at_user_line(message: str) -> str:
    """Appends ' (at file:line)' naming the user's statement to a message."""
    loc = user_location(2)
    return f"{message} (at {loc})" if loc else message
