"""The single point where `Session` (and later `tracing`) hands a graph to the optimizer.

`optimize_for_run(graph, fetches, config)` is called once per compiled
(feeds, fetches, targets) signature, before pruning and code generation.
`fetches` lists the NAMES of everything that must survive with its name and
meaning unchanged: fed tensors, fetched tensors and target ops (Grappler's
"nodes to preserve").  It returns `(graph, report)`; the caller then looks the
fetches up by name in the returned graph, so a pass may return a new graph
(passes never mutate their input).

The pass pipeline lives in `graph_runtime/passes/` (`optimize(graph_or_graph_def,
fetches, passes=None)` is the public entry point).  `config.optimize=False`
returns the graph unchanged; `config.disabled_passes` names passes to skip.
`config` may be None (defaults: optimize with the default pipeline).

Imports `graph_runtime.passes` lazily (it imports the graph core).
"""
from __future__ import annotations


def optimize_for_run(graph, fetches, config):
    """Return `(optimized_graph, report)`, or `(graph, None)` when optimization is off."""
    if config is not None and not getattr(config, "optimize", True):
        return graph, None
    from .passes import optimize
    return optimize(graph, list(fetches), disabled=tuple(getattr(config, "disabled_passes", ()) or ()),
                     keep_stateful=bool(getattr(config, "keep_stateful", False)))
