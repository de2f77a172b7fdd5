"""Functional control flow in graphs: `cond` / `while_loop` / `switch_case` as If / While / Case ops.

Importing this package registers the graph builders with
`graph_runtime.building.register_control_flow_builder`, so `eager.cond`,
`eager.while_loop` and `eager.switch_case` build ops whenever a graph is being
built (eagerly they run Python).  Modules:

- `body_graph`: `BodyGraph` (a branch/body subgraph: captures, hoisted variable
  reads, automatic control dependencies) and `trace`;
- `auto_deps`: `AutoControlDependencies`, `stateful_ops_in_order` (reusable by
  function graphs);
- `structure`: flattening and the checks with their error messages;
- `cond`, `while_loop`: the builders; `ops`: the op definitions, kernels and
  lowering; `plans`: compiled body plans;
- `vjp`, `grads`, `branch_grads`, `while_higher`: gradients (VJP graphs; If/Case
  gradients are Case ops over VJP graphs, so differentiable again; WhileGrad);
- `codecs`: GraphDef export/import of body-graph attrs.

Imports `graph_runtime.building` and its own submodules.
"""
from ..building import register_control_flow_builder
from . import codecs, ops  # noqa: F401 - registers the ops and GraphDef codecs
from . import grads, while_higher  # noqa: F401 - register the gradient rules on the ops
from .auto_deps import AutoControlDependencies, has_effects, stateful_ops_in_order
from .body_graph import BodyGraph
from .cond import build_case, build_cond
from .while_loop import build_while

register_control_flow_builder("cond", build_cond)
register_control_flow_builder("case", build_case)
register_control_flow_builder("while", build_while)

__all__ = ["BodyGraph", "AutoControlDependencies", "stateful_ops_in_order", "has_effects", "build_cond",
           "build_case", "build_while"]
