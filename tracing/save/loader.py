"""`tracing.load(path)`: rebuild saved functions from data only, without the Python source.

Steps, each failing with `SavedModelError` (naming the file and the problem):
1. read and check the manifest (format tag, version, field types);
2. check every listed file's SHA-256 (a corrupted file is reported as such);
3. restore variables from `variables.npz` (`format.read_arrays`: sizes checked first):
   dtype and shape must match the manifest; one eager `Variable` per key;
4. per concrete function: import its GraphDef into a fresh function graph
   (graph_runtime validates every node, attr and shape before adding any),
   binding variable references to the restored Variables; check the inputs are
   placeholders of the saved specs, the outputs have the saved dtypes and
   compatible shapes and the targets are stateful ops; compile through the same
   optimizer hook and executor that `@function` uses.
Any unexpected exception while loading is wrapped in SavedModelError too, so
callers only ever need to catch that one class for bad files.  A deliberately
crafted file (checksums recomputed) that passes all of this but whose op
kernels reject what shape inference accepted fails when called, with the
runtime's `OpError` naming the op (tests/tracing/test_save_load.py fuzzes
both cases).  Nothing in the files is executed or becomes code: JSON is parsed,
arrays are read as raw numbers, op types are looked up in the op registry, attr
names must be the op's declared attrs (import refuses others), and generated
plans contain only names the executor made (tests/tracing/test_no_code_from_files.py
injects source-like text into every string of a saved directory).

Imports `numpy`, `eager`, `graph_runtime` and sibling modules.
"""
from __future__ import annotations

import os
import time

import numpy as np

import eager as ek
from eager import context as _context
from eager.dtypes import DType
from eager.shape import TensorShape
from graph_runtime.attr_codecs import DecodeContext, decode_attr
from graph_runtime.graph_def import check_header
from graph_runtime.graph_import import import_graph_def
from graph_runtime.operation import attr_subgraphs

from ..concrete import ConcreteFunction, FuncGraph, _compile
from ..retrace_log import PhaseTimes
from eager.tensor_spec import TensorSpec
from . import format as fmt
from .format import SavedModelError
from .restored import Loaded, RestoredConcrete, RestoredFunction, SavedInput, canonical_call


def _field(d, key, types, where):
    if not isinstance(d, dict) or key not in d:
        raise SavedModelError(f"{where}: missing field {key!r}")
    v = d[key]
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in _as_tuple(types)):
        raise SavedModelError(f"{where}: field {key!r} has the wrong type ({type(v).__name__})")
    return v


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _shape(data, where) -> TensorShape:
    if data is None:
        return TensorShape(None)
    if not isinstance(data, list) or not all(d is None or (type(d) is int and d >= 0) for d in data):
        raise SavedModelError(f"{where}: bad shape {fmt._short(data)}")
    return TensorShape(data)


def _dtype(name, where):
    try:
        if not isinstance(name, str):
            raise TypeError(name)
        return ek.as_dtype(name)
    except (TypeError, ValueError, KeyError):
        raise SavedModelError(f"{where}: unknown dtype {fmt._short(name)}") from None


def read_manifest(path: str, verify_files: bool = True) -> dict:
    """The checked manifest of saved directory `path` (SavedModelError if foreign or corrupted)."""
    if not os.path.isdir(path):
        raise SavedModelError(f"{path} is not a directory written by tracing.save (no such directory)")
    mpath = fmt.check_inside(path, fmt.MANIFEST)
    if not os.path.isfile(mpath):
        raise SavedModelError(f"{path} is not a directory written by tracing.save: {fmt.MANIFEST} is missing")
    m = fmt.read_json(mpath, f"{path}")
    if not isinstance(m, dict) or m.get("format") != fmt.FORMAT:
        raise SavedModelError(f"{mpath} is not a graphjit saved-function manifest (format "
                              f"{fmt._short(m.get('format')) if isinstance(m, dict) else type(m).__name__})")
    v = m.get("version")
    if type(v) is not int or not 1 <= v <= fmt.VERSION:
        raise SavedModelError(f"{mpath}: unsupported version {fmt._short(v)}; this graphjit reads versions 1..{fmt.VERSION}")
    if v >= 2 and m.get(fmt.MANIFEST_DIGEST) != fmt.checked_digest(m, mpath):
        raise SavedModelError(f"{mpath} is corrupted: its content does not match its own SHA-256 "
                              f"({fmt.MANIFEST_DIGEST})")
    files = _field(m, "files", dict, mpath)
    _field(m, "functions", dict, mpath)
    _field(m, "variables", list, mpath)
    if verify_files:
        for rel, digest in files.items():
            full = fmt.check_inside(path, rel)
            if not os.path.isfile(full):
                raise SavedModelError(f"{path}: file {rel} listed in the manifest is missing")
            if not isinstance(digest, str) or fmt.sha256_file(full) != digest:
                raise SavedModelError(f"{path}: file {rel} is corrupted (its SHA-256 does not match the manifest)")
    return m


def _restore_variables(path: str, m: dict) -> tuple:
    where = f"{path}/{fmt.MANIFEST} variables"
    recs = m["variables"]
    arrays = {}
    if any(isinstance(r, dict) and "array" in r for r in recs):
        if fmt.VARIABLES_FILE not in m["files"]:
            raise SavedModelError(f"{path}: {fmt.VARIABLES_FILE} is not listed in the manifest")
        arrays = fmt.read_arrays(fmt.check_inside(path, fmt.VARIABLES_FILE), path)
    variables, paths = {}, {}
    with _context.init_scope():
        for i, rec in enumerate(recs):
            w = f"{where}[{i}]"
            key = _field(rec, "name", str, w)
            if key in variables or ":" in key or not key:
                raise SavedModelError(f"{w}: invalid or duplicate variable key {fmt._short(key)}")
            dtype = _dtype(rec.get("dtype"), w)
            shape = _shape(rec.get("shape"), w)
            if "array" in rec:
                value = arrays.get(rec["array"]) if isinstance(rec["array"], str) else None
                if value is None:
                    raise SavedModelError(f"{w}: array {fmt._short(rec['array'])} is not in {fmt.VARIABLES_FILE}")
            elif "value" in rec:
                try:
                    value = np.asarray(decode_attr(rec["value"], DecodeContext(), w))
                except Exception as e:  # noqa: BLE001 - reported as a bad file
                    raise SavedModelError(f"{w}: bad value: {e}") from None
            else:
                raise SavedModelError(f"{w}: no value")
            if value.dtype != dtype.np_dtype and not (dtype.name == "string" and value.dtype.kind == "O"):
                raise SavedModelError(f"{w}: stored value has dtype {value.dtype}, manifest says {dtype.name}")
            if not shape.is_compatible_with(value.shape):
                raise SavedModelError(f"{w}: stored value has shape {list(value.shape)}, manifest says {shape}")
            saved_name = rec.get("saved_name", key)
            var = ek.Variable(ek.constant(value, dtype) if dtype.name != "string" else ek.constant(value),
                              trainable=bool(rec.get("trainable", True)), shape=shape)
            var._name = saved_name if isinstance(saved_name, str) and saved_name else key
            variables[key] = var
            if isinstance(rec.get("path"), str):
                paths[rec["path"]] = var
    return variables, paths


def _load_concrete(path, name, i, rec, variables, m, arg_names, defaults):
    where = f"{path}: function {name} trace #{i}"
    rel = _field(rec, "graph", str, where)
    if rel not in m["files"]:
        raise SavedModelError(f"{where}: graph file {rel} is not listed (and checksummed) in the manifest")
    t_start = time.perf_counter()
    gd = fmt.read_json(fmt.check_inside(path, rel), where)
    check_header(gd, f"{path}/{rel}")
    graph = FuncGraph(name, allow_variable_creation=False)
    import_graph_def(gd, input_map=dict(variables), name="", graph=graph)
    _check_imported(graph, variables, where)

    in_names = _field(rec, "inputs", list, where)
    specs_json = _field(rec, "input_specs", list, where)
    if len(specs_json) != len(in_names):
        raise SavedModelError(f"{where}: {len(in_names)} inputs but {len(specs_json)} input specs")
    inputs, specs = [], []
    for k, (n, sj) in enumerate(zip(in_names, specs_json)):
        spec = TensorSpec(_shape(_field(sj, "shape", (list, type(None)), where), where),
                          _dtype(_field(sj, "dtype", str, where), where))
        t = _tensor(graph, n, where)
        if t.op.type != "Placeholder" or t.dtype is not spec.dtype or t.shape.dims != spec.shape.dims:
            raise SavedModelError(f"{where}: input {k} ({fmt._short(n)}) is not a placeholder of {spec.short()}")
        inputs.append(t)
        specs.append(spec)
    if len({id(t) for t in inputs}) != len(inputs):
        raise SavedModelError(f"{where}: the same placeholder is listed twice as an input")
    out_names = _field(rec, "outputs", list, where)
    out_specs = _field(rec, "output_specs", list, where)
    if len(out_specs) != len(out_names):
        raise SavedModelError(f"{where}: {len(out_names)} outputs but {len(out_specs)} output specs")
    outputs = []
    for n, sj in zip(out_names, out_specs):
        t = _tensor(graph, n, where)
        dt = _dtype(_field(sj, "dtype", str, where), where)
        shape = _shape(_field(sj, "shape", (list, type(None)), where), where)
        if t.dtype is not dt or not shape.is_compatible_with(t.shape):
            raise SavedModelError(f"{where}: output {fmt._short(n)} is {t.dtype.name}{t.shape}, the manifest says "
                                  f"{dt.name}{shape}")
        outputs.append(t)
    targets = []
    for n in _field(rec, "targets", list, where):
        if not isinstance(n, str) or n not in graph:
            raise SavedModelError(f"{where}: target {fmt._short(n)} is not an op of the graph")
        op = graph.get_operation_by_name(n)
        if not op.opdef.stateful:
            raise SavedModelError(f"{where}: target {fmt._short(n)} is not a stateful op")
        targets.append(op)

    def in_leaf(tag, payload):
        if tag == "tensor":
            if type(payload) is not int or not 0 <= payload < len(specs):
                raise SavedModelError(f"{where}: argument refers to input {fmt._short(payload)}, which does not exist")
            return SavedInput(payload, specs[payload])
        if not isinstance(payload, str) or payload not in variables:
            raise SavedModelError(f"{where}: argument refers to unknown variable {fmt._short(payload)}")
        return variables[payload]
    call = fmt.decode_structure(_field(rec, "args", dict, where), in_leaf, f"{where}: arguments")
    if not (isinstance(call, list) and len(call) == 2 and isinstance(call[0], list) and isinstance(call[1], dict)):
        raise SavedModelError(f"{where}: arguments must be [positional list, keyword dict]")
    call = canonical_call(call[0], call[1], arg_names, defaults)
    seen = [x.index for x in ek.nest.flatten(call) if isinstance(x, SavedInput)]
    if sorted(seen) != list(range(len(specs))):
        raise SavedModelError(f"{where}: the argument structure does not use each input exactly once")

    def out_leaf(tag, payload):
        if tag != "tensor" or type(payload) is not int or not 0 <= payload < len(outputs):
            raise SavedModelError(f"{where}: return value refers to {tag} {fmt._short(payload)}, which does not exist")
        return _OutRef(payload)
    out_struct = fmt.decode_structure(_field(rec, "structured_outputs", dict, where), out_leaf,
                                      f"{where}: return value")
    flat = ek.nest.flatten(out_struct)
    template = [("t", x.index) if isinstance(x, _OutRef) else ("c", x) for x in flat]
    structured = ek.nest.pack_sequence_as(out_struct, [outputs[x.index] if isinstance(x, _OutRef) else x
                                                       for x in flat]) if ek.nest.is_nested(out_struct) else \
        (outputs[out_struct.index] if isinstance(out_struct, _OutRef) else out_struct)
    sig = rec.get("structured_input_signature")
    if not isinstance(sig, list) or not all(isinstance(s, str) for s in sig):
        sig = [f"arg{k}: {s.short()}" for k, s in enumerate(specs)]
    nodes_before = len(graph.get_operations())
    phases = PhaseTimes()
    phases.add("import", time.perf_counter() - t_start)
    executable, nodes_after = _compile(graph, inputs, outputs, targets, phases=phases)
    cf = ConcreteFunction(name, graph, inputs, specs, sig, outputs, structured, template, executable, nodes_before,
                          nodes_after, None)
    cf.phases = phases
    return RestoredConcrete(cf, call, gd, variables, list(out_names), list(in_names))


def _no_leaf(tag, payload):
    raise SavedModelError(f"a default value cannot hold a {tag}")


def _check_imported(graph, variables: dict, where: str) -> None:
    """Every variable an op (at any depth) uses is a restored one; every tensor has a real dtype.

    (Attr names were checked by `import_graph_def` against each op's declared attrs.)
    """
    restored = {id(v) for v in variables.values()}
    work = [graph]
    while work:
        g = work.pop()
        for op in g.get_operations():
            for v in ek.nest.flatten(list(op.attrs.values())):
                if getattr(v, "_is_variable", False) and id(v) not in restored:
                    raise SavedModelError(f"{where}: op {op.name!r} uses variable {v._name!r}, which is not among "
                                          f"the saved variables")
            for o in op.outputs:
                if not isinstance(o.dtype, DType):
                    raise SavedModelError(f"{where}: op {op.name!r} ({op.type}) has an output of invalid dtype "
                                          f"{fmt._short(o.dtype)} (malformed attrs)")
            work.extend(body for _, body in attr_subgraphs(op.attrs))
    try:
        graph.verify()
    except Exception as e:  # noqa: BLE001 - any inconsistency is a bad file
        raise SavedModelError(f"{where}: the imported graph is inconsistent: {e}") from None


class _OutRef:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _tensor(graph, name, where):
    if not isinstance(name, str):
        raise SavedModelError(f"{where}: tensor name {fmt._short(name)} is not a string")
    try:
        return graph.get_tensor_by_name(name)
    except (KeyError, ValueError):
        raise SavedModelError(f"{where}: tensor {fmt._short(name)} is not in the graph") from None


def load(path: str) -> Loaded:
    """Load a directory written by `tracing.save` (see module docstring); raises SavedModelError."""
    path = os.path.abspath(os.fspath(path))
    try:
        m = read_manifest(path)
        variables, var_paths = _restore_variables(path, m)
        functions = {}
        for name, entry in m["functions"].items():
            if not name.isidentifier():
                raise SavedModelError(f"{path}: function name {fmt._short(name)} is not an identifier")
            arg_names = _field(entry, "arg_names", list, f"{path}: function {name}")
            if not all(isinstance(a, str) for a in arg_names):
                raise SavedModelError(f"{path}: function {name}: arg_names must be strings")
            defaults = {}
            for k, enc in _field(entry, "defaults", dict, f"{path}: function {name}").items():
                if k not in arg_names:      # a damaged name would leave its parameter without its default
                    raise SavedModelError(f"{path}: function {name} has a default for {fmt._short(k)}, which is "
                                          f"not one of its arguments {arg_names}")
                defaults[k] = fmt.decode_structure(enc, _no_leaf, f"{path}: function {name} default {fmt._short(k)}")
            recs = _field(entry, "concrete_functions", list, f"{path}: function {name}")
            if not recs:
                raise SavedModelError(f"{path}: function {name} has no saved concrete functions")
            concretes = [_load_concrete(path, name, i, r, variables, m, arg_names, defaults) for i, r in enumerate(recs)]
            functions[name] = RestoredFunction(name, arg_names, defaults, concretes)
        if not functions:
            raise SavedModelError(f"{path}: the manifest lists no functions")
        obj = m.get("object") if isinstance(m.get("object"), dict) else {}
        return Loaded(path, functions, variables, obj, var_paths)
    except SavedModelError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure on a bad file is reported as SavedModelError
        raise SavedModelError(f"{path}: cannot load the saved functions: {type(e).__name__}: {e}") from e
