"""Graph drawings as inline SVG, laid out in Python (no Graphviz): the picture of the HTML page.

`svg_drawing(graph, uid, expand=None)` returns an HTML fragment: one framed
panel per *group* (the graph, each name scope, each cond/while/case body),
each holding an `<svg>` drawing of the group's items:

- the ops created directly in the group, coloured by kind (input, constant,
  variable read, write/stateful, control flow with bodies, pure compute) and,
  when ops carry devices, outlined by device (with a legend);
- each child name scope as one box (`scope (n ops)`): clicking it opens or
  closes the scope's own panel (framed, titled with the scope name);
- sources outside the group as small dashed stubs;
- data edges (tooltip: dtype and shape), dashed control edges.

Clicking an op shows its name, type, device, inputs, outputs, attrs and the
user's source line (file, line, text; the text only for locations this process
recorded, never for an imported GraphDef's, which could name any local file) in the info box; clicking an op with
bodies also opens its body panels.  `page.html#op=NAME` opens the panels
holding op NAME and shows its details (a link to an op).  Scopes and bodies start open when the
whole graph has at most `EXPAND_LIMIT` ops, closed otherwise, so a 500-op
graph first shows a handful of scope boxes.  Every op is in the page (closed
panels are hidden, not omitted).

Layout: `grandalf`'s Sugiyama layered layout (optional extra `viz`) with
routed edges; without grandalf, a longest-path layering (rank = longest path
from a source, creation order within a rank) with straight edges, and the
page says so.  All text from the graph (names, types, attrs, file names) is
HTML-escaped; the per-op details are JSON in a `<script type=
"application/json">` block with `<`, `>`, `&` escaped, read by the page's
script with `textContent` (never `innerHTML`).  `PAGE_SCRIPT` and `PAGE_CSS`
are the page-wide parts (visualize_html.py adds them once).

Imports the standard library, `grandalf` (lazily, optional) and sibling modules.
"""
from __future__ import annotations

import html
import json
import linecache

from eager.tensor_spec import short_type
from .operation import attr_subgraphs
from .printing import format_attr

EXPAND_LIMIT = 80          # graphs with at most this many ops (all bodies) start fully open
GRANDALF_MAX_ITEMS = 400   # larger groups use the simple layering (grandalf is pure Python)
_CHAR_W, _NODE_H, _GAP = 7.0, 36, 24
_KIND_FILL = {"input": "#dbeafe", "const": "#f3f4f6", "read": "#fef9c3", "write": "#fde2e2",
              "control": "#fed7aa", "op": "#ecfdf5", "scope": "#e0e7ff", "ext": "#ffffff"}
_DEVICE_STROKES = ("#2563eb", "#dc2626", "#059669", "#7c3aed", "#d97706", "#0891b2")

PAGE_CSS = """
.gj-panel{border:1px solid #c7d2fe;border-radius:6px;margin:.5em 0;padding:.3em .5em;background:#fcfcff}
.gj-panel>.gj-title{font-size:.85em;color:#3730a3;font-weight:600}
.gj-scroll{overflow:auto;max-height:80vh} .gj-svg text{font-family:Menlo,Consolas,monospace;font-size:11px}
.gj-svg .gj-node{cursor:pointer} .gj-svg .gj-node:hover rect{stroke-width:2.5}
#gj-info{position:fixed;right:1em;top:1em;width:26em;max-height:80vh;overflow:auto;background:#fff;
border:1px solid #94a3b8;border-radius:6px;padding:.5em;font-size:.8em;box-shadow:0 2px 8px #0002}
#gj-info pre{white-space:pre-wrap;margin:0} .gj-legend span{display:inline-block;padding:0 .5em;margin-right:.3em;
border:1px solid #999;border-radius:3px;font-size:.8em}
"""

PAGE_SCRIPT = """
(function(){
  function show(el){
    var d=document.getElementById(el.getAttribute('data-gj-data'));
    if(!d) return;
    var all=JSON.parse(d.textContent), info=all[el.getAttribute('data-gj-i')];
    var box=document.getElementById('gj-info');
    if(!box){box=document.createElement('div');box.id='gj-info';document.body.appendChild(box);}
    box.hidden=false; box.textContent='';
    var close=document.createElement('button'); close.textContent='close';
    close.onclick=function(){box.hidden=true;}; box.appendChild(close);
    var pre=document.createElement('pre'); pre.textContent=info; box.appendChild(pre);
  }
  function showHash(){   // page.html#op=NAME opens the panels holding op NAME and shows its details
    var h=location.hash; if(h.indexOf('#op=')!==0) return;
    var name=decodeURIComponent(h.slice(4)), els=document.querySelectorAll('[data-op]');
    for(var k=0;k<els.length;k++){ if(els[k].getAttribute('data-op')!==name) continue;
      for(var p=els[k].parentNode;p;p=p.parentNode){ if(p.hidden) p.hidden=false; }
      show(els[k]); els[k].scrollIntoView({block:'nearest'}); return; }
  }
  window.addEventListener('hashchange',showHash); document.addEventListener('DOMContentLoaded',showHash);
  document.addEventListener('click',function(ev){
    var el=ev.target.closest ? ev.target.closest('[data-gj-i],[data-gj-open]') : null;
    if(!el) return;
    if(el.hasAttribute('data-gj-i')) show(el);
    var ids=(el.getAttribute('data-gj-open')||'').split(' ');
    for(var k=0;k<ids.length;k++){var p=ids[k]&&document.getElementById(ids[k]); if(p) p.hidden=!p.hidden;}
  });
})();
"""


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _json_for_script(obj) -> str:
    return json.dumps(obj).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _kind(op) -> str:
    eff = op.opdef.effect
    if attr_subgraphs(op.attrs):
        return "control"
    if eff == "input" or op.type == "Placeholder":
        return "input"
    if op.type == "Const":
        return "const"
    return {"read": "read", "write": "write"}.get(eff, "op")


def _count_ops(graph) -> int:
    return sum(1 + sum(_count_ops(b) for _, b in attr_subgraphs(op.attrs)) for op in graph.get_operations())


def _details(op) -> str:
    lines = [f"{op.name}  ({op.type})"]
    if op.device:
        lines.append(f"device: {op.device}")
    ins = [t.name for t in op.inputs] + ["^" + c.name for c in op.control_inputs]
    lines.append("inputs: " + (", ".join(ins) or "none"))
    lines.append("outputs: " + (", ".join(f"{o.name} {short_type(o.dtype, o.shape)}" for o in op.outputs)
                                or "none"))
    for k, v in sorted(op.attrs.items()):
        s = format_attr(v)
        lines.append(f"  {k} = {s if len(s) <= 300 else s[:297] + '...'}")
    loc = op.location
    if loc is not None:
        lines.append(f"source: {loc.filename}:{loc.lineno} in {loc.function}")
        # an imported location is data: it could name any local file, whose lines must not end up in the page
        text = linecache.getline(loc.filename, loc.lineno).strip() if loc.recorded_here else ""
        if text:
            lines.append(f"    {text}")
    return "\n".join(lines)


class _Drawing:
    """State for one drawing: panel ids, op details, device colours."""

    def __init__(self, graph, uid: str, expand: bool):
        self.uid, self.expand = uid, expand
        self.details: dict = {}
        self.panels = 0
        self.devices: dict = {}
        self.layout_note = ""

    def new_panel_id(self) -> str:
        self.panels += 1
        return f"{self.uid}-p{self.panels}"

    def device_color(self, device: str) -> str:
        if not device:
            return "#475569"
        if device not in self.devices:
            self.devices[device] = _DEVICE_STROKES[len(self.devices) % len(_DEVICE_STROKES)]
        return self.devices[device]


def _scope_of(op) -> tuple:
    return tuple(op.name.split("/")[:-1])


def _panel(d: _Drawing, ops: list, path: tuple, title: str, panel_id: str, hidden: bool) -> str:
    """One framed panel: the items of the group at `path` among `ops`, then the child panels."""
    depth = len(path)
    items: dict = {}          # key -> {"label", "sub", "kind", "op", ...}
    item_of: dict = {}        # id(op) -> key
    children: dict = {}       # scope name -> list of ops
    for op in ops:
        sc = _scope_of(op)
        if sc[:depth] != path:
            continue
        if len(sc) == depth:
            key = ("op", id(op))
            items[key] = {"label": op.name.split("/")[-1], "sub": op.type, "kind": _kind(op), "op": op,
                          "full": op.name}
        else:
            name = sc[depth]
            children.setdefault(name, []).append(op)
            key = ("scope", name)
        item_of[id(op)] = key
    child_ids = {name: d.new_panel_id() for name in children}
    for name, members in children.items():
        items[("scope", name)] = {"label": name + "/", "sub": f"{len(members)} ops", "kind": "scope",
                                  "open": child_ids[name], "full": "/".join(path + (name,)) + "/"}
    edges: dict = {}
    for op in ops:
        dst = item_of.get(id(op))
        if dst is None:
            continue
        srcs = [(t.op, short_type(t.dtype, t.shape), False) for t in op.inputs] + \
               [(c, "control", True) for c in op.control_inputs]
        for sop, label, ctrl in srcs:
            src = item_of.get(id(sop))
            if src is None:
                src = ("ext", sop.name)
                items.setdefault(src, {"label": sop.name, "sub": "", "kind": "ext", "full": sop.name})
            if src == dst:
                continue
            e = edges.setdefault((src, dst), {"labels": [], "ctrl": True})
            e["labels"].append(label)
            e["ctrl"] = e["ctrl"] and ctrl
    body_panels = []
    for key, it in items.items():
        op = it.get("op")
        if op is None:
            continue
        bodies = attr_subgraphs(op.attrs)
        ids = []
        for attr, body in bodies:
            pid = d.new_panel_id()
            ids.append(pid)
            body_panels.append(_panel(d, list(body.get_operations()), (), f"{op.name} · {attr} (body)", pid,
                                      not d.expand))
        if ids:
            it["open"] = " ".join(ids)
    svg = _svg(d, items, edges)
    sub = [_panel(d, children[name], path + (name,), "/".join(path + (name,)) + "/", child_ids[name],
                  not d.expand) for name in children]
    return (f'<div class="gj-panel" id="{panel_id}"{" hidden" if hidden else ""}>'
            f'<div class="gj-title">{_e(title)}</div><div class="gj-scroll">{svg}</div>'
            + "".join(sub) + "".join(body_panels) + "</div>")


def _layout(items: dict, edges: dict) -> tuple:
    """{key: (x, y, w, h)} (x, y: top-left) and {edge key: [points]}, with grandalf when available."""
    sizes = {k: (max(60.0, _CHAR_W * max(len(it["label"]), len(it["sub"])) + 16), float(_NODE_H))
             for k, it in items.items()}
    if len(items) <= GRANDALF_MAX_ITEMS:
        try:
            return _grandalf_layout(sizes, edges), True
        except ImportError:
            pass
    return _simple_layout(sizes, edges), False


def _grandalf_layout(sizes: dict, edges: dict):
    # grandalf is the optional [viz] extra: imported only when a page is drawn with it
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout
    from grandalf.routing import route_with_lines

    class _View:
        def __init__(self, w, h):
            self.w, self.h, self.xy = w, h, (0.0, 0.0)

    class _EdgeView:
        pts = None

        def setpath(self, pts):
            self.pts = pts

    verts = {k: Vertex(k) for k in sizes}
    for k, v in verts.items():
        v.view = _View(*sizes[k])
    gedges = {}
    for (s, t) in edges:
        e = Edge(verts[s], verts[t])
        e.view = _EdgeView()
        gedges[(s, t)] = e
    g = Graph(list(verts.values()), list(gedges.values()))
    boxes, offset = {}, 0.0
    for comp in g.C:
        sug = SugiyamaLayout(comp)
        sug.route_edge = route_with_lines
        sug.xspace, sug.yspace = _GAP, _GAP * 1.5
        sug.init_all()
        sug.draw(2)
        xs = [v.view.xy[0] - v.view.w / 2 for v in comp.sV]
        shift = offset - min(xs)
        for v in comp.sV:
            x, y = v.view.xy
            boxes[v.data] = (x - v.view.w / 2 + shift, y - v.view.h / 2, v.view.w, v.view.h)
        offset = max(b[0] + b[2] for k, b in boxes.items()) + _GAP * 2
        for e in comp.sE:
            if e.view.pts:
                e.view.pts = [(px + shift, py) for px, py in e.view.pts]
    routes = {k: e.view.pts for k, e in gedges.items() if e.view.pts}
    return boxes, routes


def _simple_layout(sizes: dict, edges: dict):
    preds: dict = {k: [] for k in sizes}
    for s, t in edges:
        preds[t].append(s)
    rank: dict = {}
    for k in sizes:                      # items are in creation order: sources come first
        rank[k] = 1 + max((rank.get(p, 0) for p in preds[k]), default=-1)
    x_at: dict = {}
    boxes = {}
    for k, (w, h) in sizes.items():
        r = rank[k]
        x = x_at.get(r, 0.0)
        boxes[k] = (x, r * (h + _GAP * 1.5), w, h)
        x_at[r] = x + w + _GAP
    return boxes, {}


def _svg(d: _Drawing, items: dict, edges: dict) -> str:
    (boxes, routes), routed = _layout(items, edges)
    if not routed and len(items) > 1:
        d.layout_note = ("Simple layered layout (install the optional extra graphjit[viz] - grandalf - for "
                         "fewer edge crossings).")
    if not boxes:
        return '<p class="note">(empty)</p>'
    minx = min(b[0] for b in boxes.values()) - 10
    miny = min(b[1] for b in boxes.values()) - 10
    width = max(b[0] + b[2] for b in boxes.values()) - minx + 10
    height = max(b[1] + b[3] for b in boxes.values()) - miny + 10
    mk = f"{d.uid}-arrow"
    out = [f'<svg class="gj-svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="{minx:.1f} {miny:.1f} {width:.1f} {height:.1f}"><defs><marker id="{mk}" viewBox="0 0 10 10" '
           f'refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 '
           f'L 0 10 z" fill="#64748b"/></marker></defs>']
    for (s, t), e in edges.items():
        pts = routes.get((s, t))
        if not pts:
            sx, sy, sw, sh = boxes[s]
            tx, ty, tw, th = boxes[t]
            pts = [(sx + sw / 2, sy + sh), (tx + tw / 2, ty)]
        path = "M " + " L ".join(f"{x:.1f} {y:.1f}" for x, y in pts)
        dash = ' stroke-dasharray="4 3"' if e["ctrl"] else ""
        tip = ", ".join(dict.fromkeys(e["labels"]))
        out.append(f'<path class="gj-edge" data-src="{_e(items[s]["full"])}" data-dst="{_e(items[t]["full"])}" '
                   f'd="{path}" fill="none" stroke="#64748b"{dash} marker-end="url(#{mk})"><title>{_e(tip)}</title>'
                   f'</path>')
    for k, it in items.items():
        x, y, w, h = boxes[k]
        op = it.get("op")
        attrs = ""
        stroke, sw = "#475569", 1
        if op is not None:
            i = str(len(d.details))
            d.details[i] = _details(op)
            attrs = f' data-gj-i="{i}" data-gj-data="{d.uid}-data" data-op="{_e(op.name)}"'
            if op.device:
                stroke, sw = d.device_color(op.device), 2
        if it.get("open"):
            attrs += f' data-gj-open="{it["open"]}"'
        dash = ' stroke-dasharray="3 2"' if it["kind"] == "ext" else ""
        rx = 12 if it["kind"] == "input" else 4
        extra = (f'<rect x="{x + 3:.1f}" y="{y + 3:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx}" '
                 f'fill="{_KIND_FILL["scope"]}" stroke="{stroke}"/>') if it["kind"] == "scope" else ""
        out.append(f'<g class="gj-node gj-{it["kind"]}"{attrs}>{extra}<rect x="{x:.1f}" y="{y:.1f}" '
                   f'width="{w:.1f}" height="{h:.1f}" rx="{rx}" fill="{_KIND_FILL[it["kind"]]}" stroke="{stroke}" '
                   f'stroke-width="{sw}"{dash}/><text x="{x + w / 2:.1f}" y="{y + 15:.1f}" text-anchor="middle">'
                   f'{_e(it["label"])}</text><text x="{x + w / 2:.1f}" y="{y + 29:.1f}" text-anchor="middle" '
                   f'fill="#6b7280">{_e(it["sub"])}</text><title>{_e(it["label"])}</title></g>')
    out.append("</svg>")
    return "".join(out)


def svg_drawing(graph, uid: str, expand=None) -> str:
    """The drawing of `graph` (framed panels of inline SVG, see module docstring) as an HTML fragment."""
    expand = _count_ops(graph) <= EXPAND_LIMIT if expand is None else bool(expand)
    d = _Drawing(graph, uid, expand)
    body = _panel(d, list(graph.get_operations()), (), getattr(graph, "name", "") or "graph", f"{uid}-p0", False)
    legend = "".join(f'<span style="background:{c}">{_e(k)}</span>' for k, c in _KIND_FILL.items() if k != "ext")
    legend += "".join(f'<span style="border:2px solid {c}">{_e(dev)}</span>' for dev, c in d.devices.items())
    hint = ("Click an op for its attrs, shapes and source line; click a scope box or a control-flow op to open "
            "or close it." + ("" if expand else " Scopes and bodies start closed (large graph)."))
    note = f'<p class="note">{_e(d.layout_note)}</p>' if d.layout_note else ""
    return (f'<div class="gj-legend">{legend}</div><p class="note">{_e(hint)}</p>{note}{body}'
            f'<script type="application/json" id="{uid}-data">{_json_for_script(d.details)}</script>')
