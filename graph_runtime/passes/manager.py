"""The pass manager and the public entry point `optimize(graph_or_graph_def, fetches, passes=None)`.

Pipeline (Grappler's order, minus what has no meaning here; see docs/architecture.md):

    pruning -> debug_stripper (off by default) -> constant_folding -> arithmetic
    -> common_subexpression -> scale_folding -> loop_invariant -> dependency
    -> [repeat the iterative passes until nothing changes, at most
        `max_iterations` times; Grappler does 2]
    -> pool_activation (MaxPool(Relu(z)) -> Relu(MaxPool(z)), its gradient one op; once)
    -> relu_bias_grad (ReluGrad and the bias's SumToLike over rows -> one op; once)
    -> bias_relu (Relu(AddV2(a, bias)) -> one op; once)
    -> fusion (elementwise groups -> one generated kernel each; once, after
       the rewrites that look at individual ops; graph_runtime/fusion/)
    -> bodies (If/Case/While bodies through this same pipeline, recursively;
       once, after loop_invariant has moved what it hoists out of them)
    -> memory (annotates in-place reuse; once, last)

Non-iterative passes placed before the first iterative one run once first;
the others run once after the loop.  After every pass the manager checks the
graph (`graph.verify()`) when `verify=True` or the environment variable
`GRAPHJIT_VERIFY_PASSES=1` is set (the tests set it), and records a `PassStats`
(nodes before/after, rewrites, time).  A pass that raises is reported as a
`PassError` ("graph pass 'X' failed after passes A, B at op 'n' (Type): ...",
the pass's exception as its cause).  Passes never mutate their input, so the
caller's graph is untouched.  Passes run copy-on-write (`PassContext.probe`): a
pass that changes nothing returns its input graph itself, without copying it,
and the result is the input graph itself when no pass changed anything.  The
graphs passes build and later passes replace are released on the spot
(`Graph._release`: their reference cycles broken, so reference counting frees
them rather than a cyclic collection after the first call).  In
the fixed-point loop a pass is not re-run on a graph it already left
unchanged, so the last round only runs the passes that have not yet seen the
final graph; nor on a graph that differs from one it left unchanged only by
changes that give other passes no work (`PassStats.keeps_fixed_points`: CSE
merging equal constants and nothing else), nor, for an `idempotent` pass
(CSE), on its own output.

`fetches` names everything that must keep its name and meaning: fetched
tensors, fed tensors and target ops (tensors, ops, names 'op:0'/'op', nested
lists/tuples/dicts of them).  The optimized graph has an op of the same name for
each, so callers look them up by name.

Imports sibling pass modules and `graph_runtime` core (`graph`, `graph_import`, `operation`).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Optional

from ..graph import Graph
from ..graph_import import import_graph_def
from ..operation import GraphTensor, Operation
from .core import GraphPass, PassContext, PassError, PassStats, get_pass

DEFAULT_PIPELINE = ("pruning", "unused_outputs", "debug_stripper", "constant_folding", "arithmetic",
                    "common_subexpression", "scale_folding", "loop_invariant", "dependency", "pool_activation",
                    "relu_bias_grad", "bias_relu", "fusion", "bodies", "memory")
DEFAULT_MAX_ITERATIONS = 4


@dataclass
class OptimizationReport:
    """What `optimize` did: one `PassStats` per pass run, totals, and the preserved names."""

    passes: list = field(default_factory=list)
    nodes_before: int = 0
    nodes_after: int = 0
    iterations: int = 0
    seconds: float = 0.0
    preserved: tuple = ()

    def stats_for(self, name: str) -> list:
        return [p for p in self.passes if p.name == name]

    def changes(self, name: Optional[str] = None) -> int:
        return sum(p.changes for p in self.passes if name is None or p.name == name)

    def __str__(self):
        lines = [f"optimize: {self.nodes_before} -> {self.nodes_after} nodes in {self.iterations} iteration(s), "
                 f"{self.seconds * 1e3:.2f} ms"]
        lines += ["  " + p.summary() for p in self.passes]
        return "\n".join(lines)


def _fetch_names(graph: Graph, fetches) -> list:
    out: list = []
    stack = [fetches]
    while stack:
        x = stack.pop()
        if x is None:
            continue
        if isinstance(x, (list, tuple, set, frozenset)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, str):
            out.append(x)
        elif isinstance(x, (GraphTensor, Operation)):
            if x.graph is not graph:
                raise ValueError(f"optimize: fetch {x.name!r} is not an element of the graph being optimized")
            out.append(x.name)
        elif getattr(x, "_is_variable", False):
            continue
        else:
            raise TypeError(f"optimize: cannot interpret fetch {x!r} ({type(x).__name__}); pass tensors, ops or "
                            f"their names")
    return out


def _op_names(graph: Graph, names) -> frozenset:
    ops = set()
    for n in names:
        op_name = n.rpartition(":")[0] if ":" in n else n
        if op_name not in graph._by_name:
            raise KeyError(f"optimize: fetch {n!r} does not name an op of the graph")
        ops.add(op_name)
    return frozenset(ops)


def resolve_pipeline(passes=None, disabled=(), enabled=()) -> list:
    """The GraphPass objects to run: `passes` (names or GraphPass) or the default pipeline, minus `disabled`.

    `enabled`: passes that are off by default (e.g. "debug_stripper") turned on in the default pipeline,
    at their place in `DEFAULT_PIPELINE`.
    """
    disabled = set(disabled or ())
    enabled = set(enabled or ())
    for n in disabled | enabled:
        get_pass(n)   # unknown names are an error, not a silent no-op
    stray = enabled - set(DEFAULT_PIPELINE)
    if stray:
        raise ValueError(f"enabled passes {sorted(stray)} are not in the default pipeline {DEFAULT_PIPELINE}; "
                         f"pass an explicit `passes` list to run them")
    if passes is None:
        chosen = [get_pass(n) for n in DEFAULT_PIPELINE if get_pass(n).default_enabled or n in enabled]
    else:
        chosen = [p if isinstance(p, GraphPass) else get_pass(p) for p in passes]
    return [p for p in chosen if p.name not in disabled]


def _verify_default() -> bool:
    return os.environ.get("GRAPHJIT_VERIFY_PASSES", "") not in ("", "0")


def optimize(graph_or_graph_def, fetches, passes=None, *, disabled=(), verify: Optional[bool] = None,
             keep_stateful: bool = False, max_iterations: int = DEFAULT_MAX_ITERATIONS, options=None, enabled=()):
    """Optimize a graph (or GraphDef) for computing `fetches`; returns `(new_graph, OptimizationReport)`.

    `passes`: pass names (or `GraphPass` objects) in order; None = the default
    pipeline (`DEFAULT_PIPELINE`, passes off by default excluded).  `disabled`:
    names to skip; `enabled`: default-off passes to add (`resolve_pipeline`).  `keep_stateful`: keep side-effecting ops nothing fetches
    (traced function bodies).  `options`: per-pass options (e.g.
    `{"fold_size_limit": 10**5}`), see each pass's docstring.
    """
    graph = _as_graph(graph_or_graph_def)
    names = _fetch_names(graph, fetches)
    options = dict(options or {})
    options.setdefault("disabled_passes", tuple(disabled or ()))    # bodies are optimized the same way
    options.setdefault("enabled_passes", tuple(enabled or ()))
    ctx = PassContext(_op_names(graph, names), keep_stateful, options, probe=True, fetched=frozenset(names))
    pipeline = resolve_pipeline(passes, disabled, enabled)
    report = OptimizationReport(nodes_before=len(graph._ops), preserved=tuple(sorted(ctx.preserve)))
    runner = _PassRunner(ctx, report, _verify_default() if verify is None else verify)
    t_start = time.perf_counter()

    first_iter = next((i for i, p in enumerate(pipeline) if p.iterative), len(pipeline))
    pre = pipeline[:first_iter]
    loop = [p for p in pipeline[first_iter:] if p.iterative]
    post = [p for p in pipeline[first_iter:] if not p.iterative]
    for p in pre:
        graph, _ = runner.run(p, graph, 0)
    iteration = 0
    if loop:
        graph, iteration = _run_to_fixed_point(loop, graph, runner, max_iterations)
    for p in post:
        graph, _ = runner.run(p, graph, iteration)
    report.iterations = iteration
    report.nodes_after = len(graph._ops)
    report.seconds = time.perf_counter() - t_start
    return graph, report


def _as_graph(graph_or_graph_def) -> Graph:
    if isinstance(graph_or_graph_def, dict):
        g = Graph()
        with g.as_default():
            import_graph_def(graph_or_graph_def, name="")
        return g
    if isinstance(graph_or_graph_def, Graph):
        return graph_or_graph_def
    raise TypeError(f"optimize: expected a Graph or a GraphDef dict, got {type(graph_or_graph_def).__name__}")


class _PassRunner:
    """Runs one pass on a graph: times it (a failure becomes a `PassError` naming it), verifies a changed
    graph (`check`), records its `PassStats` in the report, and releases the intermediate graphs the passes
    built once a later pass replaces them."""

    def __init__(self, ctx: PassContext, report: OptimizationReport, check: bool):
        self.ctx, self.report, self.check = ctx, report, check
        self.made: set = set()      # ids of the graphs the passes built (the caller's graph is not one of them)

    def run(self, p: GraphPass, g: Graph, iteration: int) -> tuple:
        t0 = time.perf_counter()
        ctx = self.ctx
        ctx.cursor[0] = None
        try:
            out, stats = p(g, ctx)
        except Exception as e:      # noqa: BLE001 - re-raised, naming the pass, its predecessors and the op
            if isinstance(e, PassError):
                raise
            raise PassError(p.name, tuple(s.name for s in self.report.passes), ctx.cursor[0], e) from e
        stats.seconds = time.perf_counter() - t0
        stats.iteration = iteration
        if out is not g:
            if self.check:
                out.verify()
            self.made.add(id(out))
            if id(g) in self.made:
                g._release()        # an intermediate result nobody else has: freed now, not by the GC
        self.report.passes.append(stats)
        return out, stats


def _run_to_fixed_point(loop: list, graph: Graph, runner: _PassRunner, max_iterations: int) -> tuple:
    """The iterative passes, round after round until a round changes nothing (at most `max_iterations`
    rounds): `(graph, last round)`.

    A pass that changed nothing in graph G is not run on G again: G is its fixed point.  Passes return
    their input graph itself when they change nothing (copy-on-write, `GraphPass.__call__`), so the last
    round only runs the passes that have not seen the final graph yet.
    """
    settled: dict = {}      # pass name -> the graph it last changed nothing in
    iteration = 0
    for iteration in range(1, max(1, max_iterations) + 1):
        changed = False
        for p in loop:
            if settled.get(p.name) is graph:
                continue
            before = graph
            graph, stats = runner.run(p, graph, iteration)
            if stats.changes:
                changed = True
                if stats.keeps_fixed_points:      # e.g. CSE merged only constants: nothing new for others
                    for name, g in settled.items():
                        if g is before:
                            settled[name] = graph
                if p.idempotent:                  # its own output is its fixed point
                    settled[p.name] = graph
            else:
                settled[p.name] = graph
        if not changed:
            break
    return graph, iteration


def run_pass(name_or_pass, graph: Graph, fetches, verify: bool = True, keep_stateful: bool = False,
             options=None) -> tuple:
    """Run one pass alone: `(new_graph, PassStats)` (handy for tests and debugging)."""
    p = name_or_pass if isinstance(name_or_pass, GraphPass) else get_pass(name_or_pass)
    names = _fetch_names(graph, fetches)
    ctx = PassContext(_op_names(graph, names), keep_stateful, dict(options or {}), fetched=frozenset(names))
    out, stats = p(graph, ctx)
    if verify:
        out.verify()
    return out, stats


__all__ = ["optimize", "run_pass", "resolve_pipeline", "OptimizationReport", "DEFAULT_PIPELINE", "PassError"]
