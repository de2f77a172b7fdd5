"""Memory pass (placeholder until written)."""
from __future__ import annotations

from .core import GraphPass, PassContext, make_stats, register_pass


def plan_memory(graph, ctx: PassContext):
    return graph, make_stats("memory", graph, graph)


MEMORY = register_pass(GraphPass("memory", plan_memory, "In-place reuse of dead inputs.", iterative=False))
