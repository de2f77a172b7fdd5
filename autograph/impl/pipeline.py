"""The converter pipeline: an explicit, ordered list.

Order matters; each comment says why a converter sits where it does.
"""
from __future__ import annotations

from typing import Callable

from ..converters import (asserts, break_statements, call_trees, conditional_expressions,
                          continue_statements, control_flow, directives, lists,
                          logical_expressions, return_statements, unsupported)

Converter = Callable  # (fn_node, ctx) -> fn_node

PIPELINE: list[tuple[str, Converter]] = [
    # Reject generators/async first: nothing below knows how to lower them.
    ("unsupported", unsupported.transform),
    # Directives are read off loop bodies before anything rewrites the loops.
    ("directives", directives.transform),
    # Jumps, innermost kind first: break adds `not break_` to the loop test,
    # continue only guards statements inside one iteration, and return must see
    # the loops in their final shape to add `not do_return` to their tests.
    ("break_statements", break_statements.transform),
    ("continue_statements", continue_statements.transform),
    ("return_statements", return_statements.transform),
    # Statement-level rewrites that introduce plain assignments/calls; they
    # must precede control_flow so liveness sees `l = list_append(l, x)`.
    ("lists", lists.transform),
    ("asserts", asserts.transform),
    # Wrap user calls before control_flow adds calls to the runtime (which
    # must not be wrapped) and before expressions are turned into lambdas.
    ("call_trees", call_trees.transform),
    # Runs liveness and definitions itself on the lowered function, then turns
    # if/while/for into functions and ag__ calls, bottom-up.
    ("control_flow", control_flow.transform),
    # Expression converters last: they also rewrite the tests of the loops and
    # branches (including `not break_` flags) inside the generated functions.
    ("conditional_expressions", conditional_expressions.transform),
    ("logical_expressions", logical_expressions.transform),
]


def run(fn_node, ctx):
    for _, convert in PIPELINE:
        fn_node = convert(fn_node, ctx)
    return fn_node
