"""Graph optimization passes: one pass per module, a pass manager, `optimize`.

- `optimize(graph_or_graph_def, fetches, passes=None, ...) -> (graph, OptimizationReport)`
  (manager.py) runs the pipeline; `run_pass(name, graph, fetches)` runs one.
- Passes (registered by name; `SessionConfig(disabled_passes=(...))` uses the names):
  `pruning`, `unused_outputs` (ops that can compute fewer outputs do),
  `debug_stripper` (off by default), `constant_folding`,
  `arithmetic` (rule table in arithmetic_rules.py), `common_subexpression`,
  `scale_folding`, `loop_invariant`, `dependency`, `pool_activation` (max-pool
  before relu, and its gradient in one op), `relu_bias_grad` (a dense layer's
  relu and bias gradients in one op), `bias_relu` (its bias add and relu in
  one op), `fusion`, `bodies`
  (optimizes If/Case/While bodies recursively), `memory`.
- `rewriter.Rewriter` is the one graph-copying utility every pass uses;
  `pattern.py` the small pattern matcher behind the arithmetic rule table.

Every pass is a pure function `Graph -> (Graph, PassStats)` that never mutates
its input and never changes a result: see each module's docstring for the
conditions it checks.

Imports its own submodules only (never `graph_runtime.session`).
"""
from . import pruning, debug_stripper, constant_folding, arithmetic, cse, scale_folding  # noqa: F401 (register)
from . import loop_invariant, dependency, memory, fusion, bodies, unused_outputs  # noqa: F401 (register)
from . import pool_activation, relu_bias_grad, bias_relu  # noqa: F401 (register)
from .core import GraphPass, PassContext, PassError, PassStats, get_pass, register_pass, registered_passes
from .manager import DEFAULT_PIPELINE, OptimizationReport, optimize, resolve_pipeline, run_pass
from .rewriter import Rewriter, copy_graph

__all__ = ["optimize", "run_pass", "OptimizationReport", "PassStats", "PassContext", "GraphPass", "get_pass",
           "register_pass", "registered_passes", "resolve_pipeline", "DEFAULT_PIPELINE", "Rewriter", "PassError",
           "copy_graph"]
