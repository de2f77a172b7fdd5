"""A self-contained HTML page for a graph or a traced function (no external resources).

`to_html(obj, title=None, optimizer=True)` accepts a `Graph`, a concrete
function (anything with `.graph`, `.inputs`, `.outputs`, e.g.
`tracing.ConcreteFunction`), or a list of them.  Each gets a section with:

- op counts by type;
- the picture: inline SVG laid out in Python (visualize_svg.py: framed name
  scopes and bodies that open on click, op details on click), always, with no
  Graphviz needed; with `graphviz=True` and `dot` installed, Graphviz's SVG
  instead (without `dot`, a note and the Python drawing);
- the table of ops (name, type, inputs, output types, attrs; bodies as nested
  collapsible tables), closed;
- the text listing (`str(graph)`);
- for a concrete function, the optimizer: the report of the pipeline the
  executor runs (nodes before/after, changes and time per pass) and, pass by
  pass over one sweep of the pipeline, a diff of the listing each pass
  changed, then the optimized graph.

`write_html(obj, path, ...)` writes the page; `render(graph, path,
format=None)` writes a picture in any format (`.svg`/`.png`/`.pdf` through
Graphviz, `.dot`/`.gv` text, `.html` this page).  Imports the standard library,
`graph_runtime.passes` and sibling modules (`visualize`, `visualize_svg`,
`printing`, `operation`, `op_traits`).
"""
from __future__ import annotations

import collections
import difflib
import html
import os
from typing import Optional

from .op_traits import run_targets
from eager.tensor_spec import short_type
from .operation import attr_subgraphs
from .printing import format_attr
from .passes import optimize, resolve_pipeline, run_pass
from .visualize import _FORMATS, GraphvizNotFoundError, dot_available, to_dot, _run_dot
from .visualize_svg import PAGE_CSS, PAGE_SCRIPT, svg_drawing

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#111;max-width:1200px}
h1{font-size:1.5em} h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0} td,th{border:1px solid #ddd;padding:2px 6px;
text-align:left;vertical-align:top} th{background:#f3f4f6} code,pre{font-family:Menlo,Consolas,monospace;
font-size:.85em} pre{background:#f8f8f8;padding:.6em;overflow-x:auto} .stateful{background:#fde2e2}
.add{background:#e6ffed} .del{background:#ffeef0} .hunk{color:#6b7280} .note{color:#6b7280;font-size:.9em}
details{margin:.4em 0} summary{cursor:pointer} .svg svg{max-width:100%;height:auto}
"""


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _targets(graph) -> list:
    return run_targets(graph, getattr(graph, "lifted_ops", ()))


def _op_counts(graph) -> str:
    counts = collections.Counter()
    work = [graph]
    while work:
        g = work.pop()
        for op in g.get_operations():
            counts[op.type] += 1
            work.extend(b for _, b in attr_subgraphs(op.attrs))
    cells = "".join(f"<tr><td><code>{_e(k)}</code></td><td>{v}</td></tr>" for k, v in counts.most_common())
    return f"<table><tr><th>op type</th><th>count (all bodies)</th></tr>{cells}</table>"


def _op_table(graph) -> str:
    """Ops as rows; nested bodies as collapsible nested tables (explicit stack, outer first)."""
    rows = []
    for op in graph.get_operations():
        ins = ", ".join(t.name for t in op.inputs) + "".join(f", ^{c.name}" for c in op.control_inputs)
        outs = ", ".join(short_type(o.dtype, o.shape) for o in op.outputs)
        attrs = ", ".join(f"{k}={format_attr(v)}" for k, v in sorted(op.attrs.items()))
        bodies = "".join(f"<details><summary>{_e(name)} body ({len(b.get_operations())} ops)</summary>"
                         f"{_op_table(b)}</details>" for name, b in attr_subgraphs(op.attrs))
        cls = ' class="stateful"' if op.opdef.stateful else ""
        rows.append(f"<tr{cls}><td><code>{_e(op.name)}</code></td><td>{_e(op.type)}</td><td><code>{_e(ins)}"
                    f"</code></td><td><code>{_e(outs)}</code></td><td><code>{_e(attrs)}</code>{bodies}</td></tr>")
    return ("<table><tr><th>name</th><th>type</th><th>inputs</th><th>outputs</th><th>attrs / bodies</th></tr>"
            + "".join(rows) + "</table>")


class _Page:
    """Per-page options and the counter that keeps drawing ids unique."""

    def __init__(self, graphviz: bool):
        self.graphviz, self.drawings = graphviz, 0

    def uid(self) -> str:
        self.drawings += 1
        return f"gj{self.drawings}"


def _picture(graph, title: str, page: "_Page") -> str:
    note = ""
    if page.graphviz:
        if dot_available():
            try:
                svg = _run_dot(to_dot(graph, title), "svg").decode("utf-8")
                return f'<div class="svg">{svg[svg.find("<svg"):]}</div>'
            except (GraphvizNotFoundError, RuntimeError, OSError) as e:
                note = f'<p class="note">Graphviz failed ({_e(e)}); showing graphjit\'s own drawing.</p>'
        else:
            note = ('<p class="note">Graphviz \'dot\' not found (apt-get install graphviz / brew install '
                    'graphviz); showing graphjit\'s own drawing.</p>')
    table = f"<details><summary>table of ops</summary>{_op_table(graph)}</details>"
    return note + svg_drawing(graph, page.uid()) + table


def _listing(graph, summary: str = "text listing") -> str:
    return f"<details><summary>{_e(summary)}</summary><pre>{_e(str(graph))}</pre></details>"


def _diff(before: str, after: str) -> str:
    out = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=1):
        if line.startswith(("---", "+++")):
            continue
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else \
            "hunk" if line.startswith("@@") else ""
        out.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    return "<pre>" + "\n".join(out) + "</pre>" if out else '<p class="note">(listing unchanged)</p>'


def _optimizer_section(cf, page) -> str:
    graph = cf.graph
    fetches = [t.name for t in cf.inputs] + [t.name for t in cf.outputs] + [o.name for o in _targets(graph)]
    try:
        optimized, report = optimize(graph, fetches, keep_stateful=True)
    except Exception as e:  # noqa: BLE001 - a page must still render
        return f'<p class="note">The optimizer failed on this graph: {_e(type(e).__name__)}: {_e(e)}</p>'
    parts = [f"<p>The executor's pipeline: {report.nodes_before} &rarr; {report.nodes_after} nodes in "
             f"{report.iterations} iteration(s), {report.seconds * 1e3:.2f} ms.</p>",
             "<table><tr><th>pass</th><th>iteration</th><th>nodes before</th><th>nodes after</th>"
             "<th>changes</th><th>ms</th><th>details</th></tr>"]
    for st in report.passes:
        det = ", ".join(f"{k}: {v}" for k, v in sorted(st.details.items()))
        parts.append(f"<tr><td>{_e(st.name)}</td><td>{st.iteration}</td><td>{st.nodes_before}</td>"
                     f"<td>{st.nodes_after}</td><td>{st.changes}</td><td>{st.seconds * 1e3:.2f}</td>"
                     f"<td>{_e(det)}</td></tr>")
    parts.append("</table><h3>Pass by pass (one sweep of the pipeline)</h3>")
    g = graph
    for p in resolve_pipeline():
        try:
            g2, st = run_pass(p, g, fetches, verify=False, keep_stateful=True)
        except Exception as e:  # noqa: BLE001
            parts.append(f'<p class="note">{_e(p.name)} failed: {_e(e)}</p>')
            break
        before, after = str(g), str(g2)
        if before != after:
            parts.append(f"<details open><summary><b>{_e(p.name)}</b>: {st.nodes_before} &rarr; {st.nodes_after}"
                         f" nodes, {st.changes} change(s)</summary>{_diff(before, after)}</details>")
        else:
            parts.append(f'<p class="note">{_e(p.name)}: no change</p>')
        g = g2
    parts.append("<h3>Optimized graph</h3>" + _picture(optimized, "optimized", page) + _listing(optimized))
    return "".join(parts)


def _section(obj, index: int, page) -> str:
    is_fn = hasattr(obj, "graph") and hasattr(obj, "outputs") and not hasattr(obj, "_create_op")
    graph = obj.graph if is_fn else obj
    if is_fn:
        sig = obj.pretty_printed_signature(verbose=False) if hasattr(obj, "pretty_printed_signature") else \
            f"function {index}"
        head = f"<h2>{_e(sig)}</h2>"
        io = (f"<p>inputs: <code>{_e(', '.join(t.name for t in obj.inputs))}</code> &mdash; outputs: "
              f"<code>{_e(', '.join(t.name for t in obj.outputs))}</code></p>")
    else:
        head = f"<h2>{_e(getattr(graph, 'name', '') or f'graph {index}')}</h2>"
        io = ""
    body = [head, io, f"<p>{len(graph.get_operations())} ops at top level.</p>", _op_counts(graph),
            "<h3>Traced graph</h3>", _picture(graph, "traced", page), _listing(graph)]
    if is_fn:
        body += ["<h3>Optimizer</h3>", _optimizer_section(obj, page)]
    return "<section>" + "".join(body) + "</section>"


def to_html(obj, title: Optional[str] = None, optimizer: bool = True, graphviz: bool = False) -> str:
    """The page as a string (see module docstring)."""
    page = _Page(graphviz)
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    if not optimizer:
        items = [getattr(x, "graph", x) if not hasattr(x, "_create_op") else x for x in items]
    title = title or "graphjit graph"
    sections = "".join(_section(x, i, page) for i, x in enumerate(items))
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{_CSS}{PAGE_CSS}</style></head><body><h1>{_e(title)}</h1>{sections}"
            f"<p class=\"note\">Generated by graphjit. Stateful ops are shaded red; dashed edges are control "
            f"dependencies; control-flow ops (orange) open their bodies when clicked.</p>"
            f"<script>{PAGE_SCRIPT}</script></body></html>\n")


def write_html(obj, path: str, title: Optional[str] = None, optimizer: bool = True, graphviz: bool = False) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write(to_html(obj, title, optimizer, graphviz))
    return path


def render(graph, path: str, format: Optional[str] = None, title: Optional[str] = None) -> str:
    """Write a picture of `graph` to `path`; the format comes from `format` or the extension.

    `.svg`, `.png`, `.pdf` run Graphviz's `dot`; `.dot`/`.gv` write its text and
    `.html` this module's page, neither needing Graphviz.
    """
    ext = (format or os.path.splitext(path)[1].lstrip(".") or "svg").lower()
    text = to_dot(graph, title)
    if ext in ("dot", "gv"):
        data = text.encode("utf-8")
    elif ext in ("html", "htm"):
        data = to_html(graph, title=title).encode("utf-8")
    elif ext in _FORMATS:
        data = _run_dot(text, ext)
    else:
        raise ValueError(f"render: unknown picture format {ext!r}; use one of svg, png, pdf, dot, html")
    with open(path, "wb") as f:
        f.write(data)
    return path
