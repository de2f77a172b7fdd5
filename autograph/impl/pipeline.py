"""The converter pipeline: an explicit, ordered list.

Order matters; each comment says why a converter sits where it does.

Each step also says which node kinds it acts on (`needs`) and which it may
introduce (`adds`), so that a converter with nothing to act on is not run at
all (a long straight-line function has no `if`, `and` or `x if c else y`,
yet each expression converter would walk all of it: conversion time would not
follow the function's length).  `ctx.kinds` is the
set of node classes in the function (below its own def node), found by the
walk that collects its names (`naming.Namer.scan`); after a step runs, its
`adds` join the set (`None`: anything, and from then on every step runs).
A step whose `needs` is None always runs (unsupported and control_flow read
`ctx.kinds` themselves to skip their walks); `needed(fn_node)`, when given,
is the converter's own check that it has work (a statement-level scan).
`run(..., check=True)` verifies the declared `adds` (tests do).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import gast

from ..converters import (asserts, break_statements, call_trees, conditional_expressions,
                          continue_statements, control_flow, directives, lists,
                          logical_expressions, return_statements, unsupported)
from ..experimental import Feature
from ..pyct.walk import all_nodes

Converter = Callable  # (fn_node, ctx) -> fn_node


@dataclass(frozen=True)
class Step:
    name: str
    convert: Converter
    needs: Optional[frozenset] = None          # node classes it acts on (None: always runs)
    adds: Optional[frozenset] = None           # node classes it may introduce (None, the safe default: anything)
    needed: Optional[Callable] = None          # fn_node -> bool: the converter's own "anything to do?"
    feature: Optional[Feature] = None          # the optional feature that turns it on (None: always on)


def _kinds(*classes) -> frozenset:
    return frozenset(classes)


# what `jumps` writes for break/continue/return flags: `flag = True`, `if not flag: ...`, `not flag and test`
_JUMP_ADDS = _kinds(gast.Assign, gast.If, gast.UnaryOp, gast.Not, gast.BoolOp, gast.And, gast.Name, gast.Constant,
                    gast.Load, gast.Store, gast.Return, gast.Call, gast.Attribute, gast.Expr)
_CALL_ADDS = _kinds(gast.Call, gast.Attribute, gast.Name, gast.Tuple, gast.Dict, gast.Constant, gast.Load)
_LAMBDA_ADDS = _CALL_ADDS | _kinds(gast.Lambda, gast.arguments)

PIPELINE: list[Step] = [
    # Reject generators/async first: nothing below knows how to lower them.
    Step("unsupported", unsupported.transform, None, frozenset()),
    # Directives are read off loop bodies before anything rewrites the loops (always run: a directive
    # outside a loop is an error).
    Step("directives", directives.transform, None, _kinds(gast.Pass)),
    # Jumps, innermost kind first: break adds `not break_` to the loop test,
    # continue only guards statements inside one iteration, and return must see
    # the loops in their final shape to add `not do_return` to their tests.
    Step("break_statements", break_statements.transform, _kinds(gast.Break, gast.While, gast.For),  # loop `else`
         _JUMP_ADDS),
    Step("continue_statements", continue_statements.transform, _kinds(gast.Continue), _JUMP_ADDS),
    Step("return_statements", return_statements.transform, _kinds(gast.Return), _JUMP_ADDS,
         needed=return_statements.needed),
    # Statement-level rewrites that introduce plain assignments/calls; they
    # must precede control_flow so liveness sees `l = list_append(l, x)`.
    Step("lists", lists.transform, _kinds(gast.Attribute), _CALL_ADDS | _kinds(gast.Assign, gast.Store),
         feature=Feature.LISTS),
    Step("asserts", asserts.transform, _kinds(gast.Assert), _LAMBDA_ADDS | _kinds(gast.Expr),
         feature=Feature.ASSERT_STATEMENTS),
    # Wrap user calls before control_flow adds calls to the runtime (which
    # must not be wrapped) and before expressions are turned into lambdas.
    Step("call_trees", call_trees.transform, _kinds(gast.Call), _CALL_ADDS),
    # Runs liveness and definitions itself on the lowered function, then turns
    # if/while/for into functions and ag__ calls, bottom-up.
    Step("control_flow", control_flow.transform, None, _LAMBDA_ADDS | _kinds(
        gast.FunctionDef, gast.Return, gast.Nonlocal, gast.Global, gast.Assign, gast.Expr, gast.Store, gast.Param,
        gast.Subscript, gast.Del, gast.Delete, gast.Pass)),
    # Expression converters last: they also rewrite the tests of the loops and
    # branches (including `not break_` flags) inside the generated functions.
    Step("conditional_expressions", conditional_expressions.transform, _kinds(gast.IfExp), _LAMBDA_ADDS),
    Step("logical_expressions", logical_expressions.transform, _kinds(gast.BoolOp, gast.Not, gast.Compare),
         _LAMBDA_ADDS | _kinds(gast.Compare)),
]


def kinds_below(fn_node) -> set:
    """The node classes of `fn_node`'s tree, the node itself excluded."""
    return {n.__class__ for n in all_nodes(fn_node)[1:]}


def run(fn_node, ctx, check: bool = False):
    for step in PIPELINE:
        kinds = ctx.kinds
        if kinds is not None and step.needs is not None and not kinds & step.needs:
            continue
        if step.needed is not None and not step.needed(fn_node):
            continue
        if step.feature is not None and step.feature not in ctx.features:
            continue
        fn_node = step.convert(fn_node, ctx)
        if kinds is not None:
            if check and step.adds is not None:
                new = kinds_below(fn_node) - kinds - step.adds
                if new:
                    raise AssertionError(f"converter {step.name} added undeclared node kinds "
                                         f"{sorted(c.__name__ for c in new)}")
            ctx.kinds = None if step.adds is None else kinds | step.adds
    return fn_node
