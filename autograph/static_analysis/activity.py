"""Activity analysis: names read and written by statements and expressions.

Scope rules: nested functions, lambdas and comprehensions are separate scopes;
their *free* reads count as reads at the point of definition (an
over-approximation that is safe for liveness), their locals do not.  A nested
def/class counts as a write of its name.  Names starting with `ag__` (the
runtime module) are ignored.  Attribute and subscript targets (`a.b = 1`,
`a[i] = 1`) count as reads of the base name, not writes.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import gast

from ..pyct.walk import Visitor, all_nodes, child_nodes


@dataclass
class Activity:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)

    def merge(self, other: "Activity") -> "Activity":
        self.reads |= other.reads
        self.writes |= other.writes
        return self


def _ignored(name: str) -> bool:
    return name.startswith("ag__")


class _Collector(Visitor):
    def __init__(self):
        self.act = Activity()

    def visit_Name(self, node):
        if _ignored(node.id):
            return
        if isinstance(node.ctx, (gast.Store, gast.Del)):
            self.act.writes.add(node.id)
        elif isinstance(node.ctx, gast.Load):
            self.act.reads.add(node.id)

    def visit_AugAssign(self, node):
        if isinstance(node.target, gast.Name):
            self.act.reads.add(node.target.id)
        self.generic_visit(node)

    def _scope(self, node, params: set[str], body_nodes: list):
        inner = _Collector()
        for b in body_nodes:
            inner.visit(b)
        declared = set()
        for n in all_nodes(node):
            if isinstance(n, (gast.Global, gast.Nonlocal)):
                declared |= set(n.names)
        self.act.reads |= inner.act.reads - (inner.act.writes - declared) - params
        self.act.writes |= inner.act.writes & declared

    def _params(self, args: gast.arguments) -> set[str]:
        names = [a.id for a in args.args + args.posonlyargs + args.kwonlyargs]
        names += [a.id for a in (args.vararg, args.kwarg) if a is not None]
        return set(names)

    def _defaults(self, args: gast.arguments):
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(d)

    def visit_FunctionDef(self, node):
        for d in node.decorator_list:
            self.visit(d)
        self._defaults(node.args)
        self._scope(node, self._params(node.args), node.body)
        self.act.writes.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._defaults(node.args)
        self._scope(node, self._params(node.args), [node.body])

    def visit_ClassDef(self, node):
        for d in node.decorator_list + node.bases:
            self.visit(d)
        self._scope(node, set(), node.body)
        self.act.writes.add(node.name)

    def _comp(self, node, elts):
        inner = _Collector()
        for g in node.generators:
            inner.visit(g.iter)
            inner.visit(g.target)
            for i in g.ifs:
                inner.visit(i)
        for e in elts:
            inner.visit(e)
        self.act.reads |= inner.act.reads - inner.act.writes

    def visit_ListComp(self, node):
        self._comp(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comp(node, [node.key, node.value])

    def visit_Import(self, node):
        for a in node.names:
            self.act.writes.add((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        if node.name is not None:
            self.act.writes.add(node.name.id if isinstance(node.name, gast.Name) else node.name)
        self.generic_visit(node)


_MEMO: list[dict] = []  # the innermost `memoized()` scope's statement activities, by id


@contextlib.contextmanager
def memoized():
    """Within this scope `of` computes a statement's activity once: for analyses run back to back
    on a tree that does not change meanwhile (liveness, definitions, closure analysis each ask for
    every statement).  A list of statements gets the union of its statements' (the same sets a
    single walk collects).  Results may be shared: never mutate them."""
    _MEMO.append({})
    try:
        yield
    finally:
        _MEMO.pop()


def _statement(memo: dict, stmt) -> "Activity":
    hit = memo.get(id(stmt))
    if hit is None:
        hit = memo[id(stmt)] = (stmt, _of((stmt,)))  # holding stmt keeps its id unique
    return hit[1]


def of(*nodes) -> Activity:
    """Reads and writes of the given nodes (statements, expressions, lists)."""
    if _MEMO and len(nodes) == 1:
        n = nodes[0]
        if isinstance(n, gast.stmt):
            return _statement(_MEMO[-1], n)
        if isinstance(n, list) and all(isinstance(s, gast.stmt) for s in n):
            act = Activity()
            for s in n:
                act.merge(_statement(_MEMO[-1], s))
            return act
    return _of(nodes)


def _of(nodes) -> Activity:
    c = _Collector()
    for n in nodes:
        if n is None:
            continue
        for item in (n if isinstance(n, list) else [n]):
            c.visit(item)
    return c.act


def declared_nonlocal(fn_node) -> tuple[set[str], set[str]]:
    """(global names, nonlocal names) declared in a function's own scope."""
    g, nl = set(), set()

    def walk(stmts):
        for s in stmts:
            if isinstance(s, gast.Global):
                g.update(s.names)
            elif isinstance(s, gast.Nonlocal):
                nl.update(s.names)
            elif not isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                for field_ in ("body", "orelse", "finalbody", "handlers"):
                    walk(getattr(s, field_, []) or [])
    walk(fn_node.body if isinstance(fn_node.body, list) else [])
    return g, nl


def params_of(fn_node) -> set[str]:
    return _Collector()._params(fn_node.args)


def closed_over(fn_node) -> set[str]:
    """Locals of `fn_node` that a nested def or lambda reads or writes (its cell
    variables, over-approximated): such a function may run while a converted
    loop or branch holds the name's current value as explicit state."""
    free: set[str] = set()
    for n in all_nodes(gast.Module(body=fn_node.body, type_ignores=[])):
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)):
            act = of(n)
            free |= act.reads | (act.writes - {getattr(n, "name", None)})
    if not free:
        return free          # no nested function: the body's own activity is not needed
    return free & (params_of(fn_node) | of(fn_node.body).writes)


def bound_directly(stmts: list) -> set[str]:
    """Names assigned by `stmts` themselves, not inside any nested scope."""
    out: set[str] = set()

    def walk(node):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            out.add(node.id)
        elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            out.add(node.name)
            return
        elif isinstance(node, gast.Lambda):
            return
        for child in child_nodes(node):
            walk(child)
    for s in stmts:
        walk(s)
    return out
