"""The single point where `Session` (and later `tracing`) hands a graph to the optimizer.

`optimize_for_run(graph, fetches, config)` is called once per compiled
(feeds, fetches, targets) signature, before pruning and code generation.
`fetches` lists the NAMES of everything that must survive with its name and
meaning unchanged: fed tensors, fetched tensors and target ops (Grappler's
"nodes to preserve").  It returns `(graph, report)`; the caller then looks the
fetches up by name in the returned graph, so a pass may return a new graph
(passes never mutate their input).

For now this is the identity: the pass pipeline (issue 4) lives in
`graph_runtime/passes/`, whose `optimize(graph_or_graph_def, fetches,
passes=None)` is the public entry point; the passes engineer replaces the body
below with a call to it (honouring `config.optimize` and
`config.disabled_passes`).  The public name `optimize` is reserved for
`graph_runtime.passes`.

Imports nothing from the project.
"""
from __future__ import annotations


def optimize_for_run(graph, fetches, config):
    """Return `(optimized_graph, report)`; currently `(graph, None)` (no passes wired yet)."""
    return graph, None
