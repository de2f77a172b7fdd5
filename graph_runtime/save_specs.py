"""Save specs: what a control-flow op saves for its gradient, and what the readers of its saved values request.

The format (graph_runtime/residuals.py): a tuple with one entry per body that can save, each a tuple of
`(tensor name, sub)` pairs sorted by name.  `merge` unions specs, `requests_of` collects what the readers of
a variant tensor request (their `OpDef.extra["requests"]` hooks, and readers inside the bodies an op passes
the variant into), `within` says whether one spec saves nothing another does not.  Used by the pipeline's
`residuals` stage and by the `unused_outputs` pass (which lets a forward op save less once its gradient
computes less), so they sit below both.

Imports nothing of graphjit.
"""
from __future__ import annotations


def merge(specs) -> tuple:
    """The union of save specs (None entries ignored); `()` when nothing is requested."""
    bodies: list = []
    for spec in specs:
        if not spec:
            continue
        for b, entries in enumerate(spec):
            while len(bodies) <= b:
                bodies.append({})
            for name, sub in entries:
                have = bodies[b].get(name, None)
                bodies[b][name] = merge((have, sub)) if (have or sub) else None
    if not any(bodies):
        return ()
    return tuple(tuple(sorted(d.items())) for d in bodies)


def body_saves(spec, b: int) -> tuple:
    """The `(name, sub)` entries of body `b` in save spec `spec` (possibly empty)."""
    return spec[b] if spec and b < len(spec) else ()


def consumers(graph) -> dict:
    """id(tensor) -> [(op, input index)] for every data input in `graph`."""
    out: dict = {}
    for op in graph._ops:
        for k, t in enumerate(op._inputs):
            out.setdefault(id(t), []).append((op, k))
    return out


def requests_of(t, uses=None, needed=None) -> tuple:
    """The save spec that the readers of variant tensor `t` request (a forward op's variant output, or a
    placeholder standing for one in a body).  `uses`: `consumers(t.graph)` if already computed;
    `needed`: ids of the ops that count (None: all)."""
    uses = consumers(t._op._graph) if uses is None else uses
    found = []
    for op, k in uses.get(id(t), ()):
        if needed is not None and id(op) not in needed:
            continue
        hook = op._opdef.extra.get("requests")
        if hook is not None:
            found.append(hook(op, k))
        bodies = op._opdef.extra.get("input_bodies")
        if bodies is not None:
            found.extend(requests_of(ph) for ph in bodies(op, k))
    return merge(found)


def within(spec, other) -> bool:
    """Whether every entry of save spec `spec` is an entry of `other` (so `spec` saves nothing more)."""
    if len(spec) > len(other):
        return False
    return all(set(entries) <= set(other[b]) for b, entries in enumerate(spec))
