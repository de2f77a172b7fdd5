"""Pruning: keep only the ops the preserved ops (fetches, feeds, targets) need.

Walks back over data and control inputs from the preserved ops and from the
graph's function interface (`graph.inputs`/`graph.outputs`); everything else is
dropped, stateful ops included (a Session runs only what the fetches need, as in
TensorFlow), unless `PassContext.keep_stateful` asks to keep side-effecting
ops (assign, print, asserts) as roots, as a traced function body needs.

Imports sibling pass modules only.
"""
from __future__ import annotations

from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter


def prune(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    rw.copy_all()
    out = rw.finish(prune_to_roots=True, keep_stateful=ctx.keep_stateful)
    stats = make_stats("pruning", graph, out, rw)
    stats.changes = len(graph._ops) - len(out._ops)
    if stats.changes:
        stats.details["pruned"] = stats.changes
    return out, stats


PRUNING = register_pass(GraphPass("pruning", prune, "Drop ops that no fetch, feed or target needs.",
                                  iterative=False))
