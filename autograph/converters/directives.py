"""Directives: `set_loop_options(...)` as the first statement of a loop body.

Before:
    while i < n:
        autograph.set_loop_options(shape_invariants=[(x, (None,))],
                                   maximum_iterations=10)
        x = ek.concat([x, x], 0)

After (the call is removed; its keywords become the loop's LOOP_OPTIONS
annotation, rendered by control_flow as `{'shape_invariants': ...}`):
    while i < n:
        x = ek.concat([x, x], 0)

Any call whose function name ends in `set_loop_options` is recognized.
"""
from __future__ import annotations

import gast

from ..pyct import anno, transformer
from ..pyct.anno import Key
from ..pyct.transformer import ConversionError


def _is_directive(stmt) -> bool:
    if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)):
        return False
    f = stmt.value.func
    name = f.attr if isinstance(f, gast.Attribute) else getattr(f, "id", "")
    return name == "set_loop_options"


class DirectivesTransformer(transformer.Base):

    def _loop(self, node):
        if node.body and _is_directive(node.body[0]):
            call = node.body[0].value
            if call.args:
                raise ConversionError(
                    f"set_loop_options takes keyword arguments only ({self.where(call)})")
            anno.set_(node, Key.LOOP_OPTIONS, {k.arg: k.value for k in call.keywords})
            node.body = node.body[1:] or [gast.Pass()]
        self.generic_visit(node)
        return node

    visit_While = _loop
    visit_For = _loop

    def visit_Expr(self, node):
        if _is_directive(node):
            raise ConversionError(
                f"set_loop_options must be the first statement of a loop body ({self.where(node)})")
        return node


def transform(fn_node, ctx):
    return DirectivesTransformer(ctx).transform(fn_node)
