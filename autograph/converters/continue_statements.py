"""Lowers `continue` into a flag reset at the start of each iteration.

Before:
    for x in xs:
        if x < 0:
            continue
        s += x

After:
    for x in xs:
        continue_ = False
        if x < 0:
            continue_ = True
        else:
            s += x

`continue_` is assigned before it is read in every iteration, so liveness
never makes it a loop variable.
"""
from __future__ import annotations

import gast

from ..pyct import templates, transformer
from . import jumps


class ContinueTransformer(transformer.Base):

    def _loop(self, node):
        node.body = self.visit_block(node.body)
        node.orelse = self.visit_block(node.orelse)
        if jumps.may_jump(node.body, jumps.JumpSpec(gast.Continue, list, "", False)):
            flag = self.ctx.namer.new("continue_")
            spec = jumps.JumpSpec(gast.Continue, lambda s: templates.replace("flag = True", flag=flag),
                                  flag, into_loops=False)
            node.body = templates.replace("flag = False", flag=flag) + jumps.lower_block(node.body, spec)
        return node

    visit_While = _loop
    visit_For = _loop


def transform(fn_node, ctx):
    return ContinueTransformer(ctx).transform(fn_node)
