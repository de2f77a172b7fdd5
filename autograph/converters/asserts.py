"""Asserts: `assert` statements become `ag__.assert_stmt`.

Before:
    assert x > 0, "x must be positive"

After:
    ag__.assert_stmt(x > 0, lambda: "x must be positive")

On a Python value this raises AssertionError exactly like `assert`; on a
symbolic tensor it adds a runtime assert op (TensorFlow raises by default).
"""
from __future__ import annotations

from ..pyct import origin_info, templates, transformer


class AssertTransformer(transformer.Base):

    def visit_Assert(self, node):
        msg = node.msg if node.msg is not None else templates.literal(None)
        new = templates.replace("ag__.assert_stmt(test, lambda: msg)", test=node.test, msg=msg,
                                ag__=self.ctx.ag_name)
        origin_info.inherit(new, node)
        return new


def transform(fn_node, ctx):
    return AssertTransformer(ctx).transform(fn_node)
