"""What a compiled graph is: an immutable `Schedule` of `Step`s, and the `Plan` that pairs it with generated code.

- `Step`: one op lowered for execution.  `call(values, executor)` computes its
  result from the value list; `store(values, result)` writes its outputs;
  `apply` does both and names the op in an error.  Every interpreting
  executor (executors.py) runs steps through these, so there is one meaning of
  "run a step".  An op whose OpDef has `extra["interpret"]` (ops holding
  bodies) is given the executor: `interpret(op, executor) -> callable(*args)`
  runs its bodies through that same executor (`executor.run_body(plan, args)`).
- `ReturnItem`: one entry of a plan's result (a fetched value, None for an op
  target, a variable's value after the run).
- `Schedule` (frozen): feeds, steps, constants, returns, container, value
  count, last use of every value, feed converters, and what a dependency-driven
  executor needs (consumers, in-degrees, reference counts, fetched ids),
  computed once here.  `initial_values` and `finish` are the two ends of every
  interpreted run.
- `Plan`: a `Schedule` plus the generated function (codegen.py: `fn`,
  `source`, `line_to_step`, `filename`) and the optimizer's report.  Calling
  the plan runs the generated code; `map_error` names the op that failed.

Imports `eager` and `runtime_errors` only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from eager.variables import read_kernel

from .runtime_errors import op_error


@dataclass(eq=False)
class Step:
    """One op lowered for execution: `fn(*input values)` (attrs bound), or a raw `kernel` + `attrs`."""

    op: Any
    kernel: Callable
    attrs: dict
    inputs: tuple            # value ids
    outputs: tuple           # value id per output, -1 when the output is discarded
    fn: Callable = None      # kernel with attrs bound (interpreter / thread pool)
    noop: bool = False
    deps: tuple = ()         # step indices that must finish first (data + control + stateful order)
    interpret: Optional[Callable] = None   # `interpret(executor) -> callable(*args)`: bodies via the executor

    def call(self, values, executor=None):
        """The step's raw result on `values` (None for a NoOp); bodies run through `executor` if given."""
        if self.noop:
            return None
        args = [values[v] for v in self.inputs]
        if executor is not None and self.interpret is not None:
            return self.interpret(executor)(*args)
        return self.fn(*args)

    def store(self, values, res) -> tuple:
        """Write the outputs of result `res` into `values`; returns the output values."""
        n = len(self.outputs)
        outs = (res,) if n == 1 else (tuple(res) if n else ())
        for vid, val in zip(self.outputs, outs):
            if vid >= 0:
                values[vid] = val
        return outs

    def apply(self, values, executor=None) -> tuple:
        try:
            res = self.call(values, executor)
        except Exception as e:
            raise op_error(self.op, e) from None
        return self.store(values, res)


@dataclass(eq=False)
class ReturnItem:
    """One entry of a plan's result: a fetched value id, a constant None (op target) or a variable read."""

    kind: str                # "value" | "none" | "var"
    tensor: Any = None       # the fetched graph tensor (kind "value")
    var: Any = None          # the variable read after the run (kind "var")
    vid: int = -1            # resolved by compile_plan
    copy: bool = False       # return a copy (the value aliases a constant or a variable's storage)


@dataclass(frozen=True, eq=False)
class Schedule:
    feeds: tuple
    steps: tuple
    consts: dict              # value id -> value
    returns: tuple            # ReturnItem per result entry
    container: str            # "single" | "list" | "tuple"
    n_values: int
    last_use: dict = field(default_factory=dict)
    converters: tuple = ()
    consumers: tuple = ()     # per step: the steps that depend on it
    indegree: tuple = ()      # per step: len(deps)
    refcount: dict = field(default_factory=dict)    # value id -> number of step inputs reading it
    fetched: frozenset = frozenset()                # value ids returned

    @classmethod
    def build(cls, feeds, steps, consts, returns, container, n_values, last_use=None, converters=()):
        steps = tuple(steps)
        consumers = [[] for _ in steps]
        for i, s in enumerate(steps):
            for d in s.deps:
                consumers[d].append(i)
        refcount: dict = {}
        for s in steps:
            for v in s.inputs:
                refcount[v] = refcount.get(v, 0) + 1
        return cls(tuple(feeds), steps, dict(consts), tuple(returns), container, n_values, dict(last_use or {}),
                   tuple(converters), tuple(tuple(c) for c in consumers), tuple(len(s.deps) for s in steps),
                   refcount, frozenset(r.vid for r in returns if r.kind == "value"))

    def initial_values(self, feed_values) -> list:
        values: list = [None] * self.n_values
        for i, (conv, v) in enumerate(zip(self.converters, feed_values)):
            values[i] = conv(v)
        for vid, v in self.consts.items():
            values[vid] = v
        return values

    @staticmethod
    def result(r, values) -> Any:
        """The value of return item `r` given the run's `values` (a copy where it aliases storage)."""
        if r.kind == "value":
            return values[r.vid].copy() if r.copy else values[r.vid]
        if r.kind == "var":
            return read_kernel(r.var).copy()
        return None

    def finish(self, values) -> Any:
        out = [self.result(r, values) for r in self.returns]
        if self.container == "single":
            return out[0]
        return out if self.container == "list" else tuple(out)


@dataclass(eq=False)
class Plan:
    schedule: Schedule
    fn: Optional[Callable] = None     # the generated function (codegen.build)
    source: str = ""
    line_to_step: dict = field(default_factory=dict)
    filename: str = ""
    optimization_report: Any = None   # set by the pipeline's optimize stage (None: not optimized)
    partition_graphs: list = field(default_factory=list)   # the graph(s) that run (pipeline: placed, optimized)

    feeds = property(lambda self: self.schedule.feeds)
    steps = property(lambda self: self.schedule.steps)
    consts = property(lambda self: self.schedule.consts)
    returns = property(lambda self: self.schedule.returns)
    container = property(lambda self: self.schedule.container)
    n_values = property(lambda self: self.schedule.n_values)
    last_use = property(lambda self: self.schedule.last_use)
    converters = property(lambda self: self.schedule.converters)

    def __call__(self, *feed_values):
        try:
            return self.fn(*feed_values)
        except Exception as e:
            raise self.map_error(e) from None

    def map_error(self, exc: BaseException) -> BaseException:
        """Rewrap an exception raised inside the generated code so it names the failing op."""
        tb = exc.__traceback__
        step = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                step = self.line_to_step.get(tb.tb_lineno)
            tb = tb.tb_next
        if step is None:
            return exc
        new = op_error(self.steps[step].op, exc)
        if new is not exc:
            new.__traceback__ = exc.__traceback__
        return new
