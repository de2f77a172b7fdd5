"""Graph optimizer figures: node counts and run time before/after optimization.

Run: `python -m benchmarks.bench_optimizer`.  For each workload the same graph
runs through `Session.run` with `SessionConfig(optimize=False)` ("unoptimized"),
with the default pipeline minus fusion ("passes, no fusion": the rewrites
alone) and with the full default pipeline ("optimized").  Ratios are against
hand-written NumPy computing the same result in the same run; each figure is
measured interleaved with its baseline (fastest batch kept), as in
bench_session.py.  Results are checked equal before timing.

Workloads:
- `dup_layer`: a layer with constant subexpressions (weights scaled by a
  product of constants, a bias built from constants) that recomputes
  `tanh(x @ W + b)` three times: constant folding, CSE and scale folding.
- `const_preprocess_mlp`: input normalization whose mean/std are computed in
  the graph from constant tensors, then two dense layers with `x * 1.0`,
  `--h`, `h / 1` leftovers of generated code: folding + arithmetic.
- `loop_invariant`: a 20-iteration `while_loop` whose body recomputes
  `tanh(x) @ W` from loop-invariant inputs: loop-invariant code motion.
- `big_elementwise`: `tanh(x @ w) * 2 + 1` on 512x512 (memory pass: in place).
"""
from __future__ import annotations


import numpy as np

import eager as ek
import graph_runtime as gr
from benchmarks.harness import Row, paired, table

NO_FUSION = gr.SessionConfig(disabled_passes=("fusion",))
VARIANTS = [("unoptimized", gr.SessionConfig(optimize=False)), ("passes, no fusion", NO_FUSION),
            ("optimized", gr.SessionConfig())]




# ------------------------------------------------------------------ workloads
def dup_layer():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((256, 128)).astype(np.float32)
    wv = rng.standard_normal((128, 128)).astype(np.float32) * 0.1
    bv = rng.standard_normal(128).astype(np.float32)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None, 128), name="x")
        scale = ek.constant(np.float32(0.5)) * ek.constant(np.float32(4.0))          # constant subexpression
        w = ek.constant(wv) * scale
        b = ek.constant(bv) + ek.reduce_sum(ek.constant(np.zeros(4, np.float32)))
        h1 = ek.tanh(ek.matmul(x, w) + b)
        h2 = ek.tanh(ek.matmul(x, w) + b)          # the same layer, recomputed
        h3 = ek.tanh(ek.matmul(x, w) + b)
        y = h1 * h2 + h3 * 0.5
    w2 = wv * np.float32(2.0)

    def numpy_fn():
        h = np.tanh(xv @ w2 + bv)
        return h * h + h * np.float32(0.5)
    return "dup_layer (3x tanh(xW+b))", g, y, {x: xv}, numpy_fn


def const_preprocess_mlp():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((1000, 64)).astype(np.float32) * 3 + 1
    xv = rng.standard_normal((128, 64)).astype(np.float32)
    w1 = rng.standard_normal((64, 128)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((128, 10)).astype(np.float32) * 0.1
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None, 64), name="x")
        d = ek.constant(data)
        mean = ek.reduce_mean(d, axis=0)
        std = ek.sqrt(ek.reduce_mean(ek.square(d - mean), axis=0))
        xn = (x - mean) / std
        h = ek.nn.relu(ek.matmul(xn * 1.0, ek.constant(w1)))
        h = -(-h) / 1.0
        y = ek.matmul(h, ek.constant(w2)) * ek.constant(np.float32(0.5))
    mean_np = data.mean(axis=0)
    std_np = np.sqrt(((data - mean_np) ** 2).mean(axis=0))
    w2s = w2 * np.float32(0.5)

    def numpy_fn():
        return np.maximum((xv - mean_np) / std_np @ w1, 0) @ w2s
    return "const_preprocess_mlp", g, y, {x: xv}, numpy_fn


def loop_invariant():
    rng = np.random.default_rng(2)
    xv = rng.standard_normal((64, 64)).astype(np.float32)
    wv = rng.standard_normal((64, 64)).astype(np.float32) * 0.1
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (64, 64), name="x")
        w = ek.constant(wv)

        def body(i, acc):
            return i + 1, acc + ek.matmul(ek.tanh(x), w)
        _, y = ek.while_loop(lambda i, acc: i < 20, body, (ek.constant(0), ek.zeros((64, 64))))

    def numpy_fn():
        m = np.tanh(xv) @ wv
        acc = np.zeros((64, 64), np.float32)
        for _ in range(20):
            acc = acc + m
        return acc
    return "loop_invariant (while, 20 iters)", g, y, {x: xv}, numpy_fn


def big_elementwise():
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((512, 512)).astype(np.float32)
    wv = rng.standard_normal((512, 512)).astype(np.float32) * 0.05
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (512, 512), name="x")
        w = gr.placeholder(ek.float32, (512, 512), name="w")
        y = ek.tanh(ek.matmul(x, w)) * 2.0 + 1.0

    def numpy_fn():
        return np.tanh(xv @ wv) * np.float32(2.0) + np.float32(1.0)
    return "big_elementwise 512x512", g, y, {x: xv, w: wv}, numpy_fn


WORKLOADS = [dup_layer, const_preprocess_mlp, loop_invariant, big_elementwise]


def rows() -> tuple[list, list]:
    out, counts = [], []
    for make in WORKLOADS:
        name, g, y, feed, numpy_fn = make()
        expected = numpy_fn()
        for variant, cfg in VARIANTS:
            sess = gr.Session(graph=g, config=cfg)
            got = sess.run(y, feed)
            np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-4)
            rep = sess.last_optimization_report
            n_after = rep.nodes_after if rep is not None else len(g.get_operations())
            seconds, base = paired(lambda: sess.run(y, feed), numpy_fn)
            out.append(Row(name, variant, seconds, base, f"nodes {len(g.get_operations())} -> {n_after}"))
            if rep is not None and variant == "optimized":
                counts.append((name, rep))
    return out, counts


def main() -> None:
    r, counts = rows()
    print(table(r))
    print()
    for name, rep in counts:
        print(f"{name}: {rep.nodes_before} -> {rep.nodes_after} nodes; rewrites: " +
              ", ".join(f"{p}={n}" for p, n in _per_pass(rep).items() if n))


def _per_pass(rep) -> dict:
    out: dict = {}
    for p in rep.passes:
        out[p.name] = out.get(p.name, 0) + p.changes
    return out


if __name__ == "__main__":
    main()
