"""`describe_saved(path)`: a readable summary of a saved-function directory (`graphjit show`).

Reads the manifest (checksums verified) and the GraphDef JSON files without
importing graphs, creating variables or running anything: saved functions with
their signatures and output types, op counts by type (nested cond/while bodies
included), variables with dtype, shape and size, and the files.  Bad
directories raise `SavedModelError`.  Imports only sibling modules.
"""
from __future__ import annotations

import collections
import os

from . import format as fmt
from .format import SavedModelError
from .loader import read_manifest


def _count_ops(gd) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    stack = [gd]
    while stack:
        g = stack.pop()
        nodes = g.get("nodes") if isinstance(g, dict) else None
        if not isinstance(nodes, list):
            raise SavedModelError("a GraphDef has no node list")
        for n in nodes:
            if not isinstance(n, dict):
                raise SavedModelError("a GraphDef node is not an object")
            counts[str(n.get("op"))] += 1
            attrs = [n.get("attrs", {})]
            while attrs:                                   # find nested bodies at any depth of an attr
                a = attrs.pop()
                if isinstance(a, dict):
                    if "$graph" in a and len(a) == 1:
                        stack.append(a["$graph"])
                    else:
                        attrs.extend(a.values())
                elif isinstance(a, list):
                    attrs.extend(a)
    return counts


def _spec_text(s) -> str:
    if not isinstance(s, dict):
        return "?"
    shape = s.get("shape")
    dims = "*" if shape is None else ",".join("?" if d is None else str(d) for d in shape)
    return f"{s.get('dtype')}[{dims}]"


def describe_saved(path: str) -> str:
    m = read_manifest(path)
    obj = m.get("object") if isinstance(m.get("object"), dict) else {}
    lines = [f"{os.path.abspath(path)}: graphjit saved functions (format version {m['version']}, saved from "
             f"{obj.get('type', '?')} ({obj.get('kind', '?')}))", ""]
    total = collections.Counter()
    for name, entry in m["functions"].items():
        recs = entry.get("concrete_functions", []) if isinstance(entry, dict) else []
        lines.append(f"function {name}: {len(recs)} signature(s)")
        for i, rec in enumerate(recs):
            if not isinstance(rec, dict):
                raise SavedModelError(f"{path}: function {name} record #{i} is malformed")
            outs = ", ".join(_spec_text(s) for s in rec.get("output_specs", [])) or "()"
            lines.append(f"  [{i}] {rec.get('signature', '?')} -> {outs}")
            rel = rec.get("graph")
            gd = fmt.read_json(fmt.check_inside(path, rel), f"{path}: {name}[{i}]")
            counts = _count_ops(gd)
            total.update(counts)
            targets = [str(x) for x in rec.get("targets", [])]
            more = f" +{len(targets) - 6} more" if len(targets) > 6 else ""
            state = f", stateful ops: {', '.join(targets[:6])}{more}" if targets else ""
            lines.append(f"      {sum(counts.values())} ops ({rel}){state}")
        lines.append("")
    lines.append("ops by type (all saved graphs, nested bodies included):")
    width = max((len(k) for k in total), default=4)
    for op, n in sorted(total.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {op:<{width}}  {n}")
    lines.append("")
    variables = m["variables"]
    lines.append(f"variables: {len(variables)}")
    for v in variables:
        if not isinstance(v, dict):
            raise SavedModelError(f"{path}: malformed variable record")
        shape = v.get("shape")
        size = 1
        for d in shape or []:
            size *= d if isinstance(d, int) else 1
        flag = "" if v.get("trainable", True) else "  (not trainable)"
        key = f" (key {v.get('name')})" if v.get("saved_name", v.get("name")) != v.get("name") else ""
        lines.append(f"  {v.get('saved_name', v.get('name'))}{key}: {_spec_text(v)}  {size} values{flag}")
    lines.append("")
    lines.append("files:")
    for rel in sorted(m["files"]):
        full = fmt.check_inside(path, rel)
        lines.append(f"  {rel}  {os.path.getsize(full)} bytes")
    return "\n".join(lines)
