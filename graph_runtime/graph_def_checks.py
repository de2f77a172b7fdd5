"""Phase 1 of `import_graph_def` (graph_import.py) over a GraphDef's records alone: nothing is decoded,
inferred or touched.

`validate_nodes`: node records well formed, unique valid names, known op types, attr names the op declares
(`registry.check_attr_names`: nothing else from the file ever reaches a kernel call or generated code), the
ops' own import checks (`OpDef.extra["check_import"]`), devices, colocation and locations.
`check_variable_record`: one record of the "variables" table.  `check_tensor_list`: the "inputs" and
"outputs" lists.  `toposort`: every input resolvable and no cycles (Kahn's algorithm: nodes may be listed
in any order).  Every failure is a `GraphDefError` naming the node or record.

Imports `eager`, `device_spec` and `graph_def` only.
"""
from __future__ import annotations

import heapq

from eager import registry
from eager.dtypes import as_dtype
from eager.shape import MAX_DIM, TensorShape, brief_repr

from .device_spec import canonical
from .graph_def import GraphDefError, check_name


def split_tensor_name(s: str, where: str):
    if not isinstance(s, str):
        raise GraphDefError(f"{where}: expected a tensor name string, got {s!r}")
    op, sep, idx = s.rpartition(":")
    if not sep or not idx.isdigit() or not op:
        raise GraphDefError(f"{where}: {s!r} is not a tensor name ('<node>:<index>')")
    return op, int(idx)


def validate_nodes(gd):
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


def check_variable_record(rec, names) -> None:
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


def check_tensor_list(gd, what) -> list:
    value = gd.get(what, [])
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise GraphDefError(f"graph_def: {what!r} must be a list of tensor names, got {brief_repr(value)}")
    return value


def toposort(nodes, by_name, input_map):
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
            op, _ = split_tensor_name(s, where)
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
