"""`import_graph_def`: validate a whole GraphDef, then add it, all or nothing.

Phase 1 (nothing is touched): header and version, nesting bounds
(`check_structure`), the records themselves (graph_def_checks.py: node records well formed,
unique names, known op types, attr names declared by the op (`registry.attr_names`:
anything else is refused, so no name from the file ever reaches a kernel call
or generated code), ops' own import checks (`OpDef.extra["check_import"](raw
attrs)` raising ValueError, e.g. PrintV2 refuses `file://` streams), every input and control input resolvable (a
node of the GraphDef or an `input_map` entry), no cycles (Kahn's algorithm;
nodes may be listed in any order)), attrs decodable, output indices in range,
and shape inference succeeding on every node in topological order (input_map
replacements must keep the dtype).  Variables are described but not created.
Phase 2: create the variables (new, uninitialized unless the record carries a
value; or the ones given in input_map by variable name), add the ops in
topological order under the name scope, wire imported initializers into
GLOBAL/TRAINABLE collections.  Should anything still fail, the graph is rolled
back to its previous ops.

Nested bodies (attrs holding GraphDefs) are imported into fresh graphs by the
same code.  Imports `eager`, `attr_codecs`, `device_spec`, `graph_def`, `graph_def_checks`,
`operation` and `graph` (it sits above `graph.py`: it makes graphs; `graph_def.py`, the export
side, sits below).
"""
from __future__ import annotations

import numpy as np

from eager import context as _context
from eager import registry
from eager.dtypes import as_dtype
from eager.errors import OpError
from eager.shape import TensorShape, brief_repr
from eager.tensor import Tensor
from eager.variables import Variable

from .attr_codecs import AttrCodecError, DecodeContext, decode_attr
from .device_spec import canonical
from .graph import Graph, GraphKeys, get_default_graph
from .graph_def import GraphDefError, check_header
from .graph_def_checks import check_tensor_list, check_variable_record, split_tensor_name, toposort, validate_nodes
from .operation import GraphTensor, SourceLocation


class _DetachedContext(_context.Context):
    """A non-eager context whose create_variable does nothing: makes uninitialized Variables (and
    nothing else: no op is built while it is current)."""

    def create_variable(self, var, init):
        return None

    def add_op(self, opdef, inputs, attrs, name=None):
        raise RuntimeError(f"internal error: {opdef.name} op built while making an imported variable")

    add_node = add_op

    def trace_body(self, *args, **kwargs):
        raise RuntimeError("internal error: control flow built while making an imported variable")

    trace_bodies = device = trace_body


def _make_variable(rec, ctx_where):
    dtype = as_dtype(rec["dtype"])
    shape = TensorShape(rec["shape"])
    dims = [] if shape.dims is None else [0 if d is None else d for d in shape.dims]
    if rec.get("value_decoded") is not None:
        with _context.init_scope():
            v = Variable(Tensor(np.asarray(rec["value_decoded"], dtype=dtype.np_dtype)),
                         trainable=rec["trainable"], shape=shape)
    else:       # a zero-strided view: an uninitialized variable holds no memory, whatever shape it declares
        with _context.scope(_DetachedContext()):
            empty = np.broadcast_to(np.zeros((), dtype=dtype.np_dtype), dims)
            v = Variable(Tensor(empty), trainable=rec["trainable"], shape=shape)
    v._name = rec["name"]
    return v


def variable_from_record(rec: dict):
    """A new Variable described by one record of a GraphDef's "variables" table (uninitialized, or holding
    the record's value); GraphDefError when the record is malformed.  Distributed tasks make their resource
    table's variables with it (graph_runtime/distributed/worker.py)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("name"), str):
        raise GraphDefError(f"graph_def: malformed variable record {brief_repr(rec, 80)}")
    try:
        if rec.get("value") is not None:
            rec = dict(rec, value_decoded=decode_attr(rec["value"], DecodeContext(), f"variable {rec['name']!r}"))
        return _make_variable(rec, rec["name"])
    except (TypeError, ValueError, KeyError, AttrCodecError) as e:
        raise GraphDefError(f"graph_def: variable record {rec.get('name')!r} is malformed: {e}") from None


def import_graph_def(graph_def, input_map=None, return_elements=None, name: str = "import", graph=None):
    """Add the nodes of `graph_def` to `graph` (default: the default graph) under scope `name`.

    `input_map` maps tensor names of the GraphDef ('x:0') to tensors of the
    target graph that replace them (and variable names to existing Variables).
    `return_elements` lists names ('y:0' tensors, 'train' ops) to return,
    translated to the imported elements; returns None when not given.
    """
    return import_into(graph_def, input_map, return_elements, name, graph)


MAX_BODY_NESTING = 64     # If/Case/While bodies inside bodies: deeper graphs would exhaust Python's stack


MAX_JSON_NESTING = 100    # lists and dicts inside one graph (a GraphDef's own structure is 6 deep)


def check_structure(gd) -> None:
    """GraphDefError when `gd` nests bodies more than MAX_BODY_NESTING levels, or data more than
    MAX_JSON_NESTING levels within one graph, or holds an integer beyond 64 bits.  Iterative: a 5,000-deep
    document cannot overflow the stack here, and every recursive step after it (decoding, inference,
    passes, compiling) is bounded; no later message or kernel meets a 5,000-digit integer."""
    work = [(gd, 0, 0)]
    while work:
        obj, depth, level = work.pop()
        if type(obj) is int and not -2 ** 63 <= obj < 2 ** 64:
            raise GraphDefError(f"graph_def: integer {brief_repr(obj)} does not fit in 64 bits")
        if depth > MAX_JSON_NESTING:
            raise GraphDefError(f"graph_def: data nested more than {MAX_JSON_NESTING} levels deep "
                                f"(graph_runtime.graph_import.MAX_JSON_NESTING)")
        if isinstance(obj, dict):
            if len(obj) == 1 and "$graph" in obj:
                if level + 1 > MAX_BODY_NESTING:
                    raise GraphDefError(f"graph_def: control-flow bodies nested more than {MAX_BODY_NESTING} "
                                        f"levels deep (graph_runtime.graph_import.MAX_BODY_NESTING)")
                work.append((obj["$graph"], 0, level + 1))
            else:
                work.extend((v, depth + 1, level) for v in obj.values())
        elif isinstance(obj, list):
            work.extend((v, depth + 1, level) for v in obj)


def _decode_graph_body(gd, variables):
    g = Graph()
    import_into(gd, dict(variables), None, "", g, _body=True)
    return g


def import_into(gd, input_map, return_elements, name, graph, _body: bool = False):
    """`import_graph_def`'s work (the module docstring's two phases); `_body`: `gd` is a nested body, imported
    into a fresh graph whose `inputs` and `outputs` are set from the GraphDef's lists."""
    check_header(gd)
    if not _body:
        check_structure(gd)
    graph = graph if graph is not None else get_default_graph()
    graph._check_not_finalized()
    input_map = dict(input_map or {})
    nodes, by_name = validate_nodes(gd)
    order = toposort(nodes, by_name, {k: v for k, v in input_map.items() if ":" in str(k)})
    variables, new_recs = _describe_variables(gd, by_name, input_map)
    dctx = DecodeContext()
    dctx.variables = variables
    dctx.decode_graph = lambda body_def: _decode_graph_body(body_def, variables)
    decoded, specs_of = _decode_and_infer(nodes, order, by_name, input_map, graph, dctx)
    _check_references(gd, input_map, specs_of)
    elements = list(return_elements or [])
    for e in elements:
        base = e.rpartition(":")[0] if ":" in e else e
        if base not in by_name:
            raise GraphDefError(f"return_elements: {e!r} is not in the GraphDef")

    made = _add_to_graph(graph, name, nodes, order, decoded, specs_of, input_map, variables, new_recs)
    if _body:
        graph.inputs = [made[s.rpartition(":")[0]]._outputs[int(s.rpartition(":")[2])] for s in gd.get("inputs", [])]
        graph.outputs = [made[s.rpartition(":")[0]]._outputs[int(s.rpartition(":")[2])]
                         for s in gd.get("outputs", [])]
    if return_elements is None:
        return None
    out = []
    for e in elements:
        if ":" in e:
            op, idx = split_tensor_name(e, "return_elements")
            out.append(made[op]._outputs[idx])
        else:
            out.append(made[e])
    return out


def _describe_variables(gd, by_name, input_map) -> tuple:
    """`(variables, new_recs)`: name -> Variable for every record of the "variables" table (the one
    `input_map` gives by name, else a new detached one: the graph is not touched until phase 2), and
    name -> record for the new ones."""
    var_recs = gd.get("variables", [])
    if not isinstance(var_recs, list):
        raise GraphDefError("graph_def: 'variables' must be a list")
    variables, new_recs = {}, {}
    for rec in var_recs:
        if not isinstance(rec, dict) or not isinstance(rec.get("name"), str):
            raise GraphDefError(f"graph_def: malformed variable record {brief_repr(rec, 80)}")
        check_variable_record(rec, by_name)
        existing = input_map.get(rec["name"])
        if existing is not None and getattr(existing, "_is_variable", False):
            variables[rec["name"]] = existing
            continue
        variables[rec["name"]] = variable_from_record(rec)
        new_recs[rec["name"]] = rec
    return variables, new_recs


def _decode_and_infer(nodes, order, by_name, input_map, graph, dctx) -> tuple:
    """Phase 1's last step: `(decoded attrs per node index, output specs per node name)`, every node's
    attrs decoded and its outputs inferred, in topological order."""
    decoded, specs_of = {}, {}
    for i in order:
        n = nodes[i]
        opdef = registry.get(n["op"])
        try:
            attrs = {k: decode_attr(v, dctx, f"node {n['name']!r} attr {k!r}") for k, v in n.get("attrs", {}).items()}
        except AttrCodecError as e:
            raise GraphDefError(f"graph_def: {e}") from None
        in_specs = [_input_spec(n, k, s, input_map, graph, specs_of, by_name)
                    for k, s in enumerate(n.get("inputs", []))]
        try:
            out_specs = opdef.infer(in_specs, attrs)
        except Exception as e:  # noqa: BLE001 - any inference failure rejects the GraphDef
            raise GraphDefError(f"graph_def: node {n['name']!r} ({n['op']}) fails shape inference: "
                                f"{e if isinstance(e, OpError) else f'{type(e).__name__}: {e}'}") from None
        decoded[i] = attrs
        specs_of[n["name"]] = out_specs
    return decoded, specs_of


def _input_spec(n, k: int, s: str, input_map, graph, specs_of, by_name):
    """The spec of node `n`'s input `k` (tensor name `s`): its `input_map` replacement's, or its producer's."""
    if s in input_map:
        t = input_map[s]
        if not isinstance(t, GraphTensor) or t.graph is not graph:
            raise GraphDefError(f"input_map[{s!r}] must be a tensor of the target graph, got {t!r}")
        return t.spec()
    op, idx = split_tensor_name(s, f"node {n['name']!r} input {k}")
    outs = specs_of[op]
    if idx >= len(outs):
        raise GraphDefError(f"graph_def: node {n['name']!r} input {k} refers to {s!r}, but node {op!r} "
                            f"({by_name[op]['op']}) has {len(outs)} outputs")
    return outs[idx]


def _check_references(gd, input_map, specs_of) -> None:
    """`input_map` replacements keep their tensor's dtype; the GraphDef's "inputs" and "outputs" name its
    tensors."""
    for key, t in input_map.items():
        if isinstance(key, str) and ":" in key:
            op, idx = split_tensor_name(key, "input_map key")
            if op in specs_of and idx < len(specs_of[op]) and specs_of[op][idx].dtype is not t.dtype:
                raise GraphDefError(f"input_map[{key!r}] has dtype {t.dtype.name}, but {key!r} has dtype "
                                    f"{specs_of[op][idx].dtype.name}")
    for what in ("inputs", "outputs"):
        for s in check_tensor_list(gd, what):
            op, idx = split_tensor_name(s, f"graph_def {what}")
            if op not in specs_of or idx >= len(specs_of[op]):
                raise GraphDefError(f"graph_def: {what} entry {s!r} is not a tensor of the GraphDef")


def _add_to_graph(graph, name, nodes, order, decoded, specs_of, input_map, variables, new_recs) -> dict:
    """Phase 2: the ops (in topological order, under scope `name`) and the new variables added to `graph`;
    node name -> the op made.  On any failure the graph is rolled back to its previous ops."""
    n_before, names_before = len(graph._ops), dict(graph._name_counts)
    try:
        prefix = (graph.unique_name(name) + "/") if name else ""
        made: dict = {}
        for i in order:
            n = nodes[i]
            ins = []
            for s in n.get("inputs", []):
                if s in input_map:
                    ins.append(input_map[s])
                else:
                    op, idx = split_tensor_name(s, "")
                    ins.append(made[op]._outputs[idx])
            ctrl = tuple(made[c.lstrip("^")] for c in n.get("control_inputs", []))
            loc = n.get("location")
            frames = (SourceLocation(str(loc[0]), int(loc[1]), str(loc[2]) if len(loc) > 2 else ""),) \
                if isinstance(loc, list) and len(loc) >= 2 else ()
            made[n["name"]] = graph._create_op(registry.get(n["op"]), tuple(ins), decoded[i],
                                               graph.unique_name(prefix + n["name"]), specs_of[n["name"]], ctrl,
                                               canonical(n.get("device", "")), frames)
        for n in nodes:
            if n.get("colocate_with"):
                made[n["name"]]._colocate = tuple(made[c]._name for c in n["colocate_with"])
        _add_variables(graph, prefix, variables, new_recs, made)
    except Exception:
        graph._rollback_to(n_before, names_before)
        raise
    return made


def _add_variables(graph, prefix, variables, new_recs, made) -> None:
    """The new variables named in `graph`, with their imported initializers, in the variable collections."""
    for k, rec in new_recs.items():
        var = variables[k]
        var._name = graph.unique_name(prefix + rec["name"])
        graph._variables[var._name] = var
        if rec.get("initializer"):
            var.initializer = made[rec["initializer"]]
        graph.add_to_collection(GraphKeys.GLOBAL_VARIABLES, var)
        if var.trainable:
            graph.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, var)
