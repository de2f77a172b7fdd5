"""Lower a `Plan` to generated Python source: one line per kernel call, registers reused.

The generated code for `z = sigmoid(x @ w + b)` with `x` fed looks like:

    def __make(__K):
        k0, k1, k2, c3, c4, cv5 = __K
        def plan(r0):
            if r0.__class__ is not _nd or r0.dtype is not _D0 or r0.ndim != 2 or r0.shape[1] != 3: r0 = cv5(r0)
            r1 = k0(r0, c3, transpose_a=a6, transpose_b=a7)
            r1 = k1(r1, c4)
            r1 = k2(r1)
            return r1
        return plan

Kernels, constants, attr values and feed converters are closure variables (one
cell load each).  Nothing of the graph is pasted as text: the source holds only
names made here (`r3`, `k0`, `a6`), operators, integer literals (shapes), and
attr keywords, which are the op's *declared* attr names looked up in its OpDef
(`eager.registry.attr_keywords`: the emitted string is the op's own, an
undeclared attr is refused), so a GraphDef or saved function cannot put code in
the plan.  A register is reused once the value it holds has had its last use,
so dead intermediates are released immediately; a register holding a variable's
value that no later step reuses at once is set to None at the value's last use
(else the variable's next update could not write into its array in place:
eager/variable_storage.py).  `plan.line_to_step` maps
each generated line to its step, so an exception raised by a kernel is
attributed to its op at zero cost on the success path.  The source is
registered with `linecache` while the plan lives (generated_source.py), so tracebacks
show the generated lines.

NumPy warnings (TensorFlow semantics: NaN and inf are values;
eager/fp_semantics.py): a plan whose steps can make NumPy warn (`can_warn`)
and that has no side effects is wrapped in `try: ... except RuntimeWarning:`
(free until a warning is turned into an error) and runs again with NumPy's
warnings off; its feed registers are then never reused, so the rerun sees
the feeds.  A plan with side effects sets NumPy's error state to "ignore"
around its body instead, restored in a `finally`.

Scalar arithmetic: a binary op whose kernel is one of NumPy's arithmetic or
comparison ufuncs (`_OPERATORS`) on int/float values, or `logical_and` /
`logical_or` on bools, whose static shapes are all rank 0, is emitted as a
Python operator (`r1 = r0 + s3`, rank-0 constants bound as NumPy scalars):
NumPy's scalar fast path computes the same value of the same dtype as the
ufunc, 15x faster (loop counters and conditions).  (The one difference: NumPy
warns on integer overflow of scalars, where the ufunc on 0-d arrays wraps
silently; the wrapped value is the same.)

Transposed products: a MatMul with transposes whose operands are known to be
2-D is emitted as `np.matmul(a.T, b)` (the specialized kernel's own call,
without its Python frame).

The pieces are shared with generated While loops (control_flow/loop_plan.py):
`Emitter` (closure bindings), `emit_steps` (the step lines of a plan over given
registers), `return_items` (the expressions a plan returns), `build` (exec the
source and fill the plan's fields).

Imports `numpy`, `eager` (fp_semantics, ops.linalg, registry, variables), `op_traits` and `operation`.
"""
from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from eager import fp_semantics, own_cores
from eager.ops.linalg import TRANSPOSED_PRODUCTS
from eager.registry import attr_keywords
from eager.variables import read_kernel

from . import generated_source
from .op_traits import has_side_effects
from .operation import attr_subgraphs

_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.less: "<", np.less_equal: "<=",
              np.greater: ">", np.greater_equal: ">=", np.equal: "==", np.not_equal: "!="}
_BOOL_OPERATORS = {np.logical_and: "&", np.logical_or: "|"}      # on bools only (`&` is bitwise on ints)


def _feed_check(i: int, tensor, dname: str) -> str:
    r = f"r{i}"
    if tensor.dtype.is_string:
        return "True"
    conds = [f"{r}.__class__ is not _nd", f"{r}.dtype is not {dname}"]
    dims = tensor.shape.dims
    if dims is not None:
        if None not in dims:
            conds.append(f"{r}.shape != {tuple(int(d) for d in dims)!r}")
        else:
            conds.append(f"{r}.ndim != {len(dims)}")
            conds.extend(f"{r}.shape[{j}] != {int(d)}" for j, d in enumerate(dims) if d is not None)
    return " or ".join(conds)


class Emitter:
    """Closure variables of one generated function: `bind(prefix, obj)` returns the name holding `obj`."""

    def __init__(self):
        self.names: list = []
        self.values: list = []
        self._by_id: dict = {}

    def bind(self, prefix: str, obj, share: bool = False) -> str:
        if share:
            hit = self._by_id.get(id(obj))
            if hit is not None:
                return hit
        name = f"{prefix}{len(self.names)}"
        self.names.append(name)
        self.values.append(obj)
        if share:
            self._by_id[id(obj)] = name
        return name


class Registers:
    """Register names `r<n>`: `alloc()` a free one (reused after release) or a new one."""

    def __init__(self, first: int = 0):
        self.free: list = []
        self.next = first

    def alloc(self) -> str:
        if self.free:
            return self.free.pop()
        r = f"r{self.next}"
        self.next += 1
        return r


def operator_symbol(op, kernel, attrs):
    """The Python operator `op` is emitted as when its kernel is `kernel` (see the module docstring), or None.

    The fusion pass leaves such ops alone (`fusion.groups.fusible_reason`): the operator is cheaper.
    """
    if not isinstance(kernel, np.ufunc) or attrs or len(op._inputs) != 2 or len(op._outputs) != 1:
        return None
    ins = op._inputs
    dt = ins[0]._dtype
    sym = _OPERATORS.get(kernel) if dt.is_numeric else _BOOL_OPERATORS.get(kernel) if dt.is_bool else None
    if sym is None or ins[1]._dtype is not dt:
        return None
    for t in (ins[0], ins[1], op._outputs[0]):
        if t._shape.rank != 0:
            return None
    return sym


def emit_steps(plan, em: Emitter, reg: dict, regs: Registers, keep=frozenset(), rewrite=None) -> list:
    """The lines `(text, step index)` computing `plan`'s steps.

    `reg` maps value ids to register names (feeds filled in by the caller; constants and results added
    here); a register is released after its value's last use unless the value id is in `keep`.
    `rewrite`: {step index: f(line, input registers, output registers) -> lines}, for a caller that
    computes some steps another way (a While loop's block products, control_flow/row_products.py).
    """
    last_use = plan.last_use
    consts = plan.consts
    for vid, value in consts.items():
        if vid not in reg:
            reg[vid] = em.bind("c", value)
    scalars: dict = {}
    lines: list = []
    reads: set = set()          # value ids of variable reads (released at their last use, see below)
    for si, step in enumerate(plan.steps):
        if step.noop:
            continue
        if step.kernel is read_kernel:
            reads.update(step.outputs)
        in_regs = [reg[v] for v in step.inputs] if rewrite is not None and si in rewrite else None
        sym = operator_symbol(step.op, step.kernel, step.attrs) if len(step.outputs) == 1 else None
        direct = (getattr(step.kernel, "direct", None)
                  if sym is None and not step.attrs and (rewrite is None or si not in rewrite) else None)
        if sym is not None:
            a, b = [_scalar_reg(v, consts, reg, em, scalars) for v in step.inputs]
            call = f"{a} {sym} {b}"
        elif _is_2d_product(step):
            call = _product_call(step, [reg[v] for v in step.inputs], em)
        else:
            args = [reg[v] for v in step.inputs]
            if direct is not None:
                call = _direct_call(em, direct, args)
            else:
                kname = em.bind("k", step.kernel, share=True)
                if step.attrs:
                    kws = attr_keywords(step.op._opdef, len(step.inputs), step.attrs, f"op {step.op.name!r}")
                    args.extend(f"{kw}={em.bind('a', v)}" for kw, v in kws)
                call = f"{kname}({', '.join(args)})"
        released = []
        for v in dict.fromkeys(step.inputs):
            if last_use.get(v) == si and v not in consts and v not in keep:
                regs.free.append(reg.pop(v))
                if v in reads:
                    released.append(regs.free[-1])
        targets = []
        for v in step.outputs:
            if v >= 0 and v in last_use:
                reg[v] = regs.alloc()
                targets.append(reg[v])
            else:
                targets.append("_")
        line = call if not targets or all(t == "_" for t in targets) else f"{', '.join(targets)} = {call}"
        if direct is not None:
            line = f"with {em.bind('lk', direct.lock, share=True)}: {line}"
        if rewrite is not None and si in rewrite:
            lines.extend(rewrite[si](line, in_regs, targets))
        else:
            lines.append((line, si))
            # a dead register must not keep a variable's array alive: a later update of that variable could
            # not write in place (eager/variable_storage.py)
            lines.extend((f"{r} = None", si) for r in released if r not in targets)
    return lines


def _direct_call(em: Emitter, direct, args: list) -> str:
    """The call a kernel with a `direct` attribute makes, written into the plan (the caller puts it under
    `direct.lock`): a one-call numexpr kernel (fusion/numexpr_backend.py) costs one Python frame less."""
    parts = [args[a] if type(a) is int else em.bind("c", a) for a in direct.args]
    return f"{em.bind('k', direct.fn, share=True)}({', '.join(parts)})"


def _is_2d_product(step) -> bool:
    return (step.kernel in TRANSPOSED_PRODUCTS and not step.attrs and len(step.inputs) == 2
            and all(t._shape.rank == 2 for t in step.op._inputs))


def _product_call(step, args: list, em: Emitter) -> str:
    """`np.matmul(a.T, b)` for a MatMul with transposes on operands known to be 2-D: the same product as
    its specialized kernel's `swapaxes(-1, -2)`, without that kernel's Python frame and method calls
    (a While gradient runs three such products per iteration)."""
    flags = TRANSPOSED_PRODUCTS[step.kernel]
    a, b = (f"{x}.T" if t else x for x, t in zip(args, flags))
    return f"{em.bind('_mm', np.matmul, share=True)}({a}, {b})"


def _scalar_reg(vid, consts, reg, em, scalars) -> str:
    if vid not in consts:
        return reg[vid]
    hit = scalars.get(vid)
    if hit is None:
        hit = scalars[vid] = em.bind("s", np.asarray(consts[vid])[()])
    return hit


def return_items(plan, em: Emitter, reg: dict) -> list:
    """The expression of each entry of `plan.returns`."""
    items = []
    for r in plan.returns:
        if r.kind == "value":
            items.append(reg[r.vid] + (".copy()" if r.copy else ""))
        elif r.kind == "var":
            items.append(f"{em.bind('k', read_kernel, share=True)}(var={em.bind('a', r.var)}).copy()")
        else:
            items.append("None")
    return items


def build(plan, em: Emitter, signature: str, body: list, fn_name: str = "plan", indent: int = 2) -> Callable:
    """Exec `def <fn_name>(<signature>): <body lines>` closed over `em`'s bindings; fill `plan`'s fields.

    `body` holds `(text, step index or None)`; the text may hold leading spaces (deeper blocks).
    Returns the function.
    """
    lines = ["def __make(__K):"]
    if em.names:
        lines.append(f"    {', '.join(em.names)}{',' if len(em.names) == 1 else ''} = __K")
    lines.append(f"    def {fn_name}({signature}):")
    line_to_step = {}
    pad = "    " * indent
    for text, si in body:
        lines.append(pad + text)
        if si is not None:
            line_to_step[len(lines)] = si
    lines.append(f"    return {fn_name}")
    source = "\n".join(lines) + "\n"
    namespace = {"_nd": np.ndarray}
    filename = generated_source.load(source, fn_name, namespace)
    fn = namespace["__make"](tuple(em.values))
    generated_source.evict_with(fn, filename)
    plan.fn = fn
    plan.source = source
    plan.line_to_step = line_to_step
    plan.filename = filename
    return fn


def generate(plan, check_feeds: bool = True) -> None:
    """Fill `plan.fn`, `plan.source`, `plan.line_to_step` and `plan.filename`."""
    em = Emitter()
    n_feeds = len(plan.feeds)
    reg = {i: f"r{i}" for i in range(n_feeds)}
    body: list = []
    if check_feeds:
        for i, t in enumerate(plan.feeds):
            cv = em.bind("cv", plan.converters[i])
            dname = em.bind("_D", t.dtype.np_dtype)
            body.append((f"if {_feed_check(i, t, dname)}: r{i} = {cv}(r{i})", None))
    warns, effects = can_warn(plan)
    rerun = warns and not effects
    if warns:    # the kernel warnings filter comes first (eager/fp_semantics.py)
        w, fp = em.bind("_w", warnings), em.bind("_fp", fp_semantics)
        body.insert(0, (f"if not {w}.filters or {w}.filters[0] is not {fp}.FILTER: {fp}.keep_kernels_quiet()", None))
    # a plan that may be run again after a warning-as-error keeps its feeds' registers (see below)
    body.extend(emit_steps(plan, em, reg, Registers(n_feeds), keep=frozenset(range(n_feeds)) if rerun else frozenset()))
    items = return_items(plan, em, reg)
    if plan.container == "single":
        ret = f"return {items[0]}"
    elif plan.container == "list":
        ret = f"return [{', '.join(items)}]"
    else:
        ret = f"return ({', '.join(items)}{',' if len(items) == 1 else ''})"
    body.append((ret, None))
    params = ", ".join(f"r{i}" for i in range(n_feeds))
    owns = own_cores.wanted(s.op.type for s in plan.steps)
    if rerun:
        # NumPy warnings turned into errors: run again with them off (TensorFlow semantics, eager/fp_semantics.py)
        again = em.bind("_fprq", fp_semantics.rerun_quietly)
        body = ([("try:", None)] + [("    " + t, si) for t, si in body] +
                [(f"except {em.bind('_fpraised', fp_semantics.RAISED)} as __e:", None),
                 (f"    return {again}(__e, plan{', ' if params else ''}{params})",
                                                             None)])
    elif warns:
        # side effects cannot run twice: NumPy's warnings off for the whole run
        quiet = em.bind("_fpq", fp_semantics.ignoring)
        body = [(f"with {quiet}():", None)] + [("    " + t, si) for t, si in body]
    fn = build(plan, em, params, body)
    if owns:            # GRAPHJIT_OWN_CORES=1: BLAS on one thread and the kernel pool for the run (eager/own_cores.py)
        plan.fn = own_cores.wrap(fn)


def can_warn(plan) -> tuple:
    """(can a step make NumPy warn, does a step have side effects).

    A step can warn when it touches a float value, holds a body or a generated kernel, or is a scalar
    operator (NumPy warns on integer overflow of scalars), unless its kernel says it never does
    (`never_warns`: a numexpr kernel computes without NumPy's ufunc loops, which are what warn).
    """
    warns = effects = False
    for step in plan.steps:
        if step.noop:
            continue
        op = step.op
        effects = effects or has_side_effects(op)
        if not warns and not getattr(step.kernel, "never_warns", False):
            warns = (op._opdef.extra.get("lower") is not None or bool(attr_subgraphs(op._attrs)) or
                     any(t._dtype.np_dtype.kind in "fc" for t in (*op._inputs, *op._outputs)) or
                     (len(step.outputs) == 1 and operator_symbol(op, step.kernel, step.attrs) is not None))
    return warns, effects
