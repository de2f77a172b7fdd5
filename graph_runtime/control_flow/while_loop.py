"""Graph builder for `while_loop` (a While op).

`build_while(graph, cond, body, loop_vars, shape_invariants,
maximum_iterations, name)` is registered with
`register_control_flow_builder("while", ...)`.  Steps:

1. flatten `loop_vars` (any nested structure; constants converted) and the
   optional `shape_invariants` (same structure, one shape per leaf; each must
   fit the initial value);
2. trace `cond` and `body` into `BodyGraph`s whose first inputs are the loop
   variables, shaped by their invariants (default: their initial shapes);
   as in `eager.while_loop`, a single non-sequence loop variable is passed as
   one argument, a list/tuple is unpacked, and a body with one loop variable
   may return it bare;
3. check cond returns a bool scalar, and the body's results against the loop
   variables (`structure.check_loop_outputs`: structure -> ValueError, dtype ->
   TypeError, shape outside its invariant -> ValueError naming the variable,
   both shapes and `shape_invariants` / `set_loop_options`);
4. unify cond's and body's captures; add one While op (StatelessWhile when
   neither has side effects) with inputs `loop vars, [maximum_iterations],
   captures`, and pack its outputs like `loop_vars`.

Imports `eager` and siblings.
"""
from __future__ import annotations

from eager.control_flow import normalize_body_result
from eager.convert import convert_to_tensor
from eager.dispatch import execute
from eager.errors import InvalidArgumentError

from .auto_deps import has_effects
from .body_graph import trace_together
from .cond import unify_inputs
from .ops import STATELESS_WHILE, WHILE
from .structure import (as_invariant, check_invariant_fits_initial, check_loop_outputs, flatten,
                        flatten_up_to)


def _is_single(loop_vars) -> bool:
    return not isinstance(loop_vars, (list, tuple)) or (isinstance(loop_vars, tuple) and hasattr(loop_vars, "_fields"))


def _component_invariants(flat, leaf_invariants) -> list:
    out = []
    for (n, _), inv in zip(flat.rebuilders, leaf_invariants):
        out.extend([inv] if n == 1 else [None] * n)
    return out


def build_while(graph, cond, body, loop_vars, shape_invariants=None, maximum_iterations=None, name=None):
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
        from eager import context as _context
        g = _context.current()
        out = cond(*args)
        t = convert_to_tensor(out)
        if not t.dtype.is_bool or t.shape.rank not in (0, None):
            raise InvalidArgumentError(f"while_loop: cond must return a bool scalar, got a {t.dtype.name} tensor "
                                       f"of shape {t.shape} (reduce it, e.g. with reduce_all / reduce_any)")
        g.outputs = [g.capture(t)]

    def run_body(*args):
        from eager import context as _context
        g = _context.current()
        vars_in = args[0] if single else list(args)
        out = body(*args)
        out = normalize_body_result(vars_in, out, single)
        flat_out = flatten(out, "loop_vars", like=flat_in.tensors)
        check_loop_outputs(flat_in, flat_out, g.inputs[:n], invariants)
        g.outputs = [g.capture(t) for t in flat_out.tensors]

    cond_g, body_g = trace_together(graph, [(f"{name}_cond", run_cond, make_args),
                                            (f"{name}_body", run_body, make_args)])
    caps = unify_inputs([cond_g, body_g], n)
    stateful = has_effects(cond_g) or has_effects(body_g)
    attrs = {"cond": cond_g, "body": body_g, "num_vars": n, "has_max": max_iter is not None,
             "Tout": tuple(t.dtype for t in flat_in.tensors), "output_shapes": tuple(shapes)}
    inputs = list(flat_in.tensors) + ([max_iter] if max_iter is not None else []) + caps
    outs = execute(WHILE if stateful else STATELESS_WHILE, tuple(inputs), attrs, name)
    return flat_in.pack(list(outs[:n]))


def _leaf_paths(structure):
    from eager import nest
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
