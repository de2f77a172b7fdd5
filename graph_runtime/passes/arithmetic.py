"""Arithmetic simplification: apply the rule table (`arithmetic_rules.RULES`) to every pure op.

Walks the graph once in order; each op's inputs are already rewritten, so
chains collapse in one walk (`---x` -> `-x`), and the manager re-runs the pass
until nothing changes.  A rule's replacement must have the op's dtype and a
static shape compatible with the op's (checked here, whatever the rule says).
Stateful ops and ops with bodies are copied untouched.

Options (`PassContext.options`): `signed_zeros` (default True; False allows
`x + 0.0 -> x` and `0.0 - x -> -x` for floats, TensorFlow's behaviour),
`arithmetic_rules` (names of the rules to use; default all),
`exact_only` (default False; True skips the rules that change rounding).

Imports sibling pass modules and `eager`.
"""
from __future__ import annotations

from eager.registry import Spec
from eager.shape import TensorShape

from .arithmetic_rules import RULES
from .core import GraphPass, PassContext, make_stats, register_pass
from .pattern import RuleTable
from .op_keys import has_subgraphs, same_items
from .rewriter import Rewriter, is_stateful

TABLE = RuleTable(RULES)


def simplify_arithmetic(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    names = ctx.option("arithmetic_rules")
    exact_only = bool(ctx.option("exact_only", False))
    enabled = None
    if names is not None or exact_only:
        allowed = set(names) if names is not None else None
        enabled = lambda r: (allowed is None or r.name in allowed) and (r.exact or not exact_only)  # noqa: E731
    for op in graph._ops:
        if (len(op._outputs) != 1 or op._opdef.name not in TABLE.by_type or is_stateful(op)
                or has_subgraphs(op)):
            rw.copy(op)
            continue
        ins = rw.inputs(op)
        src_shape = op._outputs[0]._shape
        if same_items(ins, op._inputs):
            # the op's own inputs (a probing Rewriter): inference would give its output's spec
            shape = src_shape
            spec = Spec(shape.dims, op._outputs[0]._dtype)
        else:
            try:
                spec = rw.infer(op._opdef, ins, op._attrs)[0]
            except Exception:   # noqa: BLE001 - leave it to run time
                rw.copy(op)
                continue
            shape = TensorShape(spec.shape)
            if shape.is_compatible_with(src_shape):
                shape = shape.merge_with(src_shape)
            spec = Spec(shape.dims, spec.dtype)
        hit = TABLE.apply(rw, op, ins, op._attrs, spec, enabled)
        if hit is not None:
            rule, t = hit
            if t._dtype is spec.dtype and t._shape.is_compatible_with(shape):
                rw.replace(op, [t], note=rule.name)
                continue
        rw.copy(op, inputs=ins)
    out = rw.finish()
    return out, make_stats("arithmetic", graph, out, rw)


ARITHMETIC = register_pass(GraphPass("arithmetic", simplify_arithmetic,
                                     "Rule-table simplification (x*1, --x, x*x -> Square, log(1+x) -> Log1p...)."))
