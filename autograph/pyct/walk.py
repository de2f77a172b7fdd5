"""Faster drop-in bases for `gast.NodeVisitor` / `gast.NodeTransformer`, so that conversion stays cheap on long functions.

Every converter and analysis walks the whole function; with `ast`'s generic
implementations the walks dominated AutoGraph's cost on long functions
(`iter_fields` generators, a `getattr('visit_' + name)` string lookup per
node, and a full visit of every field-less leaf such as `Load()`).  These
classes do exactly what `ast`'s do, in the same order, with:

- the visit method looked up once per (visitor, node class);
- a node class without fields and without its own `visit_` method returned
  as is (what `generic_visit` would have done) without a call;
- `generic_visit` reading `node._fields` directly;
- a subclass may declare (`_skips`) node classes whose subtrees hold nothing
  for it: those are returned as they are, unvisited.

Subclasses that override `generic_visit` still get it called: the leaf
shortcut applies only when `generic_visit` is this module's own.
May import: gast.
"""
from __future__ import annotations

import ast

import gast

_AST = gast.AST
AST_CONSTANT_SHIM = getattr(ast.NodeVisitor, "visit_Constant", object())


_CACHE: dict = {}  # visitor class -> {node class: visit function, or False for a plain leaf}


class _Dispatch:
    """Shared dispatch: `visit` with a per-visitor-class method cache."""

    def _visitor_for(self, cls):
        vcls = type(self)
        m = getattr(vcls, "visit_" + cls.__name__, None)
        if m is AST_CONSTANT_SHIM:
            m = None  # ast's shim for the deprecated visit_Num & co: none are defined here
        if m is None:
            if not cls._fields and vcls.generic_visit in (Visitor.generic_visit, Transformer.generic_visit):
                m = False  # a leaf: generic_visit would do nothing and return it
            else:
                m = vcls.generic_visit
        if m is not False and vcls._skips(cls):
            m = False
        _CACHE.setdefault(vcls, {})[cls] = m
        return m

    @classmethod
    def _skips(cls, node_cls) -> bool:
        """Whether nodes of `node_cls` can be left as they are, subtree and all, because this visitor
        has nothing to do inside them (subclasses that know it say so)."""
        return False

    def visit(self, node):
        cls = node.__class__
        m = _CACHE.get(type(self), _EMPTY).get(cls)
        if m is None:
            m = self._visitor_for(cls)
        if m is False:
            return None if isinstance(self, Visitor) else node
        return m(self, node)


_EMPTY: dict = {}


class Visitor(_Dispatch, gast.NodeVisitor):
    """`gast.NodeVisitor`, faster."""

    def generic_visit(self, node):
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        self.visit(item)
            elif isinstance(value, _AST):
                self.visit(value)


class Transformer(_Dispatch, gast.NodeTransformer):
    """`gast.NodeTransformer`, faster (same splicing rules: a list result is
    spliced into a list field, None deletes)."""

    def generic_visit(self, node):
        visit = self.visit
        for field in node._fields:
            try:
                old_value = getattr(node, field)
            except AttributeError:
                continue
            if isinstance(old_value, list):
                new_values = []
                for value in old_value:
                    if isinstance(value, _AST):
                        value = visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, _AST):
                            new_values.extend(value)
                            continue
                    new_values.append(value)
                old_value[:] = new_values
            elif isinstance(old_value, _AST):
                new_node = visit(old_value)
                if new_node is None:
                    delattr(node, field)
                elif new_node is not old_value:
                    setattr(node, field, new_node)
        return node


def child_nodes(node) -> list:
    """`list(gast.iter_child_nodes(node))`, faster: the node children of its fields, in order."""
    out = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, _AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, _AST))
    return out


def all_nodes(node) -> list:
    """`list(gast.walk(node))`, faster: `node` and its descendants, breadth first in the same order."""
    out = [node]
    i = 0
    while i < len(out):
        out.extend(child_nodes(out[i]))
        i += 1
    return out
