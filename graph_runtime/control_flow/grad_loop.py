"""A WhileGrad's backward walk as one generated function: the VJP plan's steps inlined in a Python loop.

`grad_loop(vjp, feeds, n_dy, n_extra, outputs)` returns a `Plan` whose
`fn(n, hist, *dv, *extra_stacks, *captures)` walks the saved iterations
`hist[n - 1] ... hist[0]` and returns `dv + capture cotangents`:

    def grad_loop(n, hist, d0, e0, x0, x1):
        acc0 = None; own0 = False
        for t in range(n - 1, -1, -1):
            s = hist[t]
            r0 = k1(d0, s[2])                # the VJP plan's steps; feeds are d*, e*[t], x*, s[i]
            ...
            g = r3                           # a capture's cotangent of this iteration
            if acc0 is None: acc0 = g
            elif own0 and ...: _add(acc0, g, out=acc0)
            else: acc0 = acc0 + g; own0 = acc0.__class__ is _nd
            d0 = r0                          # the loop variables' cotangents carried back
        return (d0, acc0)

It computes exactly what calling the VJP plan once per iteration did (the
same kernels, the same sums in the same order), without a plan call, an
argument list and a result tuple per iteration; except that a capture's
cotangent that is a weight term (`x_t.T @ dz_t`, or `dz_t` summed over its
rows) is summed over all iterations by one GEMM or one reduction after the
walk, which keeps only its operands (summed_products.py: the same sum in
another order; `GRAPHJIT_LOOP_GRAD_GEMM=0` keeps the per-iteration sums), and a product
carried to the next iteration that one fused kernel reads there (an RNN's
`dz @ Wh.T`) goes into one scratch per walk (scratch_products.py, same bits).  A capture's sum is added
into its buffer once the kernel allocated one (`own*`: the first term may be a
value the plan returned by reference, never written); the shape and dtype test
is emitted only for cotangents whose static shape is not fully known.

The plan is cached on the VJP graph (`plans.cached`); its steps are the VJP
plan's, so `plan.map_error` names the failing op.

Imports `graph_runtime.codegen`, `graph_runtime.plan` and siblings.
"""
from __future__ import annotations

import numpy as np

from ..codegen import Emitter, Registers, build, emit_steps, return_items
from ..plan import Plan, Schedule
from . import compiled_walk, scratch_products, summed_products
from .plans import body_plan, cached


def grad_loop(vjp, feeds: tuple, n_dy: int, n_extra: int, outputs=None) -> Plan:
    """The generated backward loop of a WhileGrad (module docstring); cached on `vjp`."""
    key = ("grad_loop", tuple(feeds), n_dy, n_extra, None if outputs is None else tuple(outputs),
           summed_products.enabled())

    def make():
        return (None, _generate(body_plan(vjp, (), True, outputs), feeds, n_dy, n_extra))
    return cached(vjp, key, make)


def _same_array_check(ret, acc: str) -> str:
    """The run-time test (after `own`) that cotangent `g` is an array of `acc`'s shape and dtype, so adding
    it in place computes `acc + g`.  A value with a fully known static shape of rank >= 1 is the same
    tensor on every iteration, an array of that shape and dtype, as the accumulator made from it: no test."""
    shape = ret.tensor.shape if ret.kind == "value" else None
    if shape is not None and shape.is_fully_defined() and shape.rank >= 1:
        return ""
    return f" and g.__class__ is _nd and g.shape == {acc}.shape and g.dtype == {acc}.dtype"


def _generate(plan: Plan, feeds: tuple, n_dy: int, n_extra: int) -> Plan:
    n_caps = 1 + max((i for kind, i in feeds if kind == 0), default=-1)
    em = Emitter()
    reg: dict = {}
    for j in range(n_dy):
        reg[j] = f"d{j}"
    for k in range(n_extra):
        reg[n_dy + k] = f"e{k}[t]"
    for j, (kind, i) in enumerate(feeds):
        reg[n_dy + n_extra + j] = f"x{i}" if kind == 0 else f"s[{i}]"
    keep = frozenset(v for v, name in reg.items() if not name.startswith("d"))
    n_acc = len(plan.returns) - n_dy
    # names: d* e* x* acc* own* s t g n hist are ours; the Emitter's closure names are c*, k*, a*, s<n>, _*
    lines: list = [(f"acc{c} = None; own{c} = False", None) for c in range(n_acc)]
    deferred = summed_products.find(plan, n_dy)
    rewrite, before, after, listed = summed_products.rewrites(plan, em, deferred)
    products = scratch_products.find_carried(plan, n_dy, rewrite)
    carried, scratch = scratch_products.rewrites(plan, em, found=products)
    rewrite.update(carried)
    lines.extend(before)
    lines.extend((text, None) for text in scratch)
    fast = compiled_walk.find(plan, feeds, n_dy, n_extra, deferred, products, listed)
    if fast is None:
        lines.append(("for t in range(n - 1, -1, -1):", None))
    else:
        # the whole walk as one compiled call when its operands allow (compiled_walk.py), else from `tw`
        lines.extend((text, None) for text in compiled_walk.emit(fast, em))
        lines.append(("for t in range(tw - 1, -1, -1):", None))
        after = compiled_walk.after_lines(fast, after)
    inner: list = [("s = hist[t]", None)]
    inner.extend(emit_steps(plan, em, reg, Registers(), keep=keep, rewrite=rewrite or None))
    items = return_items(plan, em, reg)
    add = em.bind("_add", np.add)
    for c, (item, ret) in enumerate(zip(items[n_dy:], plan.returns[n_dy:])):
        if c in deferred:
            continue                          # summed after the walk (summed_products.py)
        a, o = f"acc{c}", f"own{c}"
        inner += [(f"g = {item}", None),
                  (f"if {a} is None: {a} = g", None),
                  (f"elif {o}{_same_array_check(ret, a)}: {add}({a}, g, {a})", None),
                  (f"else: {a} = {a} + g; {o} = {a}.__class__ is _nd", None)]
    moved = [(f"d{j}", item) for j, item in enumerate(items[:n_dy]) if item != f"d{j}"]
    if moved:
        inner.append((f"{', '.join(d for d, _ in moved)} = {', '.join(item for _, item in moved)}", None))
    lines.extend(("    " + text, si) for text, si in inner)
    lines.extend(after)
    results = [f"d{j}" for j in range(n_dy)] + [f"acc{c}" for c in range(n_acc)]
    lines.append((f"return ({', '.join(results)}{',' if len(results) == 1 else ''})", None))
    signature = ", ".join(["n", "hist"] + [f"d{j}" for j in range(n_dy)] + [f"e{k}" for k in range(n_extra)]
                          + [f"x{i}" for i in range(n_caps)] + ["*_rest"])
    out = Plan(Schedule(tuple(plan.feeds), tuple(plan.steps), {}, (), "tuple", 0))
    build(out, em, signature, lines, fn_name="grad_loop")
    return out
