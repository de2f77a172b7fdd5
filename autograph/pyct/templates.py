"""Templates: generated code written as Python text with placeholders.

    replace('''
        def fn_name(params):
            body
            return outputs
    ''', fn_name='if_body', params=['x', 'y'], body=stmts, outputs=['y'])

A placeholder is any identifier named in the keyword arguments.  Values may
be a `str` (a name), a list of `str` (a tuple of names, or several function
parameters), a gast expression, or a list of gast statements (spliced where
the placeholder stands alone as a statement).  Template nodes carry no
positions; callers give them their origin's with `origin_info.inherit`.
"""
from __future__ import annotations

import copy
import functools
import textwrap

import gast

from . import origin_info, translate
from .walk import Transformer

_CTX_NODES = (gast.Name, gast.Tuple, gast.List, gast.Attribute, gast.Subscript, gast.Starred)


def _with_ctx(node: gast.AST, ctx) -> gast.AST:
    if isinstance(node, _CTX_NODES):
        node.ctx = ctx
    if isinstance(node, (gast.Tuple, gast.List)):
        for e in node.elts:
            _with_ctx(e, type(ctx)())
    if isinstance(node, gast.Starred):
        _with_ctx(node.value, type(ctx)())
    return node


def name_node(name: str, ctx=None) -> gast.Name:
    return gast.Name(id=name, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def tuple_of_names(names, ctx=None) -> gast.Tuple:
    ctx = ctx or gast.Load()
    return gast.Tuple(elts=[name_node(n, type(ctx)()) for n in names], ctx=ctx)


def copy_tree(node, memo=None):
    """A deep copy of a gast tree, as `copy.deepcopy` makes it (shared nodes stay shared, annotation
    dicts are deep-copied) but several times faster: node fields are copied directly.  Leaf values
    that are not nodes or lists (identifiers, constants, None) are immutable and shared."""
    if memo is None:
        memo = {}
    if isinstance(node, list):
        return [copy_tree(x, memo) for x in node]
    if not isinstance(node, gast.AST):
        return node
    done = memo.get(id(node))
    if done is not None:
        return done
    cls = node.__class__
    new = cls.__new__(cls)
    memo[id(node)] = new
    d = new.__dict__
    for k, v in node.__dict__.items():
        if isinstance(v, (list, gast.AST)):
            d[k] = copy_tree(v, memo)
        elif isinstance(v, (dict, set)):
            d[k] = copy.deepcopy(v, memo)  # annotations
        else:
            d[k] = v
    return new


@functools.lru_cache(maxsize=512)
def _parsed(text: str) -> list:
    """The parsed, position-free statements of a template or literal (never handed out: copied)."""
    tree = translate.parse(textwrap.dedent(text))
    origin_info.strip(tree)
    return tree.body


def literal(value) -> gast.AST:
    """A gast expression for a Python literal (str, tuple of str, None, ...)."""
    return copy_tree(_parsed(repr(value))[0].value)


class _Replacer(Transformer):
    def __init__(self, repl: dict):
        self.repl = repl

    def _expr_for(self, value, ctx):
        if isinstance(value, str):
            return name_node(value, ctx)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple_of_names(value, ctx)
        if isinstance(value, gast.AST):
            return _with_ctx(copy_tree(value), ctx)
        raise ValueError(f"cannot substitute {value!r} in an expression")

    def visit_Name(self, node):
        if node.id in self.repl:
            return self._expr_for(self.repl[node.id], node.ctx)
        return node

    def visit_Expr(self, node):
        if isinstance(node.value, gast.Name) and node.value.id in self.repl:
            value = self.repl[node.value.id]
            if isinstance(value, list) and all(isinstance(v, gast.stmt) for v in value):
                return list(value) if value else [gast.Pass()]
            if isinstance(value, gast.stmt):
                return value
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node):
        if node.name in self.repl:
            node.name = self.repl[node.name]
        args = []
        for a in node.args.args:
            value = self.repl.get(a.id)
            if isinstance(value, (list, tuple)):
                args.extend(name_node(v, gast.Param()) for v in value)
            elif isinstance(value, str):
                args.append(name_node(value, gast.Param()))
            else:
                args.append(a)
        node.args.args = args
        node.body = [s for stmt in node.body for s in _as_list(self.visit(stmt))]
        return node

    def visit_arguments(self, node):
        return node


def _as_list(x):
    return x if isinstance(x, list) else [x]


def replace(template: str, **repl) -> list[gast.stmt]:
    """Parses `template` (once per text: the parsed tree is cached and copied) and substitutes
    placeholders; returns statements."""
    body = copy_tree(_parsed(template))
    out: list[gast.stmt] = []
    r = _Replacer(repl)
    for stmt in body:
        out.extend(_as_list(r.visit(stmt)))
    return out


def replace_as_expression(template: str, **repl) -> gast.expr:
    stmts = replace(template, **repl)
    if len(stmts) != 1 or not isinstance(stmts[0], gast.Expr):
        raise ValueError("template is not a single expression")
    return stmts[0].value
