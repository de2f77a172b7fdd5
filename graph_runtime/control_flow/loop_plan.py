"""A While op's whole loop as one generated function: cond and body steps inlined in a Python `while`.

`loop_plan(cond_g, body_g, n, has_max, saves=(), optimize=True)` returns a
`Plan` whose `fn(*loop_vars, [maximum_iterations,] *captures)` runs the loop
and returns `loop_vars + (variant,)` (the While op's outputs).  The source is
built from the cond and body plans (`plans.body_plan`: optimized by the
default pipeline when `optimize` and nothing is saved; lowering passes
`optimize=False`, the `bodies` pass having optimized them already) with the
shared pieces of `graph_runtime.codegen`:

    def loop(v0, v1, x0, x1, x2):
        dl, ab = _dlstate()                   # the step's deadline and abort signal (deadline.py)
        while True:
            if dl is not None and (_mono() > dl or (ab is not None and ab.why is not None)): raise _dlstop(...)
            r0 = v0 < s1                      # cond steps
            if not r0: break
            r0 = k2(v1, x0, ...)              # body steps
            ...
            v0, v1 = r2, r0                   # the body's results are the next loop variables
        return (v0, v1, None)

so an iteration costs its kernel calls and nothing else: no plan calls, no
argument tuples, no result tuples.  A counted loop (`v < N` on an integer
loop variable stepped by one, counter.py) runs `for t in range(...)` instead:
no condition on NumPy scalars per iteration, and, where the counter is only a
read index, no step either (reads take `t`).  A matrix product that only a
fused kernel reads is computed into a scratch buffer allocated once per run
(scratch_products.py: `np.dot` with `out=`, same bits), and a capture that a
fused kernel broadcasts (a bias) is handed to it expanded, copied once per
run (broadcast_captures.py: same bits, NumPy's contiguous loop).  A body's `ta.read(i) @ W` on a captured
TensorArray and weight (an RNN's step input) takes its row from products
computed a block of rows at a time (row_products.py: same bits, one stacked
matmul per block instead of a read and a matmul call per iteration).  Loop variables live in `v*`, captures in
`x*` (never overwritten); temporaries share one register pool.  With
`has_max`, `i < limit` is checked before cond (zero iterations for a negative
limit, as eagerly).  With `saves` (the op's save spec for its body: values a
gradient reads, graph_runtime/residuals.py) each iteration appends the tuple
of saved values to a history, and the variant output is `(iterations,
history, names)`; otherwise it is None.

Errors: the plan's `steps` are the cond's steps followed by the body's, and
`line_to_step` maps each generated line to one of them, so `plan.map_error`
names the failing body op exactly as the separate plans would.

The plan is cached on the body graph (`plans.cached`), keyed by the cond
graph's name, the save spec, `has_max` and `optimize`.

Imports `graph_runtime.codegen`, `graph_runtime.deadline`, `graph_runtime.plan` and siblings.
"""
from __future__ import annotations

from .. import deadline
from ..codegen import Emitter, Registers, build, emit_steps, return_items
from ..plan import Plan, Schedule
from eager.tensor_array import GET_ITEM

from . import broadcast_captures, compiled_loop, counter, loop_kernels, row_products, scratch_products
from .plans import body_plan, cached


def loop_plan(cond_g, body_g, n: int, has_max: bool, saves: tuple = (), optimize: bool = True) -> Plan:
    """The generated loop of a While op (see the module docstring); cached on `body_g`."""
    # names, not ids (they survive a GraphDef round trip): a body graph belongs to one While op, whose cond
    # is rebuilt together with it by every pass that rebuilds either
    key = ("loop", cond_g.name, tuple(saves), bool(has_max), bool(optimize), loop_kernels.setting())

    def make():
        cplan = body_plan(cond_g, (), optimize)
        bplan = body_plan(body_g, tuple(saves), optimize)
        return (None, _generate(cplan, bplan, n, has_max, tuple(name for name, _ in saves)))

    return cached(body_g, key, make)


def _row_products(bplan: Plan, em: Emitter, inputs: dict, captured: range, counted: dict, dtype=None):
    """`(rewrite, init, pairs)`: the `emit_steps` rewrites computing the body's `ta.read(i) @ W` products a
    block of rows at a time (row_products.py), the lines setting up their state before the loop, and the
    pairs rewritten ({product step index: (read step index, buffer, weight)}).  `counted`: {read step
    index: buffer register} of a counted loop's reads at its counter (they index by `t`; `x[t]` among them
    too), `dtype` the counter's NumPy type."""
    rewrite: dict = {}
    init: list = []
    uses: dict = {}
    for step in bplan.steps:
        for v in step.inputs:
            uses[v] = uses.get(v, 0) + 1
    for r in bplan.returns:
        if r.kind == "value":
            uses[r.vid] = uses.get(r.vid, 0) + 1
    rows = None
    pairs: dict = {}
    row_reads = {gi for gi in counted if bplan.steps[gi].op.type != GET_ITEM.name}
    for si, (gi, buf, w) in row_products.find(bplan, captured, row_reads).items():
        if gi in rewrite:
            continue                      # a read feeding two products: the first one only
        rows = rows or em.bind("_rows", row_products.rows_times)
        j = len(init)
        q, pq, pn, pz = f"q{j}", f"pq{j}", f"pn{j}", f"pz{j}"
        init.append(f"{pq} = []; {pn} = -1; {pz} = 1")
        only_use = uses.get(bplan.steps[gi].outputs[0], 0) == 1

        def read(line, regs_in, targets, q=q, only_use=only_use, gi=gi):
            index, buf = ("t", counted[gi]) if gi in counted else (regs_in[1], None)
            full = line if buf is None else counter.fast_read(line, buf, bplan.steps[gi], regs_in, em, dtype)
            return [(f"{q} = {index}" + ("" if only_use else f"; {full}"), gi)]
        row = (f", {em.bind('_rr', counter.row_reader(bplan, bplan.steps[gi], dtype))}" if gi in row_reads
               else "")

        def product(line, regs_in, targets, q=q, pq=pq, pn=pn, pz=pz, gi=gi, si=si, buf=inputs[buf], row=row):
            return [(f"if not ({q} == {pn} and {pq}): {pq}, {pn}, {pz} = {rows}({buf}, {regs_in[1]}, {q}, {pn}, "
                     f"{pz}{row})", gi),
                    (f"{targets[0]} = {pq}.pop(); {pn} += 1", si)]
        rewrite[gi], rewrite[si] = read, product
        pairs[si] = (gi, buf, w)
    return rewrite, init, pairs


def _generate(cplan: Plan, bplan: Plan, n: int, has_max: bool, saved_names: tuple) -> Plan:
    save = bool(saved_names)
    n_caps = len(cplan.feeds) - n
    if len(bplan.feeds) != n + n_caps:
        raise ValueError(f"While: cond takes {len(cplan.feeds)} inputs but body takes {len(bplan.feeds)}; both "
                         f"take the loop variables and the same captures")
    em = Emitter()
    regs = Registers()
    names = [f"v{j}" for j in range(n)] + [f"x{k}" for k in range(n_caps)]
    inputs = {j: name for j, name in enumerate(names)}
    signature = names[:n] + (["lim"] if has_max else []) + names[n:]
    count = counter.find(cplan, bplan, n)
    lines: list = []
    if has_max:
        lines.append(("lim = int(lim)", None))
    if (has_max and count is None) or save:
        lines.append(("i = 0", None))
    if save:
        lines.append(("hist = []", None))
    # the step's deadline and abort signal (deadline.py): read once per loop run, checked each iteration
    # when there is a deadline (an abort signal always comes with one)
    lines.append((f"dl, ab = {em.bind('_dlstate', deadline.state)}()", None))
    inner: list = []
    inner.append((f"if dl is not None and ({em.bind('_mono', deadline.monotonic)}() > dl or "
                  f"(ab is not None and ab.why is not None)): "
                  f"dl = {em.bind('_dlover', deadline.overdue)}(ab, 'While loop', 'While')", None))
    if count is None:
        lines.append(("while True:", None))
        inner.extend(_cond_lines(cplan, em, inputs, regs, has_max))
    else:
        lines.extend(_counted_head(count, has_max))
    # body: loop variables may be overwritten once dead, captures (and a substituted counter) never
    breg = dict(inputs)
    keep = set(range(n, n + n_caps))
    if count is not None and count.substitute:
        breg[count.var] = "t"
        keep.add(count.var)
    offset = len(cplan.steps)
    captured = range(n, n + n_caps)
    counted = {} if count is None else {gi: inputs[b] for gi, b in counter.reads(bplan, count.var, captured).items()}
    dtype = None if count is None else count.scalar_type
    rewrite, init, pairs = _row_products(bplan, em, inputs, captured, counted, dtype)
    for gi, buf in counted.items():
        if gi not in rewrite:
            rewrite[gi] = lambda line, regs_in, targets, gi=gi, buf=buf: [
                (counter.fast_read(line, buf, bplan.steps[gi], regs_in, em, dtype), gi)]
    packs = counter.index_packs(bplan, count.var, counted) if counted else set()
    for pi in packs:
        rewrite[pi] = lambda line, regs_in, targets: []              # the reads index by `t`
    if counted:
        bounds = " and ".join(f"end <= {b}.shape[0]" for b in sorted(set(counted.values())))
        init.append(f"rd = t0 >= 0 and {bounds}")
    products = scratch_products.find(bplan, skip=rewrite)
    scratch_rewrite, scratch = scratch_products.rewrites(bplan, em, found=products)
    rewrite.update(scratch_rewrite)
    init += scratch
    compiled = loop_kernels.rewrites(bplan, em, rewrite)
    init += broadcast_captures.rewrites(bplan, em, captured, inputs, rewrite, skip=compiled)
    if count is not None and count.substitute:
        rewrite[count.step_index] = lambda line, regs_in, targets: []     # computed once after the loop
    fast = compiled_loop.find(bplan, count, n, counted, pairs, products, compiled, packs)
    if fast is not None:
        # the whole loop as one compiled call when it may run (compiled_loop.py), from `tb`
        init += compiled_loop.emit(fast, em, names[n:], count.one)
        lines[-1] = ("for t in range(tb, end):", None)
    lines[-1:-1] = [(text, None) for text in init]
    body = emit_steps(bplan, em, breg, regs, keep=frozenset(keep), rewrite=rewrite)
    inner.extend((text, None if si is None else si + offset) for text, si in body)
    items = return_items(bplan, em, breg)
    if save:
        saved = items[n:]
        inner.append((f"hist.append(({', '.join(saved)}{',' if len(saved) == 1 else ''}))", None))
    moved = [(v, item) for j, (v, item) in enumerate(zip(names[:n], items[:n]))
             if v != item and not (count is not None and count.substitute and j == count.var)]
    if moved:
        inner.append((f"{', '.join(v for v, _ in moved)} = {', '.join(item for _, item in moved)}", None))
    if (has_max and count is None) or save:
        inner.append(("i += 1", None))
    lines.extend(("    " + text, si) for text, si in inner)
    if count is not None and count.substitute:
        lines.append((f"if t0 < end: v{count.var} = {em.bind('_ct', count.scalar_type)}(end - 1) + "
                      f"{em.bind('s', count.one)}", None))
    variant = f"(i, hist, {em.bind('a', saved_names)})" if save else "None"
    lines.append((f"return ({''.join(v + ', ' for v in names[:n])}{variant},)", None))
    # the steps are listed for error mapping only (their deps index their own plans): not interpretable
    plan = Plan(Schedule(tuple(cplan.feeds), tuple(cplan.steps) + tuple(bplan.steps), {}, (), "tuple", 0))
    build(plan, em, ", ".join(signature), lines, fn_name="loop")
    return plan


def _cond_lines(cplan: Plan, em: Emitter, inputs: dict, regs: Registers, has_max: bool) -> list:
    """The lines of a general loop's iteration head: the iteration limit, the cond's steps, the exit."""
    lines = [("if i >= lim: break", None)] if has_max else []
    # cond: every input is kept (the body reads them next)
    creg = dict(inputs)
    lines.extend(emit_steps(cplan, em, creg, regs, keep=frozenset(creg)))
    cres = creg[cplan.returns[0].vid]
    lines.append((f"if not {cres}: break", None))
    if cres.startswith("r"):
        regs.free.append(cres)
    return lines


def _counted_head(count, has_max: bool) -> list:
    """A counted loop's head (counter.py): the range of the counter, capped by `maximum_iterations`."""
    lines = [(f"t0 = int(v{count.var}); end = {count.end()}", None)]
    if has_max:
        lines.append(("end = min(end, t0 + lim)", None))
    lines.append(("for t in range(t0, end):", None))
    return lines
