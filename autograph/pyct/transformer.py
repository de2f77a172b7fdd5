"""Base class of converters, and the per-conversion context they share.

A converter subclasses `Base` (a gast.NodeTransformer) and gets `self.ctx`:
the namer, the source info and the name under which the runtime operators are
reachable (`ag__`).  `Base` never descends into nested function definitions,
lambdas or classes unless a converter opts in: those are separate scopes and
are converted on their own when they are called (see impl/conversion.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import gast

from . import anno
from ..experimental import DEFAULT_FEATURES
from .naming import Namer
from .parsing import SourceInfo
from .templates import name_node
from .walk import AST_CONSTANT_SHIM, Transformer


@dataclass
class Context:
    """State shared by the converters of one function."""

    namer: Namer
    source: SourceInfo
    ag_name: str = "ag__"
    warnings: list[str] = field(default_factory=list)
    kinds: Optional[set] = None    # node classes in the function (impl/pipeline.py); None: unknown
    features: frozenset = DEFAULT_FEATURES   # optional conversions that run (autograph.experimental.Feature)


class ConversionError(Exception):
    """A construct cannot be converted; the message names it and its line."""


class UnsupportedLanguageElementError(ConversionError, NotImplementedError):
    """A Python feature AutoGraph does not convert at all (generators, coroutines), as TF names it."""


class Base(Transformer):
    """Converter base: knows its context, skips nested scopes by default."""

    # Lambdas are expressions of this function; converters of expressions
    # (logical, conditional) descend into them.  User-written nested defs are
    # never descended into; generated defs (anno GENERATED) always are.
    descend_into_nested_scopes = False

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self._depth = 0

    def where(self, node: gast.AST) -> str:
        return f"{self.ctx.source.filename}:{getattr(node, 'lineno', '?')}"

    def ag(self, attr: str) -> gast.Attribute:
        return gast.Attribute(value=name_node(self.ctx.ag_name), attr=attr, ctx=gast.Load())

    def transform(self, fn_node: gast.AST) -> gast.AST:
        """Entry point: visits the body of the converted function itself."""
        self._depth = 0
        if isinstance(fn_node, gast.Lambda):
            fn_node.body = self.visit(fn_node.body)
            return fn_node
        fn_node.body = self.visit_block(fn_node.body)
        return fn_node

    def visit_block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out

    def _nested(self, node):
        if self.descend_into_nested_scopes:
            return self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        if anno.get(node, anno.Key.GENERATED):
            return self.generic_visit(node)
        return self._nested(node)

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Lambda(self, node):
        return self._nested(node)

    @classmethod
    def _skips(cls, node_cls) -> bool:
        """A converter that rewrites statements only (no `visit_` method for an expression class, and
        nested scopes not entered, so a lambda is left alone) has nothing to do inside an expression:
        expressions are not walked.  Statements never sit inside expressions but in a lambda."""
        if not issubclass(node_cls, gast.expr) or cls.descend_into_nested_scopes:
            return False
        return not any(getattr(cls, "visit_" + e.__name__, None) not in _INERT
                       for e in _EXPR_CLASSES)


_INERT = (None, Base.visit_Lambda, AST_CONSTANT_SHIM)  # visit_ methods that do nothing inside an expression
_EXPR_CLASSES = tuple(c for c in vars(gast).values() if isinstance(c, type) and issubclass(c, gast.expr))
