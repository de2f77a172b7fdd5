"""Conditional expressions: `a if c else b` becomes `ag__.if_exp`.

Before:
    y = x if x > 0 else -x

After:
    y = ag__.if_exp(x > 0, lambda: x, lambda: -x, 'x > 0')

Branches stay lazy (only the taken one runs on Python values); a symbolic
condition builds a `cond`.
"""
from __future__ import annotations

from ..pyct import origin_info, parsing, templates, transformer


class IfExpTransformer(transformer.Base):
    descend_into_nested_scopes = True

    def visit_IfExp(self, node):
        self.generic_visit(node)
        new = templates.replace_as_expression(
            "ag__.if_exp(test, lambda: body, lambda: orelse, label)", ag__=self.ctx.ag_name,
            test=node.test, body=node.body, orelse=node.orelse,
            label=templates.literal(parsing.unparse(node.test)))
        origin_info.inherit(new, node)
        return new


def transform(fn_node, ctx):
    return IfExpTransformer(ctx).transform(fn_node)
