"""Resource handles and per-device resource tables: how graph ops refer to variables.

An op that reads or writes a variable (`ReadVariableOp`, `Assign*VariableOp`,
the scatter updates, the fused optimizer updates with their slot attrs) stores
a `ResourceHandle` in its attrs, never the `Variable` object.  A handle is plain
data (name, device, dtype, shape): it hashes, compares, prints and survives a
GraphDef round trip, so a graph's attrs can travel to another process.

Each graph has a `ResourceManager`: one table per device (TF's ResourceMgr),
name -> live `Variable`.  The first op of a graph that names a variable
registers it, under the device that op asked for ("" when it asked for none:
placement decides), and every later op reuses that handle.  Two distinct
variables never share a handle name on one device (`w`, `w_1`, ...).  Graphs
derived from a graph (optimizer rewrites, per-device partitions, control-flow
bodies and their gradients) share its manager, so a copied op's handle still
resolves; a graph built from a GraphDef gets its variables from the import's
`input_map` or the GraphDef's variables table and registers them afresh.

Binding is done in one place per use: `resolve_attrs(op)` gives the attrs with
handles replaced by variables (the compiler binds kernels with it; GraphDef
export encodes variables from it), and `op_traits.var_of` / `variables_of` /
`written_vars` answer "which variable" through `lookup`.  Eager execution has
no graph and passes variables to kernels directly.

Imports only `eager` types.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from eager.dtypes import DType
from eager.shape import TensorShape


@dataclass(frozen=True)
class ResourceHandle:
    """A reference to a variable in a graph's resource table: plain data, no Python object."""
    name: str
    device: str
    dtype: DType
    shape: TensorShape

    def __repr__(self) -> str:
        where = f" on {self.device}" if self.device else ""
        return f"<resource {self.name}{where}: {self.dtype.name}{self.shape}>"


def is_variable(v) -> bool:
    return getattr(v, "_is_variable", False)


class ResourceManager:
    """Per-device tables of the variables a graph's ops refer to (module docstring)."""

    def __init__(self):
        self._tables: dict = {}          # device -> {handle name -> Variable}
        self._handles: dict = {}         # id(Variable) -> ResourceHandle
        self._lock = threading.Lock()

    def handle_for(self, var, device: str = "") -> ResourceHandle:
        """The handle of `var`, registering it on `device` the first time this manager sees it."""
        h = self._handles.get(id(var))
        if h is not None:
            return h
        with self._lock:
            h = self._handles.get(id(var))
            if h is None:
                table = self._tables.setdefault(device, {})
                name, i = var._name, 1
                while name in table:
                    name, i = f"{var._name}_{i}", i + 1
                table[name] = var
                h = self._handles[id(var)] = ResourceHandle(name, device, var._dtype, var._shape)
        return h

    def lookup(self, handle: ResourceHandle):
        """The variable `handle` names; a clear error when this manager has no such resource."""
        var = self._tables.get(handle.device, {}).get(handle.name)
        if var is None:
            where = f" on device {handle.device!r}" if handle.device else ""
            raise KeyError(f"resource {handle.name!r}{where} is not in this graph's resource table (known: "
                           f"{sorted(n for t in self._tables.values() for n in t)}): an op was copied into a "
                           f"graph that does not share its source graph's resources")
        return var

    def contains(self, handle: ResourceHandle) -> bool:
        return handle.name in self._tables.get(handle.device, {})


def bind_variables(resources: ResourceManager, attrs: dict, device: str) -> dict:
    """`attrs` with every Variable value replaced by its handle in `resources` (registering it on `device`;
    handle values are checked separately, `check_handles`).  Returns `attrs` itself when it names no
    variable."""
    out = None
    for k, v in attrs.items():
        if is_variable(v):
            if out is None:
                out = dict(attrs)
            out[k] = resources.handle_for(v, device)
    return attrs if out is None else out


def check_handles(resources: ResourceManager, attrs: dict, where: str) -> None:
    """Raise when a handle in `attrs` names no resource of `resources` (an op copied across managers)."""
    for k, v in attrs.items():
        if type(v) is ResourceHandle and not resources.contains(v):
            raise ValueError(f"{where}: attr {k!r} refers to resource {v.name!r}, which is not in this graph's "
                             f"resource table (the op comes from a graph that does not share its resources)")


def resolve_attrs(op) -> dict:
    """`op`'s attrs with handles replaced by the variables they name (what kernels and exporters take)."""
    attrs = op._attrs
    if not attrs or op._opdef.effect not in ("read", "write"):
        return attrs
    res = op._graph.resources
    out: Any = None
    for k, v in attrs.items():
        if type(v) is ResourceHandle:
            if out is None:
                out = dict(attrs)
            out[k] = res.lookup(v)
    return attrs if out is None else out
