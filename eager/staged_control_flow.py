"""`cond`, `switch_case` and `while_loop` while a graph is being built: trace the callables, add one op.

`eager.control_flow` calls these when the current context is not eager.  Each
traces its callables into bodies of the current graph through the context
protocol (`Context.trace_body`, and `Context.trace_bodies` for a loop's cond
and body, which conflict over variables together), checks the structures
(`control_flow_structure`), gives the bodies the same captured inputs, and
dispatches one If / Case / While op (`Stateless*` when no body has side
effects) through the single dispatch point, like any other op:
`execute(opdef, inputs, attrs={bodies, Tout, output_shapes, ...})`.  The
ops are declared by the graph layer, whose kernels run body graphs; they are
looked up in the registry by name.

cond / switch_case:
1. check the selector (a bool scalar for cond, an integer scalar for
   switch_case: InvalidArgumentError naming what was given);
2. trace each callable into its own body (no arguments); outputs are
   flattened (constants converted inside the branch, outer tensors captured);
3. check the branches agree (`merge_branch_outputs`);
4. give every branch the same inputs: the union of all branches' captures, in
   first-capture order;
5. dispatch the If/Case op and pack its outputs into the first branch's
   structure.  Branches returning `None` everywhere give an op with no
   outputs (side effects only); `cond` then returns None.

while_loop: flatten `loop_vars` and the optional `shape_invariants`; trace
`cond` and `body` with the loop variables as their first inputs (shaped by
their invariants); check cond returns a bool scalar and the body's results
against the loop variables; unify captures; dispatch the While op with inputs
`loop vars, [maximum_iterations], captures`.

Imports `eager` siblings only.
"""
from __future__ import annotations

from . import context as _context
from . import nest
from .control_flow_structure import (as_invariant, check_invariant_fits_initial, check_loop_outputs, flatten,
                                     flatten_up_to, merge_branch_outputs, normalize_body_result)
from .convert import convert_to_tensor
from .dispatch import execute
from .errors import InvalidArgumentError
from .registry import lookup


def _control_flow_op(kind: str, stateful: bool):
    """The registered If/Case/While opdef (or its Stateless variant), declared by the graph layer."""
    name = kind if stateful else "Stateless" + kind
    opdef = lookup(name)
    if opdef is None:
        raise NotImplementedError(f"the {name} op is not registered: graph building needs graph_runtime's "
                                  f"functional control-flow ops")
    return opdef


def _selector(x, what: str, want: str):
    t = convert_to_tensor(x)
    ok = t.dtype.is_bool if want == "bool" else t.dtype.name in ("int32", "int64")
    rank = t.shape.rank
    if not ok or (rank is not None and rank != 0):
        raise InvalidArgumentError(f"{what} must be a {want} scalar, got a {t.dtype.name} tensor of shape "
                                   f"{t.shape}" + (" (reduce it to a scalar, e.g. with reduce_all)"
                                                   if ok else ""))
    return t


def stage_cond(graph, pred, true_fn, false_fn, name=None):
    """`cond` in graph `graph` (the current context): an If op."""
    pred = _selector(pred, "cond: pred", "bool")
    return _build(graph, "If", pred, [true_fn, false_fn], ["true_fn", "false_fn"], name or "cond", False)


def stage_case(graph, branch_index, branch_fns, default=None, name=None):
    """`switch_case` in graph `graph` (the current context): a Case op."""
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
            body = _context.current()
            out = fn()
            if out is None:
                box["flat"] = None
                return None
            flat = flatten(out, "output")
            flat.tensors = [body.capture(t) for t in flat.tensors]     # its own tensors pass through
            box["flat"] = flat
            return out

        body, _ = graph.trace_body(f"{name}_{label.replace(' ', '_')}", run, lambda b: ())
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
    stateful = any(b.has_effects() for b in bodies)
    attrs = {"Tout": tuple(d for d, _ in specs), "output_shapes": tuple(s for _, s in specs)}
    if kind == "If":
        opdef = _control_flow_op("If", stateful)
        attrs["then_branch"], attrs["else_branch"] = bodies
    else:
        opdef = _control_flow_op("Case", stateful)
        attrs["branches"] = tuple(bodies)
        attrs["has_default"] = has_default
    outs = execute(opdef, (selector, *caps), attrs, name)
    if first is None:
        return None
    return first.pack(list(outs[:len(specs)]))


def _structure(flat) -> str:
    return nest.structure_repr(flat.structure)



def _is_single(loop_vars) -> bool:
    return not isinstance(loop_vars, (list, tuple)) or (isinstance(loop_vars, tuple) and hasattr(loop_vars, "_fields"))


def _component_invariants(flat, leaf_invariants) -> list:
    out = []
    for (n, _), inv in zip(flat.rebuilders, leaf_invariants):
        out.extend([inv] if n == 1 else [None] * n)
    return out


def stage_while(graph, cond, body, loop_vars, shape_invariants=None, maximum_iterations=None, name=None):
    """`while_loop` in graph `graph` (the current context): a While op."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    name = name or "while"
    single = _is_single(loop_vars)
    flat_in = flatten(loop_vars, "loop_vars")
    n = len(flat_in.tensors)
    if shape_invariants is None:
        invariants = [None] * n
    else:
        leaves = flatten_up_to(loop_vars, shape_invariants, "shape_invariants")
        leaf_paths = [p for p, _ in _leaf_paths(loop_vars)]
        invariants = _component_invariants(flat_in, [as_invariant(x, p) for x, p in zip(leaves, leaf_paths)])
    for path, t, inv in zip(flat_in.paths, flat_in.tensors, invariants):
        if inv is not None:
            check_invariant_fits_initial(path, inv, t.shape)
    shapes = [inv if inv is not None else t.shape for t, inv in zip(flat_in.tensors, invariants)]
    max_iter = None
    if maximum_iterations is not None:
        max_iter = convert_to_tensor(maximum_iterations)
        if max_iter.dtype.name not in ("int32", "int64") or max_iter.shape.rank not in (0, None):
            raise InvalidArgumentError(f"while_loop: maximum_iterations must be an int32 or int64 scalar, got a "
                                       f"{max_iter.dtype.name} tensor of shape {max_iter.shape}")

    def make_args(b):
        phs = [b.add_input(t.dtype, s, "loop_var") for t, s in zip(flat_in.tensors, shapes)]
        packed = flat_in.pack(phs)
        return (packed,) if single else tuple(packed)

    def run_cond(*args):
        g = _context.current()
        out = cond(*args)
        t = convert_to_tensor(out)
        if not t.dtype.is_bool or t.shape.rank not in (0, None):
            raise InvalidArgumentError(f"while_loop: cond must return a bool scalar, got a {t.dtype.name} tensor "
                                       f"of shape {t.shape} (reduce it, e.g. with reduce_all / reduce_any)")
        g.outputs = [g.capture(t)]

    def run_body(*args):
        g = _context.current()
        vars_in = args[0] if single else list(args)
        out = body(*args)
        out = normalize_body_result(vars_in, out, single)
        flat_out = flatten(out, "loop_vars", like=flat_in.tensors)
        check_loop_outputs(flat_in, flat_out, g.inputs[:n], invariants)
        g.outputs = [g.capture(t) for t in flat_out.tensors]

    cond_g, body_g = graph.trace_bodies([(f"{name}_cond", run_cond, make_args),
                                            (f"{name}_body", run_body, make_args)])
    caps = unify_inputs([cond_g, body_g], n)
    stateful = cond_g.has_effects() or body_g.has_effects()
    attrs = {"cond": cond_g, "body": body_g, "num_vars": n, "has_max": max_iter is not None,
             "Tout": tuple(t.dtype for t in flat_in.tensors), "output_shapes": tuple(shapes)}
    inputs = list(flat_in.tensors) + ([max_iter] if max_iter is not None else []) + caps
    outs = execute(_control_flow_op("While", stateful), tuple(inputs), attrs, name)
    return flat_in.pack(list(outs[:n]))


def _leaf_paths(structure):
    out = []
    stack = [(structure, "loop_vars")]
    while stack:
        s, p = stack.pop()
        if nest.is_nested(s) and getattr(s, "_cf_flatten", None) is None:
            if isinstance(s, dict):
                stack.extend(reversed([(s[k], f"{p}[{k!r}]") for k in nest.sorted_keys(s)]))
            else:
                stack.extend(reversed([(v, f"{p}[{i}]") for i, v in enumerate(s)]))
        else:
            out.append((p, s))
    return out
