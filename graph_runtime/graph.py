"""`Graph`: a container of `Operation`s, plus the default-graph stack and `GraphKeys`.

Invariants:
- `graph._ops` is in creation order, which is a topological order (an op's
  inputs and control inputs always exist before it); `op._id` is its index.
- Names are unique within a graph (`unique_name` hands out `add`, `add_1`, ...);
  names of graph-created variables share that namespace.
- A finalized graph refuses new ops and collection changes (RuntimeError).
- `Graph` is also the graph-building context that `as_default()` pushes onto
  eager's context stack (it implements `eager.context.Context`: `add_op`,
  `create_variable`, `trace_body`, ...): that part lives in `building.GraphBuilder`, the base
  class, so that `tracing` can subclass `Graph` and override `capture`.
- Name scopes are eager.context's single thread-local stack (`name_scope` here is
  the same function), so `Module` scopes and graph scopes agree.

The default-graph stack is thread-local: `with g.as_default():` pushes `g` (and
makes it the op-building context); leaving the block restores the previous
default.  Outside any block, `get_default_graph()` is a process-wide global graph
that `reset_default_graph()` replaces.

`Graph`'s views (`as_graph_def`, `verify`, `to_dot`, `str`) are thin: the
work lives in `graph_def`, `verify` and `printing`, which import nothing above
`operation` (a body attr is recognised as an `operation.GraphBase`).  Imports
`eager`, `building`, `collections_mixin`, `device_spec`, `operation`, `graph_def`, `verify`,
`printing` and `resources`.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Optional

from eager import context as _context
from eager.shape import shared_shape

from .building import GraphBuilder, GraphKeys
from .collections_mixin import GraphCollections
from .device_spec import check_scope_entry
from .graph_def import graph_to_graph_def
from .operation import GraphBase, GraphTensor, Operation
from .printing import format_graph, graph_to_dot
from .resources import ResourceManager, bind_variables, check_handles
from .verify import verify_graph

name_scope = _context.name_scope


class Graph(GraphBuilder, GraphCollections, GraphBase):
    """A dataflow graph of `Operation`s (see docs/api.md)."""

    is_eager = False

    def __init__(self, name: str = "", resources: Optional[ResourceManager] = None):
        self.name = name
        # variables the ops refer to by handle; graphs derived from this one share it (resources.py)
        self.resources = resources if resources is not None else ResourceManager()
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._name_counts: dict[str, int] = {}
        self._collections: dict[str, list] = {}
        self._control_stack: list = []
        self._device_stack: list[str] = []
        self._colocation_stack: list = []    # ops that new ops must share a device with
        self._finalized = False
        self._version = 0
        self._variables: dict = {}           # name -> Variable created in this graph
        self._const_cache: dict = {}         # id(eager tensor) -> (tensor, Const output)
        self._lock = threading.RLock()
        # function-body interface (used by control flow and tracing; empty for plain graphs)
        self.inputs: list = []
        self.outputs: list = []

    # -- default graph ---------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Make this the default graph and the op-building context for the block."""
        stack = _graph_stack()
        stack.append(self)
        _context.push(self)
        try:
            yield self
        finally:
            _context.pop(self)
            stack.pop()

    # -- lookup ---------------------------------------------------------------
    def get_operations(self) -> list:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"get_operation_by_name expects a string, got {type(name).__name__}")
        try:
            return self._by_name[name]
        except KeyError:
            hint = " (that is a tensor name; use get_tensor_by_name)" if ":" in name else ""
            raise KeyError(f"The name {name!r} refers to an Operation not in this graph{hint}") from None

    def get_tensor_by_name(self, name: str) -> GraphTensor:
        if not isinstance(name, str):
            raise TypeError(f"get_tensor_by_name expects a string, got {type(name).__name__}")
        op_name, sep, idx = name.rpartition(":")
        if not sep or not idx.isdigit():
            raise ValueError(f"The name {name!r} looks like an Operation name, not a Tensor name: tensor names "
                             f"look like '<op_name>:<output_index>', e.g. {name + ':0'!r}")
        op = self._by_name.get(op_name)
        if op is None:
            raise KeyError(f"The name {name!r} refers to a Tensor which does not exist: the operation "
                           f"{op_name!r} does not exist in the graph")
        i = int(idx)
        if i >= len(op._outputs):
            raise KeyError(f"The name {name!r} refers to a Tensor which does not exist: operation {op_name!r} "
                           f"({op.type}) has {len(op._outputs)} outputs")
        return op._outputs[i]

    def as_graph_element(self, obj):
        """Resolve a tensor, op, or name ('x:0' tensor, 'x' op) to an element of this graph."""
        if isinstance(obj, str):
            return self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        if isinstance(obj, GraphTensor):
            if obj._op._graph is not self:
                raise ValueError(f"Tensor {obj.name!r} is not an element of this graph")
            return obj
        if isinstance(obj, Operation):
            if obj._graph is not self:
                raise ValueError(f"Operation {obj.name!r} is not an element of this graph")
            return obj
        raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation")

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __len__(self) -> int:
        return len(self._ops)

    @property
    def version(self) -> int:
        """Incremented every time an op is added (a Session compiles a new fetch against the latest ops)."""
        return self._version

    # -- names ----------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """`name` if unused, else `name_1`, `name_2`, ... (marked as used unless told otherwise)."""
        with self._lock:
            if name not in self._name_counts:
                if mark_as_used:
                    self._name_counts[name] = 1
                return name
            i = self._name_counts[name]
            while f"{name}_{i}" in self._name_counts:
                i += 1
            new = f"{name}_{i}"
            if mark_as_used:
                self._name_counts[name] = i + 1
                self._name_counts[new] = 1
            return new

    name_scope = staticmethod(name_scope)

    # -- control dependencies and devices ---------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops created in the block run after `control_inputs` (ops or tensors); None clears."""
        if control_inputs is None:
            entry = None
        else:
            entry = []
            for c in control_inputs:
                if isinstance(c, GraphTensor):
                    c = c._op
                elif getattr(c, "_is_variable", False) and getattr(c, "initializer", None) is not None:
                    c = c.initializer
                if not isinstance(c, Operation):
                    raise TypeError(f"control_dependencies expects Operations or graph Tensors, got "
                                    f"{type(c).__name__}: {c!r}")
                if c._graph is not self:
                    raise ValueError(f"control input {c.name!r} belongs to a different graph")
                entry.append(c)
        self._control_stack.append(entry)
        try:
            yield
        finally:
            self._control_stack.pop()

    def _current_control_inputs(self) -> tuple:
        out: list = []
        for entry in reversed(self._control_stack):
            if entry is None:
                break
            for c in entry:
                if c not in out:
                    out.append(c)
        return tuple(out)

    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Ops created in the block request this device (see device_spec.py for the merge).

        A string or `DeviceSpec` merges with the enclosing scopes (inner fields win); a callable
        (op -> device string) is a device function; None ignores the enclosing scopes.
        """
        self._device_stack.append(check_scope_entry(device_name_or_function))
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing: bool = False):
        """Ops created in the block are placed on the device of `op` (an Operation or graph Tensor).

        As in TensorFlow, the enclosing device scopes do not apply inside; the new ops take `op`'s
        requested device and join its colocation group (placement.py keeps the group on one device);
        `ignore_existing` drops enclosing `colocate_with` blocks.
        """
        if isinstance(op, GraphTensor):
            op = op._op
        if not isinstance(op, Operation):
            raise TypeError(f"colocate_with expects an Operation or a graph Tensor, got {type(op).__name__}: {op!r}")
        if op._graph is not self:
            raise ValueError(f"colocate_with: {op.name!r} belongs to a different graph")
        saved_devices, saved_coloc = self._device_stack, self._colocation_stack
        self._device_stack = []
        self._colocation_stack = ([] if ignore_existing else list(saved_coloc)) + [op]
        try:
            yield
        finally:
            self._device_stack, self._colocation_stack = saved_devices, saved_coloc

    # -- finalize ---------------------------------------------------------------
    def finalize(self) -> None:
        """Make the graph read-only: adding ops or changing collections raises RuntimeError."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        return self._finalized

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    def _check_not_finalized(self) -> None:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")

    def _release(self) -> None:
        """Empty a graph nothing else will use, breaking its reference cycles (graph <-> op <-> output
        tensor), so that reference counting frees it at once instead of a cyclic collection walking all
        of it later.  For the pass manager's intermediate results only (graphs no caller has seen);
        the graph is empty afterwards and its ops are detached (no graph, no outputs)."""
        for op in self._ops:
            op._outputs = ()
            op._graph = None
        self._ops = []
        self._by_name = {}
        self._collections = {}
        self._const_cache = {}
        self.inputs = []
        self.outputs = []
        self._finalized = True

    # -- low-level node creation (shared by building and GraphDef import) ----------------
    def _create_op(self, opdef, inputs: tuple, attrs: dict, name: str, out_specs, control_inputs: tuple = (),
                   device: str = "", frames: tuple = (), bind: bool = True) -> Operation:
        """Append one op whose `name` is already unique; outputs from `out_specs`.

        A read or write names its variables by handle: `Variable` attr values are registered in this
        graph's resource table under `device` (unless `bind` is False: the caller binds once the op's
        device is known), and handle values must already be in it.
        """
        self._check_not_finalized()
        if bind and attrs and (opdef.effect == "read" or opdef.effect == "write"):
            check_handles(self.resources, attrs, f"{opdef.name} op {name!r}")
            attrs = bind_variables(self.resources, attrs, device)
        with self._lock:
            op = Operation(self, name, opdef, tuple(inputs), attrs, tuple(control_inputs), device,
                           len(self._ops), frames)
            if len(out_specs) == 1:      # most ops (no generator for one output)
                s = out_specs[0]
                op._outputs = (GraphTensor(op, 0, shared_shape(s.shape), s.dtype, s.value),)
            else:
                op._outputs = tuple(GraphTensor(op, i, shared_shape(s.shape), s.dtype, s.value)
                                    for i, s in enumerate(out_specs))
            self._ops.append(op)
            self._by_name[name] = op
            self._version += 1
        return op

    def _rollback_to(self, n_ops: int, names_before: dict) -> None:
        """Remove every op created after the first `n_ops` (used to undo a failed import)."""
        with self._lock:
            for op in self._ops[n_ops:]:
                self._by_name.pop(op._name, None)
            del self._ops[n_ops:]
            self._name_counts = names_before
            self._version += 1

    # -- views --------------------------------------------------------------------
    def as_graph_def(self, add_shapes: bool = False) -> dict:
        """A plain, versioned, JSON-serializable description (see graph_def.py)."""
        return graph_to_graph_def(self, add_shapes=add_shapes)

    def verify(self) -> None:
        """Check the invariants (order, dangling inputs, re-inferred shapes/dtypes); raise on violation."""
        verify_graph(self)

    def to_dot(self) -> str:
        return graph_to_dot(self)

    def __str__(self) -> str:
        return format_graph(self)

    def __repr__(self):
        label = f" {self.name!r}" if self.name else ""
        return f"<Graph{label} with {len(self._ops)} ops>"


# ------------------------------------------------------------------ default graph stack
class _GraphStack(threading.local):
    def __init__(self):
        self.stack: list = []


_stack_state = _GraphStack()
_global_default: list = [None]


def _graph_stack() -> list:
    return _stack_state.stack


def get_default_graph() -> Graph:
    """The innermost `with g.as_default()` graph on this thread, else the global default graph."""
    st = _stack_state.stack
    if st:
        return st[-1]
    g = _global_default[0]
    if g is None:
        g = _global_default[0] = Graph()
    return g


def reset_default_graph() -> None:
    """Replace the global default graph with a fresh one (not allowed inside `as_default()`)."""
    if _stack_state.stack:
        raise AssertionError("Do not use reset_default_graph() to clear nested graphs: it is not allowed inside "
                             "a `with graph.as_default():` block.")
    _global_default[0] = Graph()


def get_collection(name: str, scope: Optional[str] = None) -> list:
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name: str) -> list:
    return get_default_graph().get_collection_ref(name)


def add_to_collection(name: str, value) -> None:
    get_default_graph().add_to_collection(name, value)


def control_dependencies(control_inputs):
    """`get_default_graph().control_dependencies(...)`."""
    return get_default_graph().control_dependencies(control_inputs)


def device(device_name):
    return get_default_graph().device(device_name)


def colocate_with(op, ignore_existing: bool = False):
    """`get_default_graph().colocate_with(op, ignore_existing)`."""
    return get_default_graph().colocate_with(op, ignore_existing)


__all__ = ["Graph", "GraphKeys", "get_default_graph", "reset_default_graph", "name_scope", "get_collection",
           "get_collection_ref", "add_to_collection", "control_dependencies", "device", "colocate_with"]
