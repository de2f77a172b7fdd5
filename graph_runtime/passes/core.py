"""Records shared by every pass: `PassContext`, `PassStats`, `GraphPass` and the pass registry.

A pass is a named pure function `fn(graph, ctx) -> (graph, PassStats)`: it never
mutates `graph` (it builds a new one through `Rewriter`, or returns `graph`
itself when it changes nothing under `ctx.probe`, copy-on-write); `stats.changes`
counts the rewrites it applied (0 means "nothing to do", which is how the
manager detects a fixed point).  `ctx` carries what every pass must respect:
the names of the ops to preserve (fed/fetched tensors' producers and target
ops) and options.

Each pass module registers itself with `register_pass(GraphPass(...))`; the
manager looks passes up by name (`get_pass`), so `SessionConfig(disabled_passes=
("arithmetic",))` names them.

Imports nothing from the project.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable


class GraphChanged(BaseException):
    """Raised by a probing `Rewriter` at the first change it is asked to make (see `GraphPass.__call__`).

    A BaseException so that a pass's `except Exception` around a kernel or an
    inference never swallows it."""


@dataclass(frozen=True)
class PassContext:
    """What a pass must respect: `preserve` (op names kept with their meaning), options."""

    preserve: frozenset = frozenset()
    keep_stateful: bool = False           # pruning keeps side-effecting ops even when nothing needs them
    options: dict = field(default_factory=dict)
    probe: bool = False                   # Rewriters start copy-on-write (see GraphPass.__call__)
    fetched: frozenset = frozenset()      # the caller's names as given: "op:i" tensors, bare names whole ops
    # the source op a pass's Rewriter last looked at (`Rewriter.inputs/copy/emit`), so that a pass that fails
    # can be reported with the op it was working on (`PassError`)
    cursor: list = field(default_factory=lambda: [None], compare=False)

    def output_needed(self, op, i: int) -> bool:
        """True when the caller fetches or feeds output `i` of `op` by name (or names the whole op)."""
        return op._name in self.preserve and (op._name in self.fetched or f"{op._name}:{i}" in self.fetched)

    def option(self, name: str, default=None):
        return self.options.get(name, default)


class PassError(RuntimeError):
    """A pass raised: names the pass, the passes that ran before it and the op it was working on.

    The pass's own exception is the `__cause__`.  Passes are pure functions of their input graph, so
    running that graph through the passes named here reproduces the failure.
    """

    def __init__(self, pass_name: str, previous: tuple, op, cause: BaseException):
        self.pass_name, self.previous, self.op = pass_name, tuple(previous), op
        after = f" after passes {', '.join(previous)}" if previous else " (the first pass)"
        at = f" at op {op.name!r} ({op.type})" if op is not None else ""
        super().__init__(f"graph pass {pass_name!r} failed{after}{at}: {type(cause).__name__}: {cause}")


@dataclass
class PassStats:
    """What one run of one pass did."""

    name: str
    nodes_before: int = 0
    nodes_after: int = 0
    changes: int = 0                      # rewrites applied (0: the pass found nothing to do)
    seconds: float = 0.0
    details: dict = field(default_factory=dict)   # rule or reason -> count
    iteration: int = 0
    # the changes give no other pass new work (e.g. only equal constants merged): a pass that had nothing to
    # do on the input has nothing to do on the output either (the manager does not re-run it)
    keeps_fixed_points: bool = False

    def summary(self) -> str:
        det = ", ".join(f"{k}: {v}" for k, v in sorted(self.details.items()))
        return (f"{self.name:<22} {self.nodes_before:>6} -> {self.nodes_after:<6} {self.changes:>5} changes "
                f"{self.seconds * 1e3:8.2f} ms" + (f"  ({det})" if det else ""))


@dataclass(frozen=True)
class GraphPass:
    """A named graph-to-graph pass.  `iterative`: worth re-running until nothing changes.  `idempotent`:
    its output is its own fixed point (a second run on it changes nothing: the manager does not do it)."""

    name: str
    fn: Callable
    doc: str = ""
    iterative: bool = True
    default_enabled: bool = True
    idempotent: bool = False

    def __call__(self, graph, ctx: PassContext):
        """Run the pass.  With `ctx.probe`, it first runs copy-on-write: its Rewriters build nothing and
        return the input graph itself when the pass changes nothing (one scan, no copy); at the first
        change they raise `GraphChanged` and the pass runs again normally (passes are pure functions
        of their input, so the second run sees exactly what the first one saw)."""
        if ctx.probe:
            try:
                return self.fn(graph, ctx)
            except GraphChanged:
                ctx = replace(ctx, probe=False)
        return self.fn(graph, ctx)


_PASSES: dict = {}


def register_pass(p: GraphPass) -> GraphPass:
    if p.name in _PASSES:
        raise ValueError(f"graph pass {p.name!r} is already registered")
    _PASSES[p.name] = p
    return p


def get_pass(name: str) -> GraphPass:
    try:
        return _PASSES[name]
    except KeyError:
        raise ValueError(f"unknown graph optimization pass {name!r}; known passes: {sorted(_PASSES)}") from None


def registered_passes() -> dict:
    return dict(_PASSES)


def make_stats(name: str, before, after, rw=None) -> PassStats:
    """Stats for a pass that produced `after` from `before` with rewriter `rw`."""
    return PassStats(name, len(before._ops), len(after._ops), rw.changes if rw is not None else 0,
                     details=dict(rw.notes) if rw is not None else {})
