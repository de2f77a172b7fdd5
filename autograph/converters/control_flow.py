"""Control flow: `if`, `while` and `for` become calls to runtime operators.

Before:
    if x > 0:
        y = x
    else:
        y = -x
    while i < n:
        s += i
        i += 1

After:
    def if_body(y):
        y = x
        return (y,)
    def else_body(y):
        y = -x
        return (y,)
    y = ag__.Undefined('y')
    (y,) = ag__.if_stmt(x > 0, if_body, else_body, (y,), ('y',))
    def loop_test(i, s):
        return i < n
    def loop_body(i, s):
        s += i
        i += 1
        return (i, s)
    (i, s) = ag__.while_stmt(loop_test, loop_body, (i, s), ('i', 's'), None)

State is passed as explicit tuples.  Branch outputs are the names modified
in a branch and live after the `if`; branch inputs also include modified
names defined before it.  Loop variables are the names modified in the body
and live at the loop head.  `for target in it: body` becomes
`ag__.for_stmt(it, extra_test, loop_body, state, names, opts)` with
`def loop_body(itr, *state): target = itr; body`.  A name that is an output
or loop variable but not definitely defined before is pre-set to
`ag__.Undefined('name')`.  A variable that a nested user function closes
over stays that function's view of the current value: generated functions
receive it under a fresh name and store it with `nonlocal` (TF keeps all loop
state in the enclosing scope for the same reason).  Composite names the
block writes (`x['b']`, `y[0]`, `obj.attr`, see `static_analysis.composites`)
are passed as get/set functions (`state_functions`) in a last `state_fns`
argument, and carried by staged constructs like the explicit state.  Nested statements are converted first (bottom-up),
using annotations computed on the function before any of them changed.
"""
from __future__ import annotations

import gast

from ..pyct import anno, origin_info, templates, transformer
from ..pyct.anno import Key
from ..static_analysis import activity, composites, definitions, liveness
from . import state_functions


class ControlFlowTransformer(transformer.Base):

    def __init__(self, ctx, declared: set[str], global_names: set[str], nonlocal_names: set[str],
                 cells: set[str] = frozenset(), fn_writes: frozenset = frozenset()):
        super().__init__(ctx)
        self.fn_writes = fn_writes
        self.declared = declared
        self.global_names = global_names
        self.nonlocal_names = nonlocal_names
        self.cells = set(cells) - declared

    # --- helpers ---------------------------------------------------------
    def _decls(self, stmts, cell_params=()) -> list:
        written = activity.of(stmts).writes
        out = []
        for kw, names in (("global", self.global_names),
                          ("nonlocal", self.nonlocal_names | self.cells)):
            hit = sorted((written & names) | (set(cell_params) if kw == "nonlocal" else set()))
            if hit:
                out += templates.replace(f"{kw} {', '.join(hit)}")
        return out

    def _def(self, name: str, params: list, body: list) -> gast.FunctionDef:
        """`def name(params): body`.  A parameter that a nested user function
        closes over is received under a fresh name and stored into the
        enclosing function's variable (`nonlocal`), so calls made while the
        state is explicit see its current value, as in Python."""
        cell_params = [p for p in params if p in self.cells]
        renamed = {p: self.ctx.namer.new(f"{p}_state") for p in cell_params}
        rebind = []
        for p in cell_params:
            rebind += templates.replace("p = p_state", p=p, p_state=renamed[p])
        fn = templates.replace("def fn(params):\n    body", fn=name,
                               params=[renamed.get(p, p) for p in params],
                               body=self._decls(body, cell_params) + rebind + body)[0]
        anno.set_(fn, Key.GENERATED, True)
        return fn

    def _closure_live(self, defined: set) -> set:
        """Closed-over names defined before a statement: a nested function may
        read them at any later call, which liveness cannot see, so they stay
        live (branch outputs, loop variables) when the statement modifies them."""
        return self.cells & defined

    def _function(self, name: str, params: list, body: list, returns: list) -> gast.FunctionDef:
        ret = templates.replace("return outputs", outputs=returns) if returns else \
            templates.replace("return ()")
        return self._def(name, params, body + ret)

    def _test_function(self, name: str, params: list, test: gast.expr) -> gast.FunctionDef:
        return self._def(name, params, templates.replace("return test", test=test))

    def _prefill(self, names) -> list:
        out = []
        for n in names:
            out += templates.replace("n = ag__.Undefined(label)", n=n, label=templates.literal(n),
                                     ag__=self.ctx.ag_name)
        return out

    def _assign(self, outputs: list, call: gast.expr) -> list:
        if not outputs:
            return [gast.Expr(value=call)]
        return templates.replace("outputs = call", outputs=outputs, call=call)

    def _options(self, node) -> gast.expr:
        opts = dict(anno.get(node, Key.LOOP_OPTIONS) or {})
        if anno.get(node, Key.JUMP_FLAGS):
            opts["jump_flags"] = templates.literal(tuple(anno.get(node, Key.JUMP_FLAGS)))
        if not opts:
            return templates.literal(None)
        return gast.Dict(keys=[templates.literal(k) for k in opts], values=list(opts.values()))

    def _composite_state(self, node, stmts, modified: set[str]):
        """Get/set functions for the composites (`x['b']`, `obj.attr`) the
        block writes, and the call argument passing them (or None)."""
        defined = anno.get(node, Key.DEFINED_IN, set())
        found = composites.state_of(stmts, modified,
                                    lambda n: n in defined or n not in self.fn_writes)
        return state_functions.build(self.ctx, found)

    @staticmethod
    def _with_state(call: gast.Call, arg, n_before: int) -> gast.Call:
        """Appends the `state_fns` argument (after `n_before` positional ones)."""
        if arg is not None:
            while len(call.args) < n_before:
                call.args.append(templates.literal(None))
            call.args.append(arg)
        return call

    # --- statements ------------------------------------------------------
    def visit_If(self, node):
        modified = (activity.of(node.body).writes | activity.of(node.orelse).writes) - self.declared
        defined = anno.get(node, Key.DEFINED_IN, set())
        live_out = anno.get(node, Key.LIVE_OUT, set()) | self._closure_live(defined)
        read_first = liveness.block(node.body, live_out) | liveness.block(node.orelse, live_out)
        state_defs, state_arg = self._composite_state(
            node, node.body + node.orelse,
            activity.of(node.body).writes | activity.of(node.orelse).writes)
        self.generic_visit(node)
        outputs = sorted(modified & live_out)
        params = sorted(set(outputs) | (modified & defined & read_first))
        body_name = self.ctx.namer.new("if_body")
        else_name = self.ctx.namer.new("else_body")
        call = templates.replace_as_expression(
            "ag__.if_stmt(test, body, orelse, inputs, names)", ag__=self.ctx.ag_name,
            test=node.test, body=body_name, orelse=else_name,
            inputs=gast.Tuple(elts=[templates.name_node(p) for p in params], ctx=gast.Load()),
            names=templates.literal(tuple(outputs)))
        self._with_state(call, state_arg, 5)
        new = (self._prefill([n for n in outputs if n not in defined])
               + [self._function(body_name, params, node.body, outputs),
                  self._function(else_name, params, node.orelse or [], outputs)]
               + state_defs + self._assign(outputs, call))
        origin_info.inherit(new, node)
        return new

    def _loop_vars(self, node, extra_writes=frozenset()):
        modified = (activity.of(node.body).writes | set(extra_writes)) - self.declared
        defined = anno.get(node, Key.DEFINED_IN, set())
        head = anno.get(node, Key.LIVE_HEAD, set()) | self._closure_live(defined)
        loop_vars = sorted(modified & head)
        return loop_vars, self._prefill([n for n in loop_vars if n not in defined])

    def visit_While(self, node):
        loop_vars, prefill = self._loop_vars(node)
        state_defs, state_arg = self._composite_state(node, node.body, activity.of(node.body).writes)
        self.generic_visit(node)
        test_name = self.ctx.namer.new("loop_test")
        body_name = self.ctx.namer.new("loop_body")
        test_fn = self._test_function(test_name, loop_vars, node.test)
        call = templates.replace_as_expression(
            "ag__.while_stmt(test, body, state, names, opts)", ag__=self.ctx.ag_name,
            test=test_name, body=body_name,
            state=gast.Tuple(elts=[templates.name_node(v) for v in loop_vars], ctx=gast.Load()),
            names=templates.literal(tuple(loop_vars)), opts=self._options(node))
        self._with_state(call, state_arg, 5)
        new = prefill + [test_fn, self._function(body_name, loop_vars, node.body, loop_vars)] \
            + state_defs + self._assign(loop_vars, call)
        origin_info.inherit(new, node)
        return new

    def visit_For(self, node):
        target_writes = activity.of(node.target).writes
        loop_vars, prefill = self._loop_vars(node, target_writes)
        state_defs, state_arg = self._composite_state(
            node, [node], activity.of(node.body).writes | target_writes)
        self.generic_visit(node)
        body_name = self.ctx.namer.new("loop_body")
        itr = self.ctx.namer.new("itr")
        unpack = templates.replace("target = itr", target=node.target, itr=itr)
        body_fn = self._function(body_name, [itr] + loop_vars, unpack + node.body, loop_vars)
        extra = anno.get(node, Key.EXTRA_TEST)
        fns = [body_fn]
        if extra is not None:
            extra_name = self.ctx.namer.new("extra_test")
            extra_fn = self._test_function(extra_name, loop_vars, extra)
            fns.insert(0, extra_fn)
        call = templates.replace_as_expression(
            "ag__.for_stmt(iterated, extra, body, state, names, opts)", ag__=self.ctx.ag_name,
            iterated=node.iter, extra=extra_name if extra is not None else templates.literal(None),
            body=body_name,
            state=gast.Tuple(elts=[templates.name_node(v) for v in loop_vars], ctx=gast.Load()),
            names=templates.literal(tuple(loop_vars)), opts=self._options(node))
        self._with_state(call, state_arg, 6)
        new = prefill + fns + state_defs + self._assign(loop_vars, call)
        origin_info.inherit(new, node)
        return new


_LOWERED = (gast.If, gast.While, gast.For)          # what ControlFlowTransformer rewrites
_NESTED = frozenset({gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda})   # what closed_over looks into
_BODIES = tuple(c for c in (gast.stmt, gast.excepthandler, getattr(gast, "match_case", None)) if c is not None)


def has_control_flow(stmts: list) -> bool:
    """Is there an `if`, `while` or `for` that ControlFlowTransformer would lower: in `stmts` or in the
    statements nested in them, generated functions included, user-written nested defs and classes not
    (it does not enter them).  Statements only: none sit inside an expression."""
    stack = list(stmts)
    while stack:
        s = stack.pop()
        if isinstance(s, _LOWERED):
            return True
        if isinstance(s, (gast.ClassDef, gast.AsyncFunctionDef)) or \
                isinstance(s, gast.FunctionDef) and not anno.get(s, Key.GENERATED):
            continue           # transformer.Base enters generated defs only
        for field in s._fields:
            value = getattr(s, field, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, _BODIES))
    return False


def transform(fn_node, ctx):
    if isinstance(fn_node, gast.Lambda):
        return fn_node
    # Without if/while/for nothing is lowered: the liveness and definitions analyses (which only the
    # lowering reads) are skipped, the walk over the tree too (a long straight-line function costs only its
    # length)
    lowered = has_control_flow(fn_node.body)
    with activity.memoized():  # the analyses below read the same statements' activity
        if lowered:
            liveness.analyze(fn_node)
            definitions.analyze(fn_node)
        g, nl = activity.declared_nonlocal(fn_node)
        if ctx.kinds is not None and not ctx.kinds & _NESTED:
            cells = set()     # no nested function or lambda (ctx.kinds, impl/pipeline.py): nothing closes over
        else:
            cells = activity.closed_over(fn_node) - g - nl
        if lowered:
            fn_writes = frozenset(activity.of(fn_node.body).writes | activity.params_of(fn_node))
    if lowered:
        fn_node = ControlFlowTransformer(ctx, g | nl, g, nl, cells, fn_writes).transform(fn_node)
    # A closed-over name that only generated functions assign still needs a
    # binding here for their `nonlocal` declarations.
    unbound = sorted(cells - activity.params_of(fn_node) - activity.bound_directly(fn_node.body)) if cells else []
    if unbound:
        prologue = ControlFlowTransformer(ctx, set(), set(), set())._prefill(unbound)
        origin_info.inherit(prologue, fn_node.body[0])
        body = fn_node.body
        doc = 1 if isinstance(body[0], gast.Expr) and isinstance(
            getattr(body[0].value, "value", None), str) else 0
        fn_node.body = body[:doc] + prologue + body[doc:]
    return fn_node
