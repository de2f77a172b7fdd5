"""Source positions of translated trees: `ast.fix_missing_locations` without recursion, and the same
rules applied during a translation walk (translate.py uses both).

`fill_missing_positions(tree)` is `ast.fix_missing_locations(tree)`, iterative and reading `__dict__`.
`PositionFilling` completes each node's positions just before a translator visits it: a missing
position takes the nearest positioned ancestor's (`origin_info.inherit`'s rule), then a still missing
attribute the parent's (`fix_missing_locations`'s rule), so one walk gives what the two walks gave.
Both rely on every positioned ast node having exactly the four position attributes, checked at import.
Imports ast only.
"""
from __future__ import annotations

import ast

MISSING = object()


class PositionFilling:
    """A mixin for an ast translator (listed before it in the bases) that completes positions on the way
    (translate.to_ast_in_place): before a node is translated, a missing position takes the nearest
    positioned ancestor's (`origin_info.inherit`'s rule, from `inherit_from`), then a still missing
    position attribute the parent's (`fix_missing_locations`'s rule).  Translation copies positions as
    they are, so this is what the two walks gave afterwards."""

    def __init__(self, inherit_from):
        self._inh = inherit_from          # (lineno, col_offset, end_lineno, end_col_offset) or None
        self._fix = (1, 0, 1, 0)

    def _enter(self, node):
        saved = (self._inh, self._fix)
        d = node.__dict__
        pos = (d.get("lineno"), d.get("col_offset"), d.get("end_lineno"), d.get("end_col_offset"))
        if None not in pos:             # fully positioned (every parsed node): it is both rules' base
            if self._inh is not None:
                self._inh = pos
            self._fix = pos
            return saved
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            if self._inh is not None:
                node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = self._inh
        elif self._inh is not None:
            col = getattr(node, "col_offset", None)
            end = getattr(node, "end_lineno", None)
            self._inh = (lineno, col, lineno, col) if end is None else \
                (lineno, col, end, getattr(node, "end_col_offset", None))
        f_line, f_col, f_end, f_end_col = self._fix
        v = getattr(node, "lineno", MISSING)
        if v is MISSING:
            node.lineno = f_line
        else:
            f_line = v
        v = getattr(node, "end_lineno", None)
        if v is None:
            node.end_lineno = f_end
        else:
            f_end = v
        v = getattr(node, "col_offset", MISSING)
        if v is MISSING:
            node.col_offset = f_col
        else:
            f_col = v
        v = getattr(node, "end_col_offset", None)
        if v is None:
            node.end_col_offset = f_end_col
        else:
            f_end_col = v
        self._fix = (f_line, f_col, f_end, f_end_col)
        return saved

    def visit(self, node):
        if "lineno" not in node._attributes:
            return super().visit(node)
        saved = self._enter(node)
        try:
            return super().visit(node)
        finally:
            self._inh, self._fix = saved

    def _make_arg(self, node):        # gast's `visit_arguments` translates parameters without `visit`
        if node is None:
            return super()._make_arg(node)
        saved = self._enter(node)
        try:
            return super()._make_arg(node)
        finally:
            self._inh, self._fix = saved


POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")
for _cls in (c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.AST)):
    if "lineno" in _cls._attributes and tuple(sorted(_cls._attributes)) != tuple(sorted(POSITIONS)):
        raise ImportError(f"positions: ast.{_cls.__name__} has positions other than the four it expects")


def fill_missing_positions(tree: ast.AST) -> ast.AST:
    """`ast.fix_missing_locations(tree)`, iteratively and reading `__dict__` directly."""
    stack = [(tree, 1, 0, 1, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, lineno, col, end_lineno, end_col = pop()
        attributes = node._attributes
        if attributes:
            if "lineno" in attributes:
                v = getattr(node, "lineno", MISSING)
                if v is MISSING:
                    node.lineno = lineno
                else:
                    lineno = v
            if "end_lineno" in attributes:
                v = getattr(node, "end_lineno", None)
                if v is None:
                    node.end_lineno = end_lineno
                else:
                    end_lineno = v
            if "col_offset" in attributes:
                v = getattr(node, "col_offset", MISSING)
                if v is MISSING:
                    node.col_offset = col
                else:
                    col = v
            if "end_col_offset" in attributes:
                v = getattr(node, "end_col_offset", None)
                if v is None:
                    node.end_col_offset = end_col
                else:
                    end_col = v
        children = []
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                children.append(value)
            elif isinstance(value, list):
                children.extend(v for v in value if isinstance(v, ast.AST))
        for child in reversed(children):
            push((child, lineno, col, end_lineno, end_col))
    return tree
