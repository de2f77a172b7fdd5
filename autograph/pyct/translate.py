"""ast <-> gast translation, the same trees as `gast.ast_to_gast` / `gast.gast_to_ast`, faster
(conversion cost on long functions).

A function is translated twice per conversion: once in (the parsed source, to
gast, for the converters) and once out (the converted tree, to ast, for
`compile`).  gast's translators build every node through a generic
`NodeTransformer` (a `getattr('visit_' + name)` per node, a dict
comprehension and a `_visit` call per field, a `hasattr` per field and a
`try`/`setattr` per position attribute); on long functions the two
translations were ~40% of AutoGraph's cost.

`to_gast` and `to_ast` subclass gast's own translators for the running Python
(`gast.ast3.Ast3ToGAst`, `GAstToAst3`), so every node kind gast treats
specially (`Name`/`arg`, `ExceptHandler`, `FunctionDef`'s `type_params`,
`arguments`, ...) still goes through gast's method, and only the generic part
is replaced:

- the visit method is looked up once per node class;
- `generic_visit` walks `_fields` in a plain loop, visiting only values that
  are nodes or lists, and builds the target node with one constructor call;
- no `_visit` call for a field that holds no node.

`fill_missing_positions` (positions.py) is `ast.fix_missing_locations` without recursion
(`to_ast(tree, fill_positions=True)` applies it).

The fast translators lean on gast internals (`gast.ast3`'s translator classes
and their per-node methods).  They are used only for the gast versions they
were checked against (`FAST_GAST_VERSIONS`; tests/autograph/test_ag_conversion_cost.py
compares them with gast's public `ast_to_gast`/`gast_to_ast` on real sources).
Otherwise (`FAST` is False, `SLOW_REASON` says why) every function here goes
through gast's public translators, which give the same trees, more slowly.
Imports gast, origin_info and positions.
"""
from __future__ import annotations

import ast
from importlib import metadata

import gast

from . import origin_info
from .positions import MISSING as _MISSING, POSITIONS as _POS, PositionFilling, fill_missing_positions

FAST_GAST_VERSIONS = ((0, 5), (0, 8))    # [first, last): the gast releases the fast path was checked on


def _fast_path_problem() -> str:
    """'' if the fast translators may be used with the installed gast, else why not."""
    try:
        version = tuple(int(p) for p in metadata.version("gast").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError) as e:
        return f"gast's version is unknown ({e})"
    low, high = FAST_GAST_VERSIONS
    if not low <= version < high:
        return f"gast {'.'.join(map(str, version))} is outside the checked versions [{low}, {high})"
    try:      # gast.ast3 is gast's internal module: present only in the checked gast versions
        from gast import ast3
    except ImportError as e:
        return f"gast.ast3 is missing ({e})"
    if not all(hasattr(ast3, n) for n in ("Ast3ToGAst", "GAstToAst3")):
        return "gast.ast3 lacks Ast3ToGAst/GAstToAst3"
    return ""


SLOW_REASON = _fast_path_problem()
if SLOW_REASON:
    Ast3ToGAst = GAstToAst3 = object      # the fast classes below are defined but never used
else:
    from gast.ast3 import Ast3ToGAst, GAstToAst3

_SHIM = getattr(ast.NodeVisitor, "visit_Constant", object())   # ast's deprecated visit_Num & co dispatcher


def _fast(base, target):
    """A subclass of gast translator `base` (producing nodes of module `target`) with a fast generic part."""

    class Fast(base):
        _methods: dict = {}      # source node class -> unbound visit function
        _targets: dict = {}      # source node class -> (target class or None, fields, attributes)

        def visit(self, node):
            m = self._methods.get(node.__class__)
            if m is None:
                m = self._method(node.__class__)
            return m(self, node)

        @classmethod
        def _method(cls, node_cls):
            m = getattr(cls, "visit_" + node_cls.__name__, None)
            if m is None or m is _SHIM:
                m = cls.generic_visit
                to = getattr(target, node_cls.__name__, None)
                if to is not None and not node_cls._fields and not node_cls._attributes:
                    cls._targets[node_cls] = (to, (), ())
                    m = cls._leaf
            cls._methods[node_cls] = m
            return m

        def _leaf(self, node):
            """A node kind without fields or positions (contexts, operators)."""
            return self._targets[node.__class__][0]()

        def _visit(self, node):
            if isinstance(node, ast.AST):
                return self.visit(node)
            if isinstance(node, list):
                return [self._visit(n) for n in node]
            return node

        def generic_visit(self, node):
            cls = node.__class__
            info = self._targets.get(cls)
            if info is None:
                to = getattr(target, cls.__name__, None)
                info = self._targets[cls] = (to, tuple(cls._fields), tuple(cls._attributes))
            to, fields, attributes = info
            if to is None:
                return None          # a node kind the target does not have (gast's rule)
            visit = self.visit
            kw = {}
            for field in fields:
                value = getattr(node, field, _MISSING)
                if value is _MISSING:
                    continue
                if isinstance(value, ast.AST):
                    value = visit(value)
                elif isinstance(value, list):
                    value = [visit(v) if isinstance(v, ast.AST) else self._visit(v) for v in value]
                kw[field] = value
            new = to(**kw)
            for attr in attributes:
                value = getattr(node, attr, _MISSING)
                if value is not _MISSING:
                    setattr(new, attr, value)
            return new

    Fast.__name__ = Fast.__qualname__ = "Fast" + base.__name__
    return Fast


def _copy_location(new, old):
    """`ast.copy_location(new, old)` for two nodes that both have the four positions (`Name`)."""
    for attr in _POS:
        value = getattr(old, attr, _MISSING)
        if value is _MISSING:
            continue
        if value is not None or attr[0] == "e":     # end_* are copied even when None
            setattr(new, attr, value)
    return new


class _ToGast(_fast(Ast3ToGAst, gast)):
    def visit_Name(self, node):
        # gast: Name(id, ctx, annotation=None, type_comment=None), position copied (the most common node)
        return _copy_location(gast.Name(node.id, self._visit(node.ctx), None, None), node)


class _ToAst(_fast(GAstToAst3, ast)):
    def visit_Name(self, node):
        return _copy_location(ast.Name(node.id, self._visit(node.ctx)), node)

    def visit_Assign(self, node):
        # gast's: Assign(targets, value) (no type_comment), position copied
        return ast.copy_location(ast.Assign(self._visit(node.targets), self._visit(node.value)), node)


def _in_place(base, target):
    """`base` (a copying translator) turned into one that re-types nodes in place where it can.

    A node whose class has the same fields and positions in both trees (most kinds) keeps its identity:
    its children are translated, its `__class__` is swapped to the target's (ast and gast nodes have
    the same layout: a `__dict__` holding fields and positions).  The input tree is consumed.  Nodes
    without fields (contexts, operators) are still made anew (`ast.parse` shares one `Load()` among all
    names; gast gives each its own), and the node kinds gast translates specially go through `base`'s
    methods as before."""

    class InPlace(base):
        _methods: dict = {}
        _targets: dict = {}
        _same: dict = {}         # source class -> target class when the node can be re-typed, else None

        @classmethod
        def _retype(cls, node_cls):
            to = getattr(target, node_cls.__name__, None)
            same = to is not None and set(to._fields) == set(node_cls._fields) and \
                tuple(to._attributes) == tuple(node_cls._attributes)
            cls._same[node_cls] = to if same else None
            return cls._same[node_cls]

        def generic_visit(self, node):
            cls = node.__class__
            to = self._same.get(cls, False)
            if to is False:
                to = self._retype(cls)
            if to is None or not cls._fields:
                return super().generic_visit(node)
            visit = self.visit
            d = node.__dict__
            for field in cls._fields:
                value = d.get(field, _MISSING)
                if value is _MISSING:
                    continue
                if isinstance(value, ast.AST):
                    new = visit(value)
                    if new is not value:
                        d[field] = new
                elif isinstance(value, list):
                    for i, v in enumerate(value):
                        if isinstance(v, ast.AST):
                            new = visit(v)
                        else:
                            new = self._visit(v)
                        if new is not v:
                            value[i] = new
            node.__class__ = to
            return node

    InPlace.__name__ = InPlace.__qualname__ = "InPlace" + base.__name__.lstrip("_")
    return InPlace


class _ToGastInPlace(_in_place(_ToGast, gast)):
    def visit_Name(self, node):
        if node.__class__ is ast.Name:
            node.ctx = self._visit(node.ctx)
            node.annotation = node.type_comment = None
            node.__class__ = gast.Name
        return node


class _ToAstInPlace(_in_place(_ToAst, ast)):
    def visit_Name(self, node):
        if node.__class__ is gast.Name:
            d = node.__dict__
            d.pop("annotation", None)
            d.pop("type_comment", None)
            node.ctx = self._visit(node.ctx)
            node.__class__ = ast.Name
        return node

    def visit_Assign(self, node):
        if node.__class__ is gast.Assign:
            node.targets = self._visit(node.targets)
            node.value = self._visit(node.value)
            node.__dict__.pop("type_comment", None)     # gast's translation leaves it out
            node.__class__ = ast.Assign
        return node


class _PositionedToAst(PositionFilling, _ToAstInPlace):
    """`_ToAstInPlace` that completes positions on the way (see `to_ast_in_place`)."""


def to_gast(tree: ast.AST) -> gast.AST:
    """`gast.ast_to_gast(tree)`."""
    if not FAST:
        return gast.ast_to_gast(tree)
    return _ToGast().visit(tree)


def to_ast(tree: gast.AST, fill_positions: bool = False) -> ast.AST:
    """`gast.gast_to_ast(tree)`; with `fill_positions`, followed by `ast.fix_missing_locations`."""
    out = _ToAst().visit(tree) if FAST else gast.gast_to_ast(tree)
    if fill_positions:
        fill_missing_positions(out)
    return out


def to_gast_in_place(tree: ast.AST) -> gast.AST:
    """`gast.ast_to_gast(tree)`, re-typing `tree`'s nodes in place where it can (`tree` is consumed)."""
    if not FAST:
        return gast.ast_to_gast(tree)
    return _ToGastInPlace().visit(tree)


def to_ast_in_place(tree: gast.AST, fill_positions: bool = False, inherit_from=None) -> ast.AST:
    """`gast.gast_to_ast(tree)` (then `ast.fix_missing_locations` with `fill_positions`), re-typing `tree`'s
    nodes in place where it can: `tree` is consumed (compile it, do not convert it again).

    `inherit_from` (a (lineno, col_offset, end_lineno, end_col_offset) tuple; implies `fill_positions`):
    first `origin_info.inherit(tree, ...)` from that position -- done in the same walk."""
    if not FAST:
        if inherit_from is not None:
            origin_info.fill_from(tree, tuple(inherit_from))
        return to_ast(tree, fill_positions or inherit_from is not None)
    if inherit_from is not None:
        return _PositionedToAst(tuple(inherit_from)).visit(tree)
    out = _ToAstInPlace().visit(tree)
    if fill_positions:
        fill_missing_positions(out)
    return out


def parse(text: str) -> gast.Module:
    """`gast.parse(text)`."""
    return to_gast_in_place(ast.parse(text))


FAST = not SLOW_REASON
