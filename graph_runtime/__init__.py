"""graphjit's static-graph layer: Graph IR, graph building, Session, gradients, GraphDef.

Public names (see docs/api.md, graph_runtime section):

- IR: `Graph`, `Operation`, `GraphTensor` (symbolic tensor), `GraphKeys`,
  `get_default_graph`, `reset_default_graph`, `name_scope`,
  `control_dependencies`, `device`, `colocate_with`, collections helpers; `DeviceSpec` (device names).
- Building: `placeholder`, `placeholder_with_default`, `group`, `no_op`,
  `global_variables_initializer`, `variables_initializer`.
- Running: `Session` (`target="ray://..."`: a cluster of Ray actors, distributed/), `ClusterSpec`,
  `SessionConfig`, `RunOptions`, `RunMetadata`,
  `get_default_session`; `compile_plan` (the compile stage of `pipeline.prepare`,
  the one graph-to-plan pipeline every runner uses).
- `gradients(ys, xs, grad_ys=None, stop_gradients=None)`.
- `create_global_step`, `get_global_step` (global_step.py); partial runs
  (`Session.partial_run_setup`, `PartialRunHandle`: partial_run.py);
  `Timeline(run_metadata).generate_chrome_trace_format()` (timeline.py).
- GraphDef: `Graph.as_graph_def`, `import_graph_def`, `write_graph`,
  `read_graph`, `register_attr_codec`.
- `optimize` is exported by `graph_runtime.passes`; every runner
  (Session, traced functions, bodies) reaches it through the one graph-to-plan
  pipeline, `pipeline.prepare` (prune, place, optimize, partition, compile).

Imports `eager` and its own submodules.
"""
from .operation import GraphTensor, Operation, SourceLocation
from .graph import (Graph, GraphKeys, get_default_graph, reset_default_graph, name_scope, get_collection,
                    get_collection_ref, add_to_collection, control_dependencies, device, colocate_with)
from .device_spec import DeviceSpec
from .cluster_spec import ClusterSpec
from .graph_ops import placeholder, placeholder_with_default, group, no_op
from .variables import (global_variables_initializer, variables_initializer, global_variables,
                        trainable_variables, report_uninitialized_variables)
from .run_config import SessionConfig, RunOptions, RunMetadata, OpStats
from .session import Session, get_default_session
from .compiler import compile_plan, Plan
from .gradients import gradients
from .global_step import create_global_step, get_global_step
from .partial_run import PartialRunHandle
from .timeline import Timeline
from .resources import ResourceHandle, ResourceManager
from .attr_codecs import register_attr_codec
from .graph_def import write_graph, read_graph, GRAPH_DEF_VERSION
from .graph_import import import_graph_def
from . import distributed  # noqa: F401,E402 - Session(target='ray://...') (ray is imported only then)
from . import control_flow  # noqa: F401,E402 - registers the cond/while_loop/switch_case graph builders
from .passes import optimize, OptimizationReport  # noqa: E402 - graph optimizer

__all__ = [
    "Graph", "Operation", "GraphTensor", "SourceLocation", "GraphKeys", "get_default_graph", "reset_default_graph",
    "name_scope", "get_collection", "get_collection_ref", "add_to_collection", "control_dependencies", "device",
    "colocate_with", "DeviceSpec", "ClusterSpec", "placeholder", "placeholder_with_default", "group", "no_op", "global_variables_initializer",
    "variables_initializer", "global_variables", "trainable_variables", "report_uninitialized_variables",
    "Session", "SessionConfig", "RunOptions", "RunMetadata", "OpStats", "get_default_session", "compile_plan",
    "Plan", "gradients", "register_attr_codec", "import_graph_def", "write_graph", "read_graph",
    "GRAPH_DEF_VERSION", "optimize", "OptimizationReport", "create_global_step", "get_global_step",
    "PartialRunHandle", "Timeline", "ResourceHandle", "ResourceManager",
]

