"""`import_graph_def`: validate a whole GraphDef, then add it, all or nothing.

Phase 1 (nothing is touched): header and version, node records well formed,
unique names, known op types, attr names declared by the op (`registry.attr_names`:
anything else is refused, so no name from the file ever reaches a kernel call
or generated code), ops' own import checks (`OpDef.extra["check_import"](raw
attrs)` raising ValueError, e.g. PrintV2 refuses `file://` streams), every input and control input resolvable (a
node of the GraphDef or an `input_map` entry), no cycles (Kahn's algorithm;
nodes may be listed in any order), attrs decodable, output indices in range,
and shape inference succeeding on every node in topological order (input_map
replacements must keep the dtype).  Variables are described but not created.
Phase 2: create the variables (new, uninitialized unless the record carries a
value; or the ones given in input_map by variable name), add the ops in
topological order under the name scope, wire imported initializers into
GLOBAL/TRAINABLE collections.  Should anything still fail, the graph is rolled
back to its previous ops.

Nested bodies (attrs holding GraphDefs) are imported into fresh graphs by the
same code.  Imports `eager`, `attr_codecs`, `device_spec`, `graph_def`,
`operation` and `graph` (it sits above `graph.py`: it makes graphs; `graph_def.py`, the export
side, sits below).
"""
from __future__ import annotations

import heapq

import numpy as np

from eager import context as _context
from eager import registry
from eager.dtypes import as_dtype
from eager.errors import OpError
from eager.registry import Spec
from eager.shape import MAX_DIM, TensorShape, brief_repr
from eager.tensor import Tensor

from .attr_codecs import AttrCodecError, DecodeContext, decode_attr
from .device_spec import canonical
from .graph import Graph, GraphKeys, get_default_graph
from .graph_def import GraphDefError, check_header, check_name
from .operation import GraphTensor, SourceLocation


def _split_tensor_name(s: str, where: str):
    if not isinstance(s, str):
        raise GraphDefError(f"{where}: expected a tensor name string, got {s!r}")
    op, sep, idx = s.rpartition(":")
    if not sep or not idx.isdigit() or not op:
        raise GraphDefError(f"{where}: {s!r} is not a tensor name ('<node>:<index>')")
    return op, int(idx)


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
    from eager.variables import Variable
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


def _validate_nodes(gd):
    nodes = gd.get("nodes")
    if not isinstance(nodes, list):
        raise GraphDefError("graph_def: 'nodes' must be a list of node records")
    by_name = {}
    names = {n["name"] for n in nodes if isinstance(n, dict) and isinstance(n.get("name"), str)}
    for i, n in enumerate(nodes):
        if not isinstance(n, dict) or not isinstance(n.get("name"), str) or not isinstance(n.get("op"), str):
            raise GraphDefError(f"graph_def: node #{i} is malformed (needs string 'name' and 'op'): {brief_repr(n, 80)}")
        for key, typ in (("inputs", list), ("control_inputs", list), ("attrs", dict)):
            if not isinstance(n.get(key, typ()), typ):
                raise GraphDefError(f"graph_def: node {n['name']!r}: {key!r} must be a {typ.__name__}")
        try:
            check_name(n["name"])
        except ValueError as e:
            raise GraphDefError(f"graph_def: node #{i}: {e}") from None
        if n["name"] in by_name:
            raise GraphDefError(f"graph_def: duplicate node name {n['name']!r}")
        opdef = registry.lookup(n["op"])
        if opdef is None:
            raise GraphDefError(f"graph_def: node {n['name']!r} has unknown op type {n['op']!r}")
        n_in, raw = len(n.get("inputs", [])), n.get("attrs", {})
        bad = registry.check_attr_names(opdef, n_in, raw) or registry.check_call(opdef, n_in, raw)
        if bad is not None:
            raise GraphDefError(f"graph_def: node {n['name']!r}: {bad}")
        check = opdef.extra.get("check_import")
        if check is not None:
            try:
                check(n.get("attrs", {}))
            except ValueError as e:
                raise GraphDefError(f"graph_def: node {n['name']!r} ({n['op']}): {e}") from None
        if not isinstance(n.get("device", ""), str):
            raise GraphDefError(f"graph_def: node {n['name']!r}: 'device' must be a string")
        coloc = n.get("colocate_with", [])
        if not isinstance(coloc, list) or not all(isinstance(c, str) for c in coloc):
            raise GraphDefError(f"graph_def: node {n['name']!r}: 'colocate_with' must be a list of op names")
        missing = [c for c in coloc if c not in names]
        if missing:
            raise GraphDefError(f"graph_def: node {n['name']!r}: 'colocate_with' names {missing}, which are not "
                                f"nodes of the GraphDef")
        try:
            canonical(n.get("device", ""))
        except ValueError as e:
            raise GraphDefError(f"graph_def: node {n['name']!r}: {e}") from None
        _check_location(n)
        by_name[n["name"]] = n
    return nodes, by_name


def _check_location(n) -> None:
    """A node's "location" is absent or [file, line, function?]: printable strings, a non-negative int line."""
    loc = n.get("location")
    if loc is None:
        return
    ok = isinstance(loc, list) and len(loc) in (2, 3) and type(loc[1]) is int and 0 <= loc[1] <= MAX_DIM and \
        all(isinstance(s, str) and len(s) <= 4096 and s.isprintable() for s in loc[:1] + loc[2:])
    if not ok:
        raise GraphDefError(f"graph_def: node {n['name']!r}: 'location' must be [file, line, function] with "
                            f"printable strings and a non-negative integer line, got {brief_repr(loc)}")


def _check_variable_record(rec, names) -> None:
    """Phase-1 checks of a "variables" record: a valid name, a known dtype, an int64 shape whose size
    NumPy can represent, and an initializer that is a node of the GraphDef."""
    where = f"graph_def: variable {rec['name']!r}"
    try:
        check_name(rec["name"])
        as_dtype(rec.get("dtype"))
        shape = rec.get("shape")
        if shape is not None and not isinstance(shape, list):
            raise ValueError(f"shape must be a list of dims or null, got {brief_repr(shape)}")
        dims = TensorShape(shape).dims or ()
        n = 1
        for d in dims:
            n *= d or 1
        if n > MAX_DIM:
            raise ValueError(f"shape {brief_repr(shape)} has more than 2**63 - 1 elements")
    except (TypeError, ValueError, KeyError) as e:
        raise GraphDefError(f"{where}: {e}") from None
    init = rec.get("initializer")
    if init and (not isinstance(init, str) or init not in names):
        raise GraphDefError(f"{where}: initializer {brief_repr(init)} is not a node of the GraphDef")
    if not isinstance(rec.get("trainable", True), bool):
        raise GraphDefError(f"{where}: 'trainable' must be true or false")


def _check_tensor_list(gd, what) -> list:
    value = gd.get(what, [])
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise GraphDefError(f"graph_def: {what!r} must be a list of tensor names, got {brief_repr(value)}")
    return value


def _toposort(nodes, by_name, input_map):
    """Indices of nodes in a topological order (the listed order when it is one); raises on dangling
    inputs and cycles."""
    index = {n["name"]: i for i, n in enumerate(nodes)}
    indeg = [0] * len(nodes)
    users = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        deps = set()
        for k, s in enumerate(n.get("inputs", [])):
            where = f"graph_def: node {n['name']!r} input {k}"
            if isinstance(s, str) and s in input_map:
                continue
            op, _ = _split_tensor_name(s, where)
            if op not in index:
                raise GraphDefError(f"{where} refers to {s!r}, but there is no node {op!r} in the GraphDef (and "
                                    f"no input_map entry for it): dangling input")
            deps.add(index[op])
        for c in n.get("control_inputs", []):
            if not isinstance(c, str) or c.lstrip("^") not in index:
                raise GraphDefError(f"graph_def: node {n['name']!r} has control input {c!r}, which is not a node "
                                    f"of the GraphDef: dangling control input")
            deps.add(index[c.lstrip("^")])
        indeg[i] = len(deps)
        for d in deps:
            users[d].append(i)
    ready = [i for i in range(len(nodes)) if indeg[i] == 0]   # a heap: keeps the listed order when valid
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        stuck = sorted(nodes[i]["name"] for i in range(len(nodes)) if indeg[i] > 0)
        raise GraphDefError(f"graph_def contains a cycle among nodes {stuck[:8]}{' ...' if len(stuck) > 8 else ''}")
    return order


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
    check_header(gd)
    if not _body:
        check_structure(gd)
    graph = graph if graph is not None else get_default_graph()
    graph._check_not_finalized()
    input_map = dict(input_map or {})
    nodes, by_name = _validate_nodes(gd)
    order = _toposort(nodes, by_name, {k: v for k, v in input_map.items() if ":" in str(k)})

    # variables: created up front (detached objects: the graph is not touched until phase 2)
    var_recs = gd.get("variables", [])
    if not isinstance(var_recs, list):
        raise GraphDefError("graph_def: 'variables' must be a list")
    dctx = DecodeContext()
    variables, new_recs = {}, {}
    for rec in var_recs:
        if not isinstance(rec, dict) or not isinstance(rec.get("name"), str):
            raise GraphDefError(f"graph_def: malformed variable record {brief_repr(rec, 80)}")
        _check_variable_record(rec, by_name)
        existing = input_map.get(rec["name"])
        if existing is not None and getattr(existing, "_is_variable", False):
            variables[rec["name"]] = existing
            continue
        variables[rec["name"]] = variable_from_record(rec)
        new_recs[rec["name"]] = rec
    dctx.variables = variables
    dctx.decode_graph = lambda body_def: _decode_graph_body(body_def, variables)

    # phase 1: decode attrs and infer every node
    decoded, specs_of = {}, {}
    for i in order:
        n = nodes[i]
        opdef = registry.get(n["op"])
        try:
            attrs = {k: decode_attr(v, dctx, f"node {n['name']!r} attr {k!r}") for k, v in n.get("attrs", {}).items()}
        except AttrCodecError as e:
            raise GraphDefError(f"graph_def: {e}") from None
        in_specs = []
        for k, s in enumerate(n.get("inputs", [])):
            if s in input_map:
                t = input_map[s]
                if not isinstance(t, GraphTensor) or t.graph is not graph:
                    raise GraphDefError(f"input_map[{s!r}] must be a tensor of the target graph, got {t!r}")
                in_specs.append(t.spec())
                continue
            op, idx = _split_tensor_name(s, f"node {n['name']!r} input {k}")
            outs = specs_of[op]
            if idx >= len(outs):
                raise GraphDefError(f"graph_def: node {n['name']!r} input {k} refers to {s!r}, but node {op!r} "
                                    f"({by_name[op]['op']}) has {len(outs)} outputs")
            in_specs.append(outs[idx])
        try:
            out_specs = opdef.infer(in_specs, attrs)
        except Exception as e:  # noqa: BLE001 - any inference failure rejects the GraphDef
            raise GraphDefError(f"graph_def: node {n['name']!r} ({n['op']}) fails shape inference: "
                                f"{e if isinstance(e, OpError) else f'{type(e).__name__}: {e}'}") from None
        decoded[i] = attrs
        specs_of[n["name"]] = out_specs
    for key, t in input_map.items():
        if isinstance(key, str) and ":" in key:
            op, idx = _split_tensor_name(key, "input_map key")
            if op in specs_of and idx < len(specs_of[op]) and specs_of[op][idx].dtype is not t.dtype:
                raise GraphDefError(f"input_map[{key!r}] has dtype {t.dtype.name}, but {key!r} has dtype "
                                    f"{specs_of[op][idx].dtype.name}")
    for what in ("inputs", "outputs"):
        for s in _check_tensor_list(gd, what):
            op, idx = _split_tensor_name(s, f"graph_def {what}")
            if op not in specs_of or idx >= len(specs_of[op]):
                raise GraphDefError(f"graph_def: {what} entry {s!r} is not a tensor of the GraphDef")
    elements = list(return_elements or [])
    for e in elements:
        base = e.rpartition(":")[0] if ":" in e else e
        if base not in by_name:
            raise GraphDefError(f"return_elements: {e!r} is not in the GraphDef")

    # phase 2: create variables and ops
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
                    op, idx = _split_tensor_name(s, "")
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
        for k, rec in new_recs.items():
            var = variables[k]
            var._name = graph.unique_name(prefix + rec["name"])
            graph._variables[var._name] = var
            if rec.get("initializer"):
                var.initializer = made[rec["initializer"]]
            graph.add_to_collection(GraphKeys.GLOBAL_VARIABLES, var)
            if var.trainable:
                graph.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, var)
    except Exception:
        graph._rollback_to(n_before, names_before)
        raise
    if _body:
        graph.inputs = [made[s.rpartition(":")[0]]._outputs[int(s.rpartition(":")[2])] for s in gd.get("inputs", [])]
        graph.outputs = [made[s.rpartition(":")[0]]._outputs[int(s.rpartition(":")[2])]
                         for s in gd.get("outputs", [])]
    if return_elements is None:
        return None
    out = []
    for e in elements:
        if ":" in e:
            op, idx = _split_tensor_name(e, "return_elements")
            out.append(made[op]._outputs[idx])
        else:
            out.append(made[e])
    return out


