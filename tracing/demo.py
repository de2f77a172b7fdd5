"""`graphjit demo`: a guided tour of graphjit in under 30 seconds.

Seven short steps, each printing the code it runs and what came out: eager
ops; the same function under `@function`; Python side effects at trace time;
retracing and `explain_retracing()`; AutoGraph's `to_code` for a function
with an `if` inside a `while`; a speed table (eager vs `@function` vs
hand-written NumPy, timed in this run); save and load.  The demo's functions
live at module level in this file because AutoGraph reads source code.

Imports `numpy`, `eager`, `autograph` and the rest of `tracing`.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import textwrap
import time

import numpy as np

import eager as ek

from autograph import to_code

from .function import function
from .save import load, save
from .timing import Progress, SpeedRow, measure, speed_table


# ------------------------------------------------------------------ the tour's functions
# The functions a user would write.  AutoGraph converts user code only (never graphjit's own
# packages), so the tour writes them to a temporary module and imports it, as a user's file.
USER_CODE = '''\
import eager as ek


def dense_relu(x, w, b):
    return ek.nn.relu(ek.matmul(x, w) + b)


def noisy_square(x):
    print("  (Python print: tracing noisy_square)")   # runs while tracing, not on replays
    return x * x


def call_with_new_shapes(fast, w, b):
    fast(ek.ones((5, 2)), w, b)
    fast(ek.ones((7, 2)), w, b)


def collatz_steps(n):
    steps = ek.constant(0)
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
'''


def _user_module(directory: str):
    path = os.path.join(directory, "graphjit_demo_code.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(USER_CODE)
    spec = importlib.util.spec_from_file_location("graphjit_demo_code", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def chain(ops, x):
    """20 small elementwise ops, written once for `ops` = numpy or eager."""
    for _ in range(4):
        x = ops.tanh(x)
        x = ops.multiply(x, 1.5)
        x = ops.add(x, 0.25)
        x = ops.sin(x)
        x = ops.subtract(x, 0.125)
    return x


def _mlp_numpy_step(params, x, y, lr=np.float32(0.1)):
    w1, b1, w2, b2 = params
    h_pre = x @ w1 + b1
    h = np.maximum(h_pre, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    d = (p - y) / np.float32(x.shape[0])
    dh = (d @ w2.T) * (h_pre > 0)
    for param, g in zip(params, (x.T @ dh, dh.sum(0), h.T @ d, d.sum(0))):
        param -= lr * g


def _mlp_workload(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]
    params = [(rng.standard_normal((32, 64)) * 0.1).astype(np.float32), np.zeros(64, np.float32),
              (rng.standard_normal((64, 10)) * 0.1).astype(np.float32), np.zeros(10, np.float32)]
    variables = [ek.Variable(p.copy()) for p in params]
    opt = ek.optimizers.SGD(0.1)

    def step(x, y):
        with ek.GradientTape() as tape:
            logits = ek.matmul(ek.nn.relu(ek.matmul(x, variables[0]) + variables[1]), variables[2]) + variables[3]
            loss = ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return x, y, params, step


# ------------------------------------------------------------------ the tour
class _Tour:
    def __init__(self, out, quick: bool):
        self.out = out
        self.quick = quick
        self.n = 0

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def step(self, title: str, explanation: str) -> None:
        self.n += 1
        self.say(f"\n== Step {self.n}. {title} " + "=" * max(3, 60 - len(title)))
        self.say(textwrap.fill(explanation, 88))

    def code(self, text: str) -> None:
        self.say(textwrap.indent(textwrap.dedent(text).strip("\n"), "  >>> "))


def run_demo(out=None, quick: bool = False) -> None:
    """Print the tour to `out` (stdout); `quick` shortens the timings (used by the tests)."""
    with tempfile.TemporaryDirectory(prefix="graphjit-demo-") as d:
        _tour(_Tour(out or sys.stdout, quick), _user_module(d), d)


def _tour(t: "_Tour", user, workdir: str) -> None:
    dense_relu, noisy_square, collatz_steps = user.dense_relu, user.noisy_square, user.collatz_steps
    t0 = time.perf_counter()
    t.say("graphjit: eager NumPy-backed tensors, and @function to trace them into optimized graphs.")

    t.step("Eager tensors", "Ops run immediately, like NumPy; tensors print their values.")
    x = ek.constant([[1.0, 2.0], [3.0, 4.0]])
    t.code("x = ek.constant([[1.0, 2.0], [3.0, 4.0]])\nek.reduce_sum(x @ x)")
    t.say(f"  {ek.reduce_sum(x @ x)!r}")

    t.step("@function", "Decorating a function traces it once into a graph (per input signature) and "
           "then replays the compiled graph: same results, less Python per call.")
    w = ek.Variable(ek.random.normal((2, 3), seed=0), name="w")
    b = ek.Variable(ek.zeros((3,)), name="b")
    fast = function(dense_relu)
    t.code("fast = function(dense_relu)      # def dense_relu(x, w, b): relu(x @ w + b)\n"
           "fast(x, w, b)")
    same = np.allclose(fast(x, w, b).numpy(), dense_relu(x, w, b).numpy())
    t.say(f"  same result as eager: {same}; traces so far: {fast.experimental_get_tracing_count()}")
    t.say("  the traced graph:")
    t.say(textwrap.indent(str(fast.get_concrete_function(x, w, b).graph), "    "))

    t.step("Python side effects run at trace time", "A Python print() inside a traced function runs "
           "while tracing only; replays run the graph, not your Python. Use ek.print to print at every call.")
    sq = function(noisy_square)
    t.code("sq = function(noisy_square)\nsq(x); sq(x); sq(x)")
    for _ in range(3):
        sq(x)
    t.say(f"  three calls, one trace: tracing count = {sq.experimental_get_tracing_count()}")

    t.step("Retracing, explained", "A new input shape or dtype, or a different Python value, needs a new "
           "graph. graphjit records why each trace happened.")
    t.code("fast(ek.ones((5, 2)), w, b)        # new shape\nfast(ek.ones((7, 2)), w, b)        # another one\n"
           "print(fast.explain_retracing())")
    user.call_with_new_shapes(fast, w, b)
    t.say(textwrap.indent(fast.explain_retracing(), "  "))

    t.step("AutoGraph", "Python `if`/`while` on tensors become graph control flow (cond / while_loop). "
           "autograph.to_code shows the converted source:")
    src = USER_CODE[USER_CODE.index("def collatz_steps"):]
    t.say(textwrap.indent(src.rstrip(), "  "))
    t.say("  converted:")
    t.say(textwrap.indent(to_code(collatz_steps).strip("\n"), "    "))
    steps = function(collatz_steps)(ek.constant(27))
    t.say(f"  function(collatz_steps)(27) = {int(steps)} steps (one graph with a While op holding an If)")

    _speed(t)

    t.step("Deploy", "tracing.save writes the traced graphs and variable values as data; tracing.load runs "
           "them in a process that does not have your source.")
    predict = function(lambda v: dense_relu(v, w, b))
    expected = predict(x).numpy()
    path = os.path.join(workdir, "predict")
    save({"predict": predict}, path)
    loaded = load(path)
    t.code("predict = function(lambda x: dense_relu(x, w, b))\npredict(x)\n"
           "tracing.save({'predict': predict}, path)\nm = tracing.load(path)\nm.predict(x)")
    t.say(f"  same result after loading: {np.allclose(loaded.predict(x).numpy(), expected)}; restored variables: "
          f"{', '.join(v.name for v in loaded.variables)}; files: {', '.join(sorted(os.listdir(path)))}")
    t.say("\nNext: `graphjit graph FILE:FUNC --out g.html` draws a graph (no Graphviz needed), `graphjit show DIR` "
          "inspects a saved function, `graphjit bench` runs the benchmark suite (from a source checkout), and examples/ has "
          "real programs.")
    t.say(f"(tour took {time.perf_counter() - t0:.1f} s)")


def _speed(t: _Tour) -> None:
    t.step("Speed", "Median time per call, measured now on this machine: eager ops, the same code under "
           "@function, and hand-written NumPy.")
    budget = 0.03 if t.quick else 0.25
    rows = []
    xs = np.random.default_rng(1).standard_normal((100,)).astype(np.float32)
    xt = ek.constant(xs)
    fchain = function(lambda v: chain(ek, v))
    x, y, params, step = _mlp_workload()
    fstep = function(step)
    xe, ye = ek.constant(x), ek.constant(y)
    np_params = [p.copy() for p in params]
    jobs = [("20-op elementwise chain, 100 f32", "eager", lambda: chain(ek, xt)),
            ("20-op elementwise chain, 100 f32", "@function", lambda: fchain(xt)),
            ("20-op elementwise chain, 100 f32", "NumPy", lambda: chain(np, xs)),
            ("MLP 32-64-10 train step, batch 64", "eager", lambda: step(xe, ye)),
            ("MLP 32-64-10 train step, batch 64", "@function", lambda: fstep(xe, ye)),
            ("MLP 32-64-10 train step, batch 64", "NumPy", lambda: _mlp_numpy_step(np_params, x, y))]
    table: dict = {}
    with Progress(len(jobs), "timing") as bar:
        for workload, column, fn in jobs:
            bar.start(f"{workload}: {column}")
            table.setdefault(workload, SpeedRow(workload)).times[column] = measure(fn, budget=budget)
            bar.step(f"{workload}: {column}")
    rows = list(table.values())
    t.say(textwrap.indent(speed_table(rows), "  "))
    t.say("  (ratios < 1x are faster than NumPy; the speedup column is eager time / @function time)")
