"""Graph pictures: Graphviz text with nested bodies as clusters, rendered to SVG/PNG by `dot`.

- `to_dot(graph, title=None)`: a `digraph` in which every op is a box (stateful
  ops shaded, placeholders and constants styled apart), data edges are
  labelled with their type (`f32[2,3]`), an op with a device names it
  (`@CPU:1`: the placed device in a placed graph, e.g. a partition graph of
  `RunMetadata.partition_graphs`), control edges are dashed, and the
  bodies of functional control flow (`If`/`While`/`Case` attrs holding
  graphs) are drawn as nested clusters, linked to their op by a dotted edge
  labelled with the attr name.  Node ids are unique across nesting levels.
- `to_svg(graph)`: the SVG text.
- `dot_available()`; `GraphvizNotFoundError` (a RuntimeError) says how to
  install Graphviz when `dot` is not on PATH.

`Graph.to_dot()` (printing.py) is the flat, one-level view; this module is
the picture for people.  HTML pages, and `render(graph, path)` (any format,
HTML included), live in `visualize_html.py`, above this module.  Imports the
standard library, `numpy` (lazily), `operation` and `device_spec`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Optional

import numpy as np

from .device_spec import short_name
from eager.tensor_spec import short_type
from .operation import attr_subgraphs

MISSING_DOT = ("Graphviz 'dot' not found: install it with apt-get install graphviz / brew install graphviz "
               "(or write a .dot/.html file, which needs no Graphviz)")
_FORMATS = ("svg", "png", "pdf")


class GraphvizNotFoundError(RuntimeError):
    """The Graphviz `dot` program is not installed (the message says how to install it)."""


def dot_available() -> bool:
    return shutil.which("dot") is not None


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _node_style(op) -> str:
    if op.type == "Placeholder":
        return 'shape=ellipse, style=filled, fillcolor="#dbeafe"'
    if op.type == "Const":
        return 'shape=box, style="rounded,filled", fillcolor="#f3f4f6", fontcolor="#374151"'
    if op.opdef.stateful:
        return 'shape=box, style=filled, fillcolor="#fde2e2"'
    if attr_subgraphs(op.attrs):
        return 'shape=box3d, style=filled, fillcolor="#fef3c7"'
    return "shape=box"


def _const_text(op) -> str:
    v = op.attrs.get("value")
    try:
        a = np.asarray(v)
        if a.size <= 4:
            return np.array2string(a, separator=",", precision=4).replace("\n", "")
    except Exception:  # noqa: BLE001 - labels are best effort
        pass
    return ""


def to_dot(graph, title: Optional[str] = None, highlight: frozenset = frozenset()) -> str:
    """Graphviz text for `graph` with nested bodies as clusters (see module docstring).

    `highlight`: op names (top level) drawn with a thick outline (e.g. changed by a pass).
    """
    lines = ["digraph G {", "  compound=true; rankdir=TB;",
             '  node [fontname="Helvetica", fontsize=10]; edge [fontname="Helvetica", fontsize=8];']
    if title:
        lines.append(f"  labelloc=t; label={_q(title)}; fontname=\"Helvetica\";")
    counter = [0]
    _emit_graph(graph, "", lines, "  ", counter, highlight)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _emit_graph(graph, prefix: str, lines: list, indent: str, counter: list, highlight=frozenset()) -> None:
    """Append the nodes and edges of `graph` and its nested bodies (an explicit work list, no recursion)."""
    work = [("graph", graph, prefix, indent, highlight)]
    while work:
        item = work.pop()
        if item[0] == "close":
            lines.append(item[1] + "}")
            continue
        if item[0] == "edge":
            lines.append(item[1])
            continue
        _, g, pre, ind, hl = item
        later = []
        for op in g.get_operations():
            nid = pre + op.name
            label = f"{_label(op.name)}\\n{_label(op.type)}"
            if op.type == "Const":
                text = _const_text(op)
                if text:
                    label += "\\n" + _label(text)
            elif op.type != "Placeholder" and op.outputs:
                label += "\\n" + ", ".join(short_type(o.dtype, o.shape) for o in op.outputs[:3])
            if op.device:
                label += "\\n@" + _label(short_name(op.device))
            extra = ", penwidth=3, color=\"#2563eb\"" if op.name in hl else ""
            lines.append(f"{ind}{_q(nid)} [label=\"{label}\", {_node_style(op)}{extra}];")
            for t in op.inputs:
                lines.append(f"{ind}{_q(pre + t.op.name)} -> {_q(nid)} [label=\"{short_type(t.dtype, t.shape)}\"];")
            for c in op.control_inputs:
                lines.append(f"{ind}{_q(pre + c.name)} -> {_q(nid)} [style=dashed, color=\"#9ca3af\"];")
            for attr_name, body in attr_subgraphs(op.attrs):
                counter[0] += 1
                cid = f"cluster_{counter[0]}"
                bpre = f"{pre}{op.name}/{attr_name}/"
                later.append(("open", cid, bpre, ind, body, attr_name, nid))
        # bodies after this level's ops; pushed reversed so they come out in order
        for _, cid, bpre, ind2, body, attr_name, nid in reversed(later):
            first = body.get_operations()[0].name if body.get_operations() else None
            if first is not None:
                work.append(("edge", f"{ind2}{_q(nid)} -> {_q(bpre + first)} [lhead={cid}, style=dotted, "
                                     f"arrowhead=odot, label={_q(attr_name)}];"))
            work.append(("close", ind2))
            work.append(("graph", body, bpre, ind2 + "  ", frozenset()))
            work.append(("edge", f"{ind2}subgraph {cid} {{ label={_q(nid.split('/')[-1] + ': ' + attr_name)}; "
                                 f"style=\"rounded,filled\"; fillcolor=\"#fffbeb\"; color=\"#d97706\";"))
            if not body.get_operations():
                work.append(("edge", f"{ind2}  {_q(bpre + '<empty>')} [label=\"(empty)\", shape=plaintext];"))


def _run_dot(dot_text: str, fmt: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(MISSING_DOT)
    proc = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode("utf-8"), capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"Graphviz dot failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[:500]}")
    return proc.stdout


def to_svg(graph, title: Optional[str] = None) -> str:
    """SVG text of the picture (needs Graphviz `dot`; GraphvizNotFoundError otherwise)."""
    return _run_dot(to_dot(graph, title), "svg").decode("utf-8")
