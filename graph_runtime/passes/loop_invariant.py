"""Loop-invariant code motion for While bodies (placeholder until written)."""
from __future__ import annotations

from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter


def hoist_loop_invariants(graph, ctx: PassContext):
    return graph, make_stats("loop_invariant", graph, graph)


LOOP_INVARIANT = register_pass(GraphPass("loop_invariant", hoist_loop_invariants, "Hoist loop invariants."))
