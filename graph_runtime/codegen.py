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
cell load each); a register is reused once the value it holds has had its last
use, so dead intermediates are released immediately.  `plan.line_to_step` maps
each generated line to its step, so an exception raised by a kernel is
attributed to its op at zero cost on the success path.  The source is
registered with `linecache`, so tracebacks show the generated lines.

Imports `numpy` and `eager.variables` only.
"""
from __future__ import annotations

import itertools
import linecache

import numpy as np

from eager.variables import _read_kernel

_counter = itertools.count()


def _feed_check(i: int, tensor, dname: str) -> str:
    r = f"r{i}"
    if tensor.dtype.is_string:
        return "True"
    conds = [f"{r}.__class__ is not _nd", f"{r}.dtype is not {dname}"]
    dims = tensor.shape.dims
    if dims is not None:
        if None not in dims:
            conds.append(f"{r}.shape != {tuple(dims)!r}")
        else:
            conds.append(f"{r}.ndim != {len(dims)}")
            conds.extend(f"{r}.shape[{j}] != {d}" for j, d in enumerate(dims) if d is not None)
    return " or ".join(conds)


def generate(plan, check_feeds: bool = True) -> None:
    """Fill `plan.fn`, `plan.source`, `plan.line_to_step` and `plan.filename`."""
    names: list = []            # closure variable names, in order
    values: list = []
    by_id: dict = {}

    def bind(prefix, obj, share=False):
        if share:
            hit = by_id.get(id(obj))
            if hit is not None:
                return hit
        name = f"{prefix}{len(names)}"
        names.append(name)
        values.append(obj)
        if share:
            by_id[id(obj)] = name
        return name

    n_feeds = len(plan.feeds)
    reg = {i: f"r{i}" for i in range(n_feeds)}
    for vid, value in plan.consts.items():
        reg[vid] = bind("c", value)
    free: list = []
    next_reg = [n_feeds]

    def alloc():
        if free:
            return free.pop()
        r = f"r{next_reg[0]}"
        next_reg[0] += 1
        return r

    body: list = []             # (text, step index or None)
    if check_feeds:
        for i, t in enumerate(plan.feeds):
            cv = bind("cv", plan.converters[i])
            dname = bind("_D", t.dtype.np_dtype)
            body.append((f"if {_feed_check(i, t, dname)}: r{i} = {cv}(r{i})", None))
    last_use = plan.last_use
    consts = plan.consts
    for si, step in enumerate(plan.steps):
        if step.noop:
            continue
        args = [reg[v] for v in step.inputs]
        kname = bind("k", step.kernel, share=True)
        args.extend(f"{k}={bind('a', v)}" for k, v in step.attrs.items())
        call = f"{kname}({', '.join(args)})"
        for v in dict.fromkeys(step.inputs):
            if last_use.get(v) == si and v not in consts:
                free.append(reg.pop(v))
        targets = []
        for v in step.outputs:
            if v >= 0 and v in last_use:
                reg[v] = alloc()
                targets.append(reg[v])
            else:
                targets.append("_")
        if not targets or all(t == "_" for t in targets):
            body.append((call, si))
        elif len(targets) == 1:
            body.append((f"{targets[0]} = {call}", si))
        else:
            body.append((f"{', '.join(targets)} = {call}", si))

    items = []
    for r in plan.returns:
        if r.kind == "value":
            items.append(reg[r.vid] + (".copy()" if r.copy else ""))
        elif r.kind == "var":
            items.append(f"{bind('k', _read_kernel, share=True)}(var={bind('a', r.var)}).copy()")
        else:
            items.append("None")
    if plan.container == "single":
        ret = f"return {items[0]}"
    elif plan.container == "list":
        ret = f"return [{', '.join(items)}]"
    else:
        ret = f"return ({', '.join(items)}{',' if len(items) == 1 else ''})"

    lines = ["def __make(__K):"]
    if names:
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = __K")
    lines.append(f"    def plan({', '.join(f'r{i}' for i in range(n_feeds))}):")
    line_to_step = {}
    for text, si in body:
        lines.append("        " + text)
        if si is not None:
            line_to_step[len(lines)] = si
    lines.append("        " + ret)
    lines.append("    return plan")
    source = "\n".join(lines) + "\n"
    filename = f"<graphjit-plan-{next(_counter)}>"
    namespace = {"_nd": np.ndarray}
    exec(compile(source, filename, "exec"), namespace)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    plan.fn = namespace["__make"](tuple(values))
    plan.source = source
    plan.line_to_step = line_to_step
    plan.filename = filename
