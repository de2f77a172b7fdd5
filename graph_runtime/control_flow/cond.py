"""Graph builders for `cond` (an If op) and `switch_case` (a Case op).

`build_cond(graph, pred, true_fn, false_fn, name)` and
`build_case(graph, branch_index, branch_fns, default, name)` are registered
with `graph_runtime.building.register_control_flow_builder`; `eager.cond` /
`eager.switch_case` call them when a graph is being built.  Steps:

1. check the selector (a bool scalar for cond, an integer scalar for
   switch_case: InvalidArgumentError naming what was given);
2. trace each callable into its own `BodyGraph` (no arguments); outputs are
   flattened (`structure.flatten`: constants converted inside the branch,
   outer tensors captured);
3. check the branches agree (`structure.merge_branch_outputs`);
4. give every branch the same inputs: the union of all branches' captures,
   in first-capture order (a branch gets an unused input for a capture only
   another branch uses);
5. add one If/Case op (Stateless* when no branch has side effects) and pack
   its outputs into the first branch's structure.

Branches returning `None` everywhere give an op with no outputs (side effects
only); `cond` then returns None.

Imports `eager` and siblings.
"""
from __future__ import annotations

from eager.convert import convert_to_tensor
from eager.dispatch import execute
from eager.errors import InvalidArgumentError

from .auto_deps import has_effects
from .body_graph import trace
from .ops import CASE, IF, STATELESS_CASE, STATELESS_IF
from .structure import flatten, merge_branch_outputs


def _selector(x, what: str, want: str):
    t = convert_to_tensor(x)
    ok = t.dtype.is_bool if want == "bool" else t.dtype.name in ("int32", "int64")
    rank = t.shape.rank
    if not ok or (rank is not None and rank != 0):
        raise InvalidArgumentError(f"{what} must be a {want} scalar, got a {t.dtype.name} tensor of shape "
                                   f"{t.shape}" + (" (reduce it to a scalar, e.g. with reduce_all)"
                                                   if ok else ""))
    return t


def build_cond(graph, pred, true_fn, false_fn, name=None):
    pred = _selector(pred, "cond: pred", "bool")
    return _build(graph, "If", pred, [true_fn, false_fn], ["true_fn", "false_fn"], name or "cond", False)


def build_case(graph, branch_index, branch_fns, default=None, name=None):
    index = _selector(branch_index, "switch_case: branch_index", "int32 or int64")
    fns = list(branch_fns) + ([default] if default is not None else [])
    labels = [f"branch {i}" for i in range(len(branch_fns))] + (["default"] if default is not None else [])
    return _build(graph, "Case", index, fns, labels, name or "switch_case", default is not None)


def unify_inputs(bodies, n_explicit: int) -> list:
    """Give every body the same captured inputs (the union, in order); returns the outer tensors."""
    caps: list = []
    for b in bodies:
        for c in b.captures:
            if not any(c is x for x in caps):
                caps.append(c)
    for b in bodies:
        phs = {id(c): ph for c, ph in zip(b.captures, b.inputs[n_explicit:])}
        explicit = b.inputs[:n_explicit]
        new = []
        for c in caps:
            ph = phs.get(id(c))
            if ph is None:
                ph = b.add_input(c.dtype, c.shape, "capture")   # appended to b.inputs; rebuilt below
            new.append(ph)
        b.inputs = explicit + new
        b.captures = list(caps)
    return caps


def _build(graph, kind, selector, fns, labels, name, has_default):
    bodies, flats = [], []
    for fn, label in zip(fns, labels):
        if not callable(fn):
            raise TypeError(f"{'cond' if kind == 'If' else 'switch_case'}: {label} must be a callable taking no "
                            f"arguments, got {type(fn).__name__}")
        box = {}

        def run(fn=fn, box=box):
            from eager import context as _context
            body = _context.current()
            out = fn()
            if out is None:
                box["flat"] = None
                return None
            flat = flatten(out, "output")
            flat.tensors = [body.capture(t) if getattr(t, "_op", None) is None or t._op._graph is not body
                            else t for t in flat.tensors]
            box["flat"] = flat
            return out

        body, _ = trace(f"{name}_{label.replace(' ', '_')}", graph, run, lambda b: ())
        bodies.append(body)
        flats.append(box["flat"])
    if all(f is None for f in flats):
        specs, first = [], None
        for b in bodies:
            b.outputs = []
    else:
        for f, label in zip(flats, labels):
            if f is None:
                other = next(x for x in flats if x is not None)
                raise ValueError(f"{label} returns None but another branch returns "
                                 f"{_structure(other)}: every branch must return the same structure")
        specs = merge_branch_outputs(flats, labels)
        for b, f in zip(bodies, flats):
            b.outputs = list(f.tensors)
        first = flats[0]
    caps = unify_inputs(bodies, 0)
    stateful = any(has_effects(b) for b in bodies)
    attrs = {"Tout": tuple(d for d, _ in specs), "output_shapes": tuple(s for _, s in specs)}
    if kind == "If":
        opdef = IF if stateful else STATELESS_IF
        attrs["then_branch"], attrs["else_branch"] = bodies
    else:
        opdef = CASE if stateful else STATELESS_CASE
        attrs["branches"] = tuple(bodies)
        attrs["has_default"] = has_default
    outs = execute(opdef, (selector, *caps), attrs, name)
    if first is None:
        return None
    return first.pack(list(outs[:len(specs)]))


def _structure(flat) -> str:
    from eager import nest
    return nest.structure_repr(flat.structure)
