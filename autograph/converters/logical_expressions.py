"""Logical expressions: `and`, `or`, `not` and chained comparisons.

Before:
    if a > 0 and not b or 0 < x < 10:

After:
    if ag__.or_(lambda: ag__.and_(lambda: a > 0, lambda: ag__.not_(b)),
                lambda: ag__.and_(lambda: 0 < x, lambda: x < 10)):

The operand lambdas keep Python's short-circuit order; with Python values
the result is exactly Python's (the operand object itself).  A chained
comparison is only split when its middle operands are names, attributes or
constants (so evaluating them twice is harmless); otherwise it is left as is.
"""
from __future__ import annotations

import gast

from ..experimental import Feature
from ..pyct import origin_info, templates, transformer

_SIMPLE = (gast.Name, gast.Constant, gast.Attribute)


class LogicalTransformer(transformer.Base):
    descend_into_nested_scopes = True

    def _lazy(self, op: str, values: list) -> gast.expr:
        result = values[-1]
        for v in reversed(values[:-1]):
            result = templates.replace_as_expression(
                f"ag__.{op}(lambda: a, lambda: b)", ag__=self.ctx.ag_name, a=v, b=result)
        return result

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = "and_" if isinstance(node.op, gast.And) else "or_"
        new = self._lazy(op, node.values)
        origin_info.inherit(new, node)
        return new

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, gast.Not):
            return node
        new = templates.replace_as_expression("ag__.not_(a)", ag__=self.ctx.ag_name, a=node.operand)
        origin_info.inherit(new, node)
        return new

    def _equality(self, node):
        """With EQUALITY_OPERATORS, `a == b` / `a != b` call `ag__.eq` / `ag__.not_eq`."""
        if Feature.EQUALITY_OPERATORS not in self.ctx.features or len(node.ops) != 1 or \
                not isinstance(node.ops[0], (gast.Eq, gast.NotEq)):
            return node
        op = "eq" if isinstance(node.ops[0], gast.Eq) else "not_eq"
        new = templates.replace_as_expression(f"ag__.{op}(a, b)", ag__=self.ctx.ag_name, a=node.left,
                                              b=node.comparators[0])
        origin_info.inherit(new, node)
        return new

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) < 2 or not all(isinstance(c, _SIMPLE) for c in node.comparators[:-1]):
            return self._equality(node)
        operands = [node.left] + node.comparators
        parts = [self._equality(gast.Compare(left=operands[i], ops=[op], comparators=[operands[i + 1]]))
                 for i, op in enumerate(node.ops)]
        new = self._lazy("and_", parts)
        origin_info.inherit(new, node)
        return new


def transform(fn_node, ctx):
    return LogicalTransformer(ctx).transform(fn_node)
