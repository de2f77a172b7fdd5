"""Functional control flow in graphs: `cond` / `while_loop` / `switch_case` as If / While / Case ops.

Importing this package registers the If/Case/While ops and installs body
tracing (`graph_runtime.building.install_body_tracing`), so `eager.cond`,
`eager.while_loop` and `eager.switch_case` (eager/staged_control_flow.py)
trace their callables into `BodyGraph`s and dispatch those ops whenever a
graph is being built (eagerly they run Python).  Modules:

- `body_graph`: `BodyGraph` (a branch/body subgraph: captures, hoisted variable
  reads, automatic control dependencies) and `trace`;
- `auto_deps`: `AutoControlDependencies`, `stateful_ops_in_order` (reusable by
  function graphs);
- `ops`: the op definitions, kernels and lowering; `plans`: compiled body
  plans; `loop_plan`: a While loop as one generated function;
- `vjp`, `grads`, `branch_grads`, `while_higher`: gradients (VJP graphs; If/Case
  gradients are Case ops over VJP graphs, so differentiable again; WhileGrad);
- `codecs`: GraphDef export/import of body-graph attrs.

Imports `graph_runtime.building` and its own submodules.
"""
from ..building import install_body_tracing
from . import codecs, ops  # noqa: F401 - registers the ops and GraphDef codecs
from . import grads, while_higher  # noqa: F401 - register the gradient rules on the ops
from .auto_deps import AutoControlDependencies, has_effects, stateful_ops_in_order
from .body_graph import BodyGraph, trace, trace_together

install_body_tracing(trace, trace_together)

__all__ = ["BodyGraph", "AutoControlDependencies", "stateful_ops_in_order", "has_effects"]
