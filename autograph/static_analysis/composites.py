"""Composite names: `x['b']`, `y[0]`, `obj.attr`, `self.a.b` written by a block.

TF's qualified names (`pyct/qual_names.py`) in the small: a composite is an
attribute/subscript chain over a plain name whose subscripts are literals
(not `...`) or plain names.  `written(stmts)` finds the composites a block
assigns (`=`, `+=`, annotated, `del`, targets inside tuples), not looking
into nested functions, lambdas or classes (their writes happen when they are
called).  `Composite.support` holds the names its value depends on: the base
and the subscript names.

`state_of(stmts, modified, defined)` picks the composites that are *state*
of a control-flow block, as TF's `_get_block_composite_vars` does: their
support names are defined before the block and not reassigned in it (else
the block's own variable carries the whole object, or the composite means a
different location on each iteration), and a composite whose prefix is also
state is covered by it.  Imports gast and `autograph.pyct` only.
"""
from __future__ import annotations

from dataclasses import dataclass

import gast

from ..pyct import parsing
from ..pyct.walk import Visitor


@dataclass(frozen=True)
class Composite:
    label: str                 # the source text, e.g. "x['b']"; names it in errors
    node: gast.expr            # the target expression (Attribute or Subscript)
    support: frozenset         # plain names it depends on
    parts: tuple               # labels of its proper prefixes that are composites


def _chain(node) -> tuple | None:
    """(base name, support names, prefix nodes) of a composite chain, else None."""
    support = set()
    prefixes = []
    cur = node
    while isinstance(cur, (gast.Attribute, gast.Subscript)):
        if isinstance(cur, gast.Subscript):
            s = cur.slice
            if isinstance(s, gast.Constant) and s.value is not Ellipsis:
                pass
            elif isinstance(s, gast.Name):
                support.add(s.id)
            else:
                return None
        cur = cur.value
        if isinstance(cur, (gast.Attribute, gast.Subscript)):
            prefixes.append(cur)
    if not isinstance(cur, gast.Name):
        return None
    support.add(cur.id)
    return cur.id, support, prefixes


def label_of(node) -> str:
    return parsing.unparse(node).strip()


def _make(node) -> Composite | None:
    found = _chain(node)
    if found is None:
        return None
    _, support, prefixes = found
    return Composite(label_of(node), node, frozenset(support),
                     tuple(label_of(p) for p in prefixes))


class _Targets(Visitor):
    def __init__(self):
        self.found: dict[str, Composite] = {}

    def _target(self, t):
        if isinstance(t, (gast.Tuple, gast.List)):
            for e in t.elts:
                self._target(e)
        elif isinstance(t, gast.Starred):
            self._target(t.value)
        elif isinstance(t, (gast.Attribute, gast.Subscript)):
            c = _make(t)
            if c is not None:
                self.found.setdefault(c.label, c)

    def visit_Assign(self, node):
        for t in node.targets:
            self._target(t)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self._target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for t in node.targets:
            self._target(t)

    def visit_For(self, node):
        self._target(node.target)
        self.generic_visit(node)

    def _skip(self, node):
        return None

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _skip


def written(stmts) -> dict[str, Composite]:
    v = _Targets()
    for s in stmts if isinstance(stmts, list) else [stmts]:
        v.visit(s)
    return v.found


def state_of(stmts, modified: set[str], defined) -> list[Composite]:
    """The composites that a staged block must carry (see the module doc).

    `defined(name)` says whether a name is bound before the block."""
    chosen = {label: c for label, c in written(stmts).items()
              if not (c.support & modified) and all(defined(n) for n in c.support)}
    return [c for label, c in sorted(chosen.items())
            if not any(p in chosen for p in c.parts)]
