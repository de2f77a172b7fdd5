"""`tracing.save(obj, path)`: traced functions and their variables to a directory of data.

What gets saved (see format.py for the layout):
- a `Function`: every concrete function traced so far (if none yet and it has
  an `input_signature`, it is traced from the signature first);
- a `ConcreteFunction`: just that one;
- a `Module` or any object: every `Function` attribute (methods decorated with
  `@function` on its class, or Function objects stored on the instance),
  under the attribute name; methods never called and without an
  `input_signature` are skipped with a warning;
- a dict `{name: Function | ConcreteFunction}`.

For each concrete function the graph is pruned to what its outputs and
stateful ops need, encoded with `Graph.as_graph_def()` and rewritten so every
variable reference (also inside nested cond/while bodies) uses one global key
per distinct Variable; the top-level variables table lists every variable the
graph uses at any depth, without values.  Values go to `variables.npz` once
per variable, so functions sharing a variable share it again after loading.

Imports `numpy`, `eager`, `graph_runtime` and sibling modules.
"""
from __future__ import annotations

import inspect
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

import eager as ek
from eager.module import Module
from eager.variable_storage import snapshot
from graph_runtime.attr_codecs import EncodeContext, encode_attr
from graph_runtime.compiler import prune
from graph_runtime.graph_def import graph_to_graph_def
from graph_runtime.op_traits import run_targets

from ..concrete import ConcreteFunction
from ..function import Function
from ..trace_type import component_specs, tracing_type
from eager.tensor_spec import TensorSpec
from . import format as fmt
from .checkpoint import variable_paths



@dataclass
class _VariableTable:
    """Distinct variables of the save, each with a global key (unique, no ':' or '/' surprises)."""

    keys: dict = field(default_factory=dict)          # id(var) -> key
    variables: dict = field(default_factory=dict)     # key -> Variable

    def key(self, var) -> str:
        k = self.keys.get(id(var))
        if k is None:
            base = "".join(c if (c.isalnum() or c in "_/.-") else "_" for c in var._name) or "Variable"
            k, i = base, 1
            while k in self.variables:
                k, i = f"{base}_{i}", i + 1
            self.keys[id(var)] = k
            self.variables[k] = var
        return k


class _PrunedView:
    """Duck-typed stand-in for a Graph holding only the ops a concrete function needs."""

    def __init__(self, ops, inputs, outputs):
        self._ops = ops
        self.inputs = list(inputs)
        self.outputs = list(outputs)

    def get_operations(self):
        return list(self._ops)


@dataclass
class _Out:
    index: int


# ------------------------------------------------------------------ collecting functions
def collect_functions(obj) -> dict:
    """{name: ([ConcreteFunction, ...], arg names, encoded defaults)} for `obj` (see module docstring)."""
    if isinstance(obj, Function):
        named = {obj._name: obj}
    elif isinstance(obj, ConcreteFunction):
        named = {obj._name: obj}
    elif isinstance(obj, dict):
        named = dict(obj)
        for k, v in named.items():
            if not isinstance(k, str) or not isinstance(v, (Function, ConcreteFunction)):
                raise TypeError(f"tracing.save: a dict to save must map names to Functions or ConcreteFunctions, "
                                f"got {k!r}: {type(v).__name__}")
    else:
        named = _object_functions(obj)
        if not named:
            raise ValueError(f"tracing.save: {type(obj).__name__} object has no @function methods or Function "
                             f"attributes to save")
    out = {}
    for name, f in named.items():
        if not name.isidentifier():
            raise ValueError(f"tracing.save: function name {name!r} is not a Python identifier; save a dict "
                             f"{{'my_name': fn}} to choose one")
        if isinstance(f, ConcreteFunction):
            out[name] = ([f], [], {})
            continue
        concretes = list(f._concrete)
        if not concretes and f._input_signature is not None:
            concretes = [f.get_concrete_function()]
        if not concretes:
            if isinstance(obj, (Function, dict)):
                raise ValueError(f"tracing.save: {name} has never been called and has no input_signature, so "
                                 f"there is no graph to save; call it once (or give input_signature) first")
            warnings.warn(f"tracing.save: skipping {name}: never called and no input_signature", stacklevel=3)
            continue
        out[name] = (concretes, list(f._arg_names), _defaults(f))
    if not out:
        raise ValueError("tracing.save: nothing to save (no traced functions)")
    return out


def _defaults(f: Function) -> dict:
    """Encoded defaults of the positional parameters (those JSON can hold; others are left out)."""
    try:
        params = inspect.signature(f.python_function).parameters.values()
    except (TypeError, ValueError):
        return {}
    out = {}
    for p in params:
        if p.name in f._arg_names and p.default is not p.empty:
            try:
                out[p.name] = fmt.encode_structure(p.default, lambda x: None, f"default of {p.name}")
            except TypeError:
                pass
    return out


def _object_functions(obj) -> dict:
    named = {}
    for klass in reversed(type(obj).__mro__):
        for attr, v in vars(klass).items():
            if isinstance(v, Function):
                named[attr] = v
    for attr in list(named):
        named[attr] = getattr(obj, attr)          # bound per-instance Function
    inst = getattr(obj, "__dict__", {})
    for attr in sorted(inst):
        v = inst[attr]
        if isinstance(v, Function) and not attr.startswith("_graphjit_function_"):
            named[attr] = v
    return named


# ------------------------------------------------------------------ one concrete function
def _targets(cf):
    return run_targets(cf.graph, getattr(cf.graph, "lifted_ops", ()))


def _rewrite_attr(value, data, table: _VariableTable, used: dict, where: str):
    """Re-key variable references in encoded attr `data` (walked in parallel with the live `value`)."""
    if getattr(value, "_is_variable", False):
        if not (isinstance(data, dict) and "$variable" in data):
            raise ValueError(f"{where}: unexpected encoding of a variable attr")
        key = table.key(value)
        used[key] = value
        return {"$variable": key}
    if hasattr(value, "_create_op") and isinstance(data, dict) and "$graph" in data:
        return {"$graph": _rewrite_graph(value, data["$graph"], table, used, where)}
    if isinstance(value, list) and isinstance(data, list) and len(value) == len(data):
        return [_rewrite_attr(v, d, table, used, where) for v, d in zip(value, data)]
    if isinstance(value, tuple) and isinstance(data, dict) and "$tuple" in data:
        return {"$tuple": [_rewrite_attr(v, d, table, used, where) for v, d in zip(value, data["$tuple"])]}
    if isinstance(value, dict) and isinstance(data, dict) and "$dict" in data:
        pairs = [[_rewrite_attr(k, dk, table, used, where), _rewrite_attr(v, dv, table, used, where)]
                 for (k, v), (dk, dv) in zip(value.items(), data["$dict"])]
        return {"$dict": pairs}
    return data


def _rewrite_graph(graph, gd: dict, table: _VariableTable, used: dict, where: str) -> dict:
    """Rewrite variable references in `gd` (encoding of `graph`); returns gd with a keyed variables table."""
    ops = {o.name: o for o in graph.get_operations()}
    local_used: dict = {}
    for node in gd["nodes"]:
        op = ops[node["name"]]
        node["attrs"] = {k: _rewrite_attr(op.attrs[k], d, table, local_used, f"{where}: op {op.name!r}")
                         for k, d in node["attrs"].items()}
    used.update(local_used)
    gd["variables"] = [_var_record(k, v) for k, v in local_used.items()]
    return gd


def _var_record(key, var) -> dict:
    return {"name": key, "dtype": var.dtype.name, "shape": None if var.shape.dims is None else list(var.shape.dims),
            "trainable": bool(var.trainable), "initializer": None}


def _check_refs(data, known: set, where: str) -> None:
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if "$variable" in x and len(x) == 1 and x["$variable"] not in known:
                raise ValueError(f"{where}: an attr refers to variable {x['$variable']!r} inside a value graphjit "
                                 f"cannot re-key; this graph cannot be saved")
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)


def concrete_record(name: str, index: int, cf: ConcreteFunction, table: _VariableTable) -> tuple[dict, dict]:
    """(manifest entry, GraphDef) for one concrete function."""
    where = f"{name} trace #{index}"
    targets = _targets(cf)
    ops = prune(cf.inputs, cf.outputs, targets)
    have = {id(o) for o in ops}
    ops = sorted(ops + [t.op for t in cf.inputs if id(t.op) not in have], key=lambda o: o._id)
    gd = graph_to_graph_def(_PrunedView(ops, cf.inputs, cf.outputs))
    used: dict = {}
    gd = _rewrite_graph(_PrunedView(ops, cf.inputs, cf.outputs), gd, table, used, where)
    gd["variables"] = [_var_record(k, v) for k, v in used.items()]  # every depth, so bodies resolve by key
    _check_refs(gd["nodes"], set(used), where)

    traced = getattr(cf, "_traced_call", None)
    if traced is None:
        raise ValueError(f"{where}: this ConcreteFunction does not record its call structure; it cannot be saved")
    counter = iter(range(len(cf._input_specs)))   # tensor leaves are met in flat (input) order

    def arg_leaf(x):
        if isinstance(x, TensorSpec):
            return {"tensor": next(counter)}
        if getattr(x, "_is_variable", False):
            used_key = table.key(x)
            return {"variable": used_key}
        tt = tracing_type(x)
        if tt is not None and component_specs(tt):
            raise ValueError(f"{where}: an argument of type {type(x).__name__} (trace type {tt!r:.80}) is fed to "
                             f"the graph at each call from a live Python object, which a saved function cannot "
                             f"carry; save a function that builds it inside, or takes its tensors instead")
        return None
    args = fmt.encode_structure(traced, arg_leaf, f"{where}: argument")

    markers = iter([_Out(ref) if kind == "t" else ref for kind, ref in cf._output_template])
    out_struct = ek.nest.pack_sequence_as(cf.structured_outputs, list(markers)) \
        if ek.nest.is_nested(cf.structured_outputs) else next(markers)
    outputs = fmt.encode_structure(out_struct, lambda x: {"tensor": x.index} if isinstance(x, _Out) else None,
                                   f"{where}: return value")
    record = {
        "signature": cf.pretty_printed_signature(verbose=False),
        "structured_input_signature": list(cf.structured_input_signature),
        "inputs": [t.name for t in cf.inputs],
        "input_specs": [_spec_json(s) for s in cf._input_specs],
        "args": args,
        "outputs": [t.name for t in cf.outputs],
        "output_specs": [{"shape": None if t.shape.dims is None else list(t.shape.dims), "dtype": t.dtype.name}
                         for t in cf.outputs],
        "structured_outputs": outputs,
        "targets": [o.name for o in targets],
        "nodes": len(gd["nodes"]),
    }
    return record, gd


def _spec_json(s: TensorSpec) -> dict:
    return {"shape": None if s.shape.dims is None else list(s.shape.dims), "dtype": s.dtype.name}


# ------------------------------------------------------------------ the directory
def save(obj, path: str) -> str:
    """Write the traced functions of `obj` and their variables to directory `path`; returns the path.

    See the module docstring for what `obj` may be.  An existing directory at
    `path` is replaced only if graphjit wrote it, and only once the new one is
    complete (written next to it, then renamed).
    """
    functions = collect_functions(obj)
    table = _VariableTable()
    manifest_functions, graphs = {}, {}
    for name, (concretes, arg_names, defaults) in functions.items():
        entries = []
        for i, cf in enumerate(concretes):
            rec, gd = concrete_record(name, i, cf, table)
            rel = f"graphs/{name}_{i}.json"
            rec["graph"] = rel
            graphs[rel] = gd
            entries.append(rec)
        manifest_functions[name] = {"arg_names": arg_names, "defaults": defaults, "concrete_functions": entries}
    paths = {}
    if isinstance(obj, Module):                     # attribute paths, so module checkpoints restore into loads
        paths = {id(v): p for p, v in variable_paths(obj).items()}
    var_records, arrays = [], {}
    for i, (key, var) in enumerate(table.variables.items()):
        if not var.is_initialized():
            raise ValueError(f"tracing.save: variable {var.name} is not initialized")
        value = snapshot(var)
        rec = _var_record(key, var)
        rec["saved_name"] = var._name
        if id(var) in paths:
            rec["path"] = paths[id(var)]
        if value.dtype.kind in "OSU":
            rec["value"] = encode_attr(value, EncodeContext(), f"variable {key}")
        else:
            rec["array"] = f"v{i}"
            arrays[f"v{i}"] = np.asarray(value, order="C")
        var_records.append(rec)
    kind = "function" if isinstance(obj, (Function, ConcreteFunction)) else \
        "module" if isinstance(obj, Module) else "object"
    manifest = {"format": fmt.FORMAT, "version": fmt.VERSION,
                "object": {"kind": kind, "type": type(obj).__name__},
                "functions": manifest_functions, "variables": var_records, "files": {}}
    with fmt.atomic_directory(path, fmt.MANIFEST) as tmp:
        os.makedirs(os.path.join(tmp, "graphs"))
        for rel, gd in graphs.items():
            fmt.write_json(os.path.join(tmp, *rel.split("/")), gd, pretty=False)
            manifest["files"][rel] = fmt.sha256_file(os.path.join(tmp, *rel.split("/")))
        manifest["files"][fmt.VARIABLES_FILE] = fmt.write_arrays(os.path.join(tmp, fmt.VARIABLES_FILE), arrays)
        fmt.write_json(os.path.join(tmp, fmt.MANIFEST), fmt.seal_manifest(manifest))
    return os.path.abspath(path)
