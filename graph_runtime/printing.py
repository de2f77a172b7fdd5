"""Readable views of a graph: `str(graph)` listing and `to_dot()` Graphviz text.

Listing format, one op per line in creation order:

    %x: f32[2,3] = Placeholder() {dtype=float32, shape=(2, 3)}
    %MatMul: f32[2,4] = MatMul(%x, %w/read) {transpose_a=False, transpose_b=False}
    %split: (f32[2], f32[2]) = Unpack(%y) {axis=0, num=2}
    %init = NoOp(^w/Assign, ^b/Assign)

An input that is output i > 0 of its op prints as `%split:1`; `^name` is a
control input; small constants print their value, large ones their type.
Attrs holding subgraphs (functional control flow) print as `<body>` and the
body is listed below the op, indented by four spaces per nesting level (an
explicit stack, no recursion).  The text is stable, so tests may compare it as
golden output.

Imports `numpy`, `eager` and `operation` only (`graph.py` imports this module).
"""
from __future__ import annotations

import numpy as np

from eager.shape import TensorShape

from eager.tensor_spec import short_type
from .operation import GraphBase, attr_subgraphs

_MAX_INLINE_ELEMENTS = 6


def _tensor_ref(t) -> str:
    return f"%{t.op.name}" if t.value_index == 0 else f"%{t.op.name}:{t.value_index}"


def format_attr(v) -> str:
    if isinstance(v, np.ndarray) or isinstance(v, np.generic):
        a = np.asarray(v)
        if a.size <= _MAX_INLINE_ELEMENTS:
            body = np.array2string(a, separator=", ").replace("\n", "")
            return body
        return f"<{a.dtype}{list(a.shape)}>"
    if isinstance(v, GraphBase):
        return "<body>"
    if getattr(v, "_is_variable", False):
        return f"<var {v._name}>"
    if isinstance(v, TensorShape):
        return "[*]" if v.dims is None else "[" + ",".join("?" if d is None else str(d) for d in v.dims) + "]"
    if hasattr(v, "name") and type(v).__name__ == "DType":
        return v.name
    if type(v) in (list, tuple):
        inner = ", ".join(format_attr(x) for x in v)   # depth = nesting of the attr value (shallow)
        r = f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        return r if len(r) <= 60 else r[:57] + "..."
    r = repr(v) if not isinstance(v, str) else repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def format_op(op) -> str:
    outs = op.outputs
    if not outs:
        lhs = f"%{op.name}"
    elif len(outs) == 1:
        lhs = f"%{op.name}: {short_type(outs[0].dtype, outs[0].shape)}"
    else:
        lhs = f"%{op.name}: (" + ", ".join(short_type(o.dtype, o.shape) for o in outs) + ")"
    args = [_tensor_ref(t) for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs]
    text = f"{lhs} = {op.type}({', '.join(args)})"
    attrs = op.attrs
    if op.type == "Const":
        text += f" {{value={format_attr(attrs['value'])}}}"
    elif attrs:
        text += " {" + ", ".join(f"{k}={format_attr(attrs[k])}" for k in sorted(attrs)) + "}"
    if op.device:
        text += f" @{op.device}"
    return text


def format_graph(graph, indent: str = "") -> str:
    """The listing of `graph` (nested bodies included, indented)."""
    lines: list = []
    # stack items: ("op", op, depth) or ("header", text, depth)
    stack = [("ops", graph, 0)]
    while stack:
        kind, item, depth = stack.pop()
        pad = indent + "    " * depth
        if kind == "header":
            lines.append(pad + item)
            continue
        g = item
        if g.inputs or g.outputs:
            ins = ", ".join(_tensor_ref(t) for t in g.inputs)
            outs = ", ".join(_tensor_ref(t) for t in g.outputs)
            lines.append(pad + f"# inputs: ({ins}) -> outputs: ({outs})")
        # push ops in reverse so they pop in order; bodies right after their op
        pending = []
        for op in g.get_operations():
            pending.append(("header", format_op(op), depth))
            for attr_name, body in attr_subgraphs(op.attrs):
                pending.append(("header", f"{attr_name}:", depth + 1))
                pending.append(("ops", body, depth + 2))
        stack.extend(reversed(pending))
    return "\n".join(lines)


def _dot_id(name: str) -> str:
    return '"' + name.replace('"', '\\"') + '"'


def graph_to_dot(graph) -> str:
    """Graphviz `digraph` text: one node per op, data edges labelled with type, control edges dashed."""
    lines = ["digraph G {", "  node [shape=box, fontname=\"monospace\"];"]
    for op in graph.get_operations():
        label = f"{op.name}\\n{op.type}"
        style = ", style=filled, fillcolor=\"#ffe0e0\"" if op.opdef.stateful else ""
        lines.append(f"  {_dot_id(op.name)} [label=\"{label}\"{style}];")
    for op in graph.get_operations():
        for t in op.inputs:
            lines.append(f"  {_dot_id(t.op.name)} -> {_dot_id(op.name)} "
                         f"[label=\"{short_type(t.dtype, t.shape)}\"];")
        for c in op.control_inputs:
            lines.append(f"  {_dot_id(c.name)} -> {_dot_id(op.name)} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"
