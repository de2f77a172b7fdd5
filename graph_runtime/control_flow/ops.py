"""The functional control-flow ops: If / StatelessIf, Case / StatelessCase, While / StatelessWhile.

Each op holds its bodies (`BodyGraph`s) in attrs and runs them through compiled
plans (`plans.body_plan`); the `Stateless*` variant is chosen when no body has
side effects, so optimizer passes may treat it like any pure op.

- `If(pred, *captures)`, attrs `then_branch`, `else_branch`, `Tout`,
  `output_shapes`.  Both branches take all captures as inputs.
- `Case(branch_index, *captures)`, attrs `branches` (a tuple; with a `default`
  it is the last one and `has_default` is True), `Tout`, `output_shapes`.
  An index out of range runs the last branch.
- `While(*loop_vars, [maximum_iterations,] *captures)`, attrs `cond`, `body`,
  `num_vars`, `has_max`, `Tout`, `output_shapes` (the shape invariants).
  Cond and body both take `loop vars + captures`.

Every op has one extra, last output of dtype `variant`: the body values its
gradient reads.  The user's ops save nothing; a plan that runs a gradient
runs a copy of the op with the attr `saves` (a save spec, made by the
pipeline's residuals stage: graph_runtime/residuals.py).  For a While the
variant is then `(iterations, [saved values per iteration], names)` (else
None), so memory grows with the iteration count only in plans that
differentiate the loop; for If/Case it is `(branch taken, saved values,
names)`.  The `input_bodies` hook tells the residuals stage which body
placeholders an input feeds (a variant passed into a body is read there);
`saving_bodies(attrs)` lists the bodies in the order of a save spec's entries
(the `bodies` pass optimizes them with their saved tensors preserved).

Lowering (`OpDef.extra["lower"]`): the executor asks for a callable per op; it
binds the bodies' plans once, compiled as they are: the `bodies` pass of the
pipeline that made the plan has already optimized them with the plan's
`SessionConfig` (see plans.py).  The kernels (an op run outside any plan,
e.g. eagerly) optimize the bodies with the default pipeline.  The While loop is one generated
function (`loop_plan.py`): a plain Python `while` with the cond's and the
body's kernel calls inlined; no recursion, no per-iteration allocation beyond
the loop values themselves.  `extra["interpret"]` runs the same bodies through
an interpreting executor instead (executors.py: a FULL_TRACE run records the
ops inside the bodies, once per iteration).

The gradient rules are registered on these ops by the modules that build
them (`branch_grads.py`: If/Case, `grads.py`: While; `registry.register_gradient`):
a gradient builds the op it differentiates (a Case, a While), so those modules
import this one, not the other way round.

Imports `eager`, `graph_runtime.deadline`, `graph_runtime.save_specs` and siblings (`loop_plan`, `plans`).
"""
from __future__ import annotations

from eager.dtypes import DType
from eager.errors import InvalidArgumentError
from eager.registry import GRADIENT_REGISTERED_LATER, Spec, op

from .. import deadline
from ..save_specs import body_saves
from .loop_plan import loop_plan
from .plans import body_plan

VARIANT = DType("variant", object)     # opaque value: not a user dtype, never fed or fetched by users


def _infer(specs, attrs):
    n = len(attrs["Tout"])
    bodies = [(k, attrs[k]) for k in ("then_branch", "else_branch", "body") if k in attrs]
    bodies += [(f"branches[{i}]", g) for i, g in enumerate(attrs.get("branches", ()))]
    for what, g in bodies:                # bodies may come from a GraphDef: a mismatch must not run
        if len(g.outputs) != n:
            raise InvalidArgumentError(f"{what} has {len(g.outputs)} outputs, but Tout lists {n}")
    if "num_vars" in attrs and attrs["num_vars"] != n:
        raise InvalidArgumentError(f"num_vars is {attrs['num_vars']!r:.20}, but Tout lists {n} loop variables")
    if "cond" in attrs and len(attrs["cond"].outputs) != 1:
        raise InvalidArgumentError(f"cond has {len(attrs['cond'].outputs)} outputs, expected 1 (the predicate)")
    if len(attrs["output_shapes"]) != n:
        raise InvalidArgumentError(f"output_shapes lists {len(attrs['output_shapes'])} shapes, Tout {n} dtypes")
    return [Spec(s.dims, d) for d, s in zip(attrs["Tout"], attrs["output_shapes"])] + [Spec((), VARIANT)]


# ------------------------------------------------------------------ If / Case
def _branch_runner(branches, saves, optimize: bool):
    """`run(b, caps) -> outputs + (variant,)` with plans bound; `saves`: the op's save spec (or None)."""
    plans = [body_plan(g, body_saves(saves, b), optimize) for b, g in enumerate(branches)]
    names = [tuple(n for n, _ in body_saves(saves, b)) for b in range(len(branches))]
    n_out = [len(g.outputs) for g in branches]

    def run(b, caps):
        plan = plans[b]
        try:
            outs = plan.fn(*caps)
        except Exception as e:
            raise plan.map_error(e) from None
        if names[b]:
            n = n_out[b]
            return outs[:n] + ((b, outs[n:], names[b]),)
        return outs + ((b, (), ()),)
    return run


def _if_kernel(pred, *caps, then_branch, else_branch, saves=None, **_):
    return _branch_runner((then_branch, else_branch), saves, True)(0 if pred else 1, caps)


def _lower_if(op, ctx):
    a = op._attrs
    run = _branch_runner((a["then_branch"], a["else_branch"]), a.get("saves"), False)

    def if_(pred, *caps):
        return run(0 if pred else 1, caps)
    return if_


def case_branch(index, n_branches: int, has_default: bool) -> int:
    """Which branch runs for `index`: in range -> that one, else the last (the default if given)."""
    i = int(index)
    n_indexed = n_branches - 1 if has_default else n_branches
    return i if 0 <= i < n_indexed else n_branches - 1


def _case_kernel(index, *caps, branches, has_default, saves=None, **_):
    return _branch_runner(branches, saves, True)(case_branch(index, len(branches), has_default), caps)


def _lower_case(op, ctx):
    a = op._attrs
    branches, has_default = a["branches"], a["has_default"]
    run = _branch_runner(branches, a.get("saves"), False)
    n = len(branches)

    def case(index, *caps):
        return run(case_branch(index, n, has_default), caps)
    return case


# ------------------------------------------------------------------ While
def _while_runner(cond_g, body_g, n: int, has_max: bool, saves, optimize: bool):
    """`run(*loop_vars, [maximum_iterations,] *captures) -> loop_vars + (variant,)` (loop_plan.py)."""
    plan = loop_plan(cond_g, body_g, n, has_max, body_saves(saves, 0), optimize)

    def run(*args):
        try:
            return plan.fn(*args)
        except Exception as e:
            raise plan.map_error(e) from None
    return run


def _while_kernel(*args, cond, body, num_vars, has_max, saves=None, **_):
    return _while_runner(cond, body, num_vars, has_max, saves, True)(*args)


def _lower_while(op, ctx):
    a = op._attrs
    return _while_runner(a["cond"], a["body"], a["num_vars"], a["has_max"], a.get("saves"), False)


# ------------------------------------------------------------------ bodies through an interpreting executor
# `extra["interpret"](op, executor) -> callable(*args)`: the same semantics as the lowered callables, with each
# body plan run by `executor.run_body` (executors.py), so a traced run records the ops inside the bodies.  An
# op that saves body values for a gradient (attr `saves`) runs its lowered form (the saves are generated code).
def _interpret_branches(op, ex, pick, lower):
    a = op._attrs
    if a.get("saves"):
        return lower(op, None)
    branches = a["branches"] if "branches" in a else (a["then_branch"], a["else_branch"])
    plans = [body_plan(g, (), False) for g in branches]

    def run(selector, *caps):
        b = pick(selector, len(branches), a)
        return tuple(ex.run_body(plans[b], caps)) + ((b, (), ()),)
    return run


def _interpret_if(op, ex):
    return _interpret_branches(op, ex, lambda pred, n, a: 0 if pred else 1, _lower_if)


def _interpret_case(op, ex):
    return _interpret_branches(op, ex, lambda index, n, a: case_branch(index, n, a["has_default"]), _lower_case)


def _interpret_while(op, ex):
    a = op._attrs
    if a.get("saves"):
        return _lower_while(op, None)
    n, has_max = a["num_vars"], a["has_max"]
    cplan, bplan = body_plan(a["cond"], (), False), body_plan(a["body"], (), False)

    def run(*args):
        loop_vars, rest = tuple(args[:n]), args[n:]
        limit, caps = (int(rest[0]), tuple(rest[1:])) if has_max else (None, tuple(rest))
        i = 0
        at, abort = deadline.state()
        while limit is None or i < limit:
            at = deadline.check(at, f"While loop, iteration {i}", op.name, abort)
            if not ex.run_body(cplan, loop_vars + caps)[0]:
                break
            loop_vars = tuple(ex.run_body(bplan, loop_vars + caps))
            i += 1
        return loop_vars + (None,)
    return run


# ------------------------------------------------------------------ residual hooks (graph_runtime/residuals.py)
def _branch_input_bodies(op, k):
    """The branch placeholders fed by input `k` (0 is the selector, then one input per capture)."""
    a = op._attrs
    branches = a["branches"] if "branches" in a else (a["then_branch"], a["else_branch"])
    return [g.inputs[k - 1] for g in branches] if k >= 1 else []


def _while_input_bodies(op, k):
    a = op._attrs
    n = a["num_vars"]
    if a["has_max"]:
        if k == n:
            return []
        k = k - 1 if k > n else k
    return [a["cond"].inputs[k], a["body"].inputs[k]]


# ------------------------------------------------------------------ registration
_COMMON_ATTRS = ("Tout", "output_shapes", "saves")


def _pair(name, kernel, lower, interpret, input_bodies, saving_bodies, attrs, doc):
    extra = {"lower": lower, "interpret": interpret, "saves": True, "input_bodies": input_bodies,
             "saving_bodies": saving_bodies}
    grad = GRADIENT_REGISTERED_LATER      # branch_grads.py / grads.py register the rules
    stateful = op(name, kernel, _infer, grad, effect="write", num_outputs=-1, extra=dict(extra),
                  attrs=attrs + _COMMON_ATTRS, doc=doc + " Some body has side effects.")
    stateless = op("Stateless" + name, kernel, _infer, grad, num_outputs=-1, extra=dict(extra),
                   attrs=attrs + _COMMON_ATTRS, doc=doc + " No body has side effects.")
    return stateful, stateless


IF, STATELESS_IF = _pair("If", _if_kernel, _lower_if, _interpret_if, _branch_input_bodies,
                         lambda a: (a["then_branch"], a["else_branch"]),
                         ("then_branch", "else_branch"),
                         "Run then_branch(*captures) if pred else else_branch(*captures).")
CASE, STATELESS_CASE = _pair("Case", _case_kernel, _lower_case, _interpret_case, _branch_input_bodies,
                             lambda a: tuple(a["branches"]),
                             ("branches", "has_default"),
                             "Run branches[branch_index](*captures) (out of range: the last branch).")
WHILE, STATELESS_WHILE = _pair("While", _while_kernel, _lower_while, _interpret_while, _while_input_bodies,
                               lambda a: (a["body"],),
                               ("cond", "body", "num_vars", "has_max"),
                               "loop_vars = body(*loop_vars, *captures) while cond(*loop_vars, *captures).")
