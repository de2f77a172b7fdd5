"""Rejects constructs that cannot be converted, naming the construct and line.

Before/after: no rewrite; raises `ConversionError` for `yield`/`yield from`
(generators), `async` functions, and nested `await`.  `try`/`except` around
control flow is converted, with a warning recorded in the context: an
exception raised while a staged branch runs at graph run time is not caught
by the user's `except` (the branch was traced, not executed, in the `try`).
The caller (impl/conversion.py) turns a ConversionError into "run
unconverted with a warning" for recursive calls, or raises it from to_graph.
"""
from __future__ import annotations

import gast

from ..pyct import transformer
from ..pyct.transformer import ConversionError
from ..pyct.walk import all_nodes, child_nodes

_FLOW = (gast.If, gast.While, gast.For)


def _own_nodes(node):
    """Nodes of this function, not of nested scopes."""
    stack = list(child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)):
            stack.extend(child_nodes(n))


_LOOKED_AT = frozenset({gast.Yield, gast.YieldFrom, gast.Try})


def transform(fn_node, ctx: transformer.Context):
    where = ctx.source.filename
    if isinstance(fn_node, gast.AsyncFunctionDef):
        raise ConversionError(f"async function at {where}:{fn_node.lineno} is not supported")
    if ctx.kinds is not None and not ctx.kinds & _LOOKED_AT:
        return fn_node          # nothing the walk below looks for (ctx.kinds: impl/pipeline.py)
    for n in _own_nodes(fn_node):
        if isinstance(n, (gast.Yield, gast.YieldFrom)):
            raise ConversionError(
                f"generators are not supported: `yield` at {where}:{n.lineno}")
        if isinstance(n, gast.Try) and any(isinstance(m, _FLOW) for b in [n.body]
                                           for s in b for m in all_nodes(s)):
            ctx.warnings.append(
                f"try/except around control flow at {where}:{n.lineno}: if that control "
                "flow is staged, exceptions raised when the graph runs are not caught here")
    return fn_node
