"""eager.data figures: a pipeline feeding the digits MLP step, and a pure input pipeline.

1. Digits MLP (64-64-10, Adam, batch 64): `from_tensor_slices -> shuffle ->
   batch(64) -> map(normalise) -> prefetch(2)` feeding the @function train
   step (and the same with `map` before `batch`: its normalising function is
   row-wise exact, so eager.data runs it once per batch too,
   eager/data/vectorize.py).  Reported per epoch: the input pipeline alone, the train steps alone
   (on ready batches), the two run serially, the two with `prefetch`, and a
   hand-written NumPy slicing loop feeding the same step.  The target is
   prefetch epoch <= 1.1 x max(input, compute).  Both sides hold the GIL for
   most of their work (the plan executor and the dataset's Python are Python),
   so the overlap is limited by what NumPy runs without it; prefetch keeps its
   thread only where a trial shows that it pays (eager/data/threads.py), and
   otherwise the epoch is input + compute.
2. Pure input pipeline: `from_tensor_slices` of 60k 28x28 uint8 images,
   `shuffle(10000)`, `map` normalising to float32, `batch(64)`: elements per
   second beside a NumPy generator doing the same work (the same buffered
   shuffle order, per-element normalisation, stacking; eager.data normalises
   whole batches, see above).

Run: `python -m benchmarks.bench_data [--quick] [--rounds 15] [--epochs 3]`.
An epoch of the digits rows is about 20 ms, so single epochs are noisy on a
shared machine: each digits figure is the median (with quartiles) of
`--rounds` samples of `--epochs` epochs, the five variants taking turns in
every round (in a rotating order), and every ratio to max(input, compute) is
taken within a round (the variants measured side by side) before its median
and quartiles; the load average is printed.  The 60k pipeline: median of 5
passes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import eager as ek
import tracing  # noqa: F401 - registers @function for eager.data's traced map functions
from eager.data import Dataset
from eager.data.shuffling import rng, shuffled_order
from tracing import TensorSpec, function


def _interleaved(fns, rounds, epochs=1):
    """Per function, `rounds` samples of its time per epoch (each sample: `epochs` runs back to back), the
    functions taking turns in every round, in an order that rotates from round to round (so that on a busy
    machine they see the same load, and none always runs right after the same neighbour); every function
    runs once first (traces, caches)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for r in range(rounds):
        for k in [(r + i) % len(fns) for i in range(len(fns))]:
            t0 = time.perf_counter()
            for _ in range(epochs):
                fns[k]()
            times[k].append((time.perf_counter() - t0) / epochs)
    return times


def _spread(values):
    """median [first quartile - third quartile] of a list of samples."""
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return statistics.median(values), q[0], q[2]


def _ratio(times, bound_times):
    """The ratio of a time to max(input, compute), taken round by round (both measured in that round), as
    'median x [quartiles]'."""
    med, lo, hi = _spread([t / b for t, b in zip(times, bound_times)])
    return f"{med:.2f}x [{lo:.2f}-{hi:.2f}]"


def digits():
    try:
        from sklearn.datasets import load_digits
        d = load_digits()
        return d.data.astype(np.uint8), d.target.astype(np.int32)
    except ImportError:       # same sizes, synthetic values
        g = np.random.default_rng(0)
        return g.integers(0, 17, (1797, 64)).astype(np.uint8), g.integers(0, 10, 1797).astype(np.int32)


def mlp_train_step():
    g = np.random.default_rng(1)
    w1 = ek.Variable(g.standard_normal((64, 64)).astype(np.float32) * 0.17)
    b1 = ek.Variable(np.zeros(64, np.float32))
    w2 = ek.Variable(g.standard_normal((64, 10)).astype(np.float32) * 0.17)
    b2 = ek.Variable(np.zeros(10, np.float32))
    variables = [w1, b1, w2, b2]
    opt = ek.optimizers.Adam(1e-3)

    @function(input_signature=[TensorSpec([None, 64]), TensorSpec([None], ek.int32)])
    def step(x, y):
        with ek.GradientTape() as tape:
            logits = ek.matmul(ek.nn.relu(ek.matmul(x, w1) + b1), w2) + b2
            loss = ek.reduce_mean(ek.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss
    return step


def normalise(x, y):
    return ek.cast(x, ek.float32) / 16.0, y


def digits_rows(repeat, epochs, per_element):
    x, y = digits()
    step = mlp_train_step()
    base = Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0)
    # normalising whole batches (TF's "vectorized map"), or rows (which eager.data vectorizes itself)
    base = base.map(normalise).batch(64) if per_element else base.batch(64).map(normalise)
    what = "map(row) -> batch" if per_element else "batch -> map(batch)"
    ready = list(base)

    def input_only():
        for _ in base:
            pass

    def compute_only():
        for xb, yb in ready:
            step(xb, yb)

    def train(ds):
        def run():
            for xb, yb in ds:
                step(xb, yb)
        return run

    def numpy_loop():
        order = np.random.default_rng(0).permutation(len(x))
        for i in range(0, len(x), 64):
            idx = order[i:i + 64]
            step(ek.constant(x[idx].astype(np.float32) / 16.0), ek.constant(y[idx]))

    t_in, t_cp, t_serial, t_pre, t_np = _interleaved(
        [input_only, compute_only, train(base), train(base.prefetch(2)), numpy_loop], repeat, epochs)
    bound = [max(i, c) for i, c in zip(t_in, t_cp)]
    return [(f"digits MLP, {what}: input pipeline alone", _spread(t_in)),
            (f"digits MLP, {what}: train steps alone", _spread(t_cp)),
            (f"digits MLP, {what}: no prefetch, {_ratio(t_serial, bound)} max", _spread(t_serial)),
            (f"digits MLP, {what}: + prefetch, {_ratio(t_pre, bound)} max(in, cp)", _spread(t_pre)),
            (f"digits MLP, {what}: NumPy slicing loop, {_ratio(t_np, bound)} max", _spread(t_np))]


def to_unit(image):
    return ek.cast(image, ek.float32) / 255.0


def input_pipeline_rows(n, repeat):
    images = np.random.default_rng(0).integers(0, 256, (n, 28, 28)).astype(np.uint8)
    ds = Dataset.from_tensor_slices(images).shuffle(10000, seed=0).map(to_unit).batch(64)

    def pipeline():
        for _ in ds:
            pass

    def numpy_generator():
        def gen():
            batch = []
            for i in shuffled_order(n, 10000, rng(0, 0)).tolist():
                batch.append(images[i].astype(np.float32) / np.float32(255.0))
                if len(batch) == 64:
                    yield np.stack(batch)
                    batch = []
            if batch:
                yield np.stack(batch)
        for _ in gen():
            pass

    t_ds, t_np = (statistics.median(t) for t in _interleaved([pipeline, numpy_generator], repeat))
    return [(f"input pipeline {n} 28x28: eager.data ({n / t_ds:,.0f} elements/s)", (t_ds,)),
            (f"input pipeline {n} 28x28: NumPy generator ({n / t_np:,.0f} elements/s)", (t_np,))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6000 images and one repeat")
    ap.add_argument("--rounds", type=int, default=15, help="samples per digits figure (median, quartiles)")
    ap.add_argument("--epochs", type=int, default=3, help="epochs per digits sample")
    args = ap.parse_args(argv)
    repeat, epochs = (1, 1) if args.quick else (args.rounds, args.epochs)
    load = os.getloadavg()[0]
    rows = digits_rows(repeat, epochs, False) + digits_rows(repeat, epochs, True) + \
        input_pipeline_rows(6000 if args.quick else 60000, 1 if args.quick else 5)
    print(f"digits: median [quartiles] of {repeat} samples of {epochs} epochs each; ratios taken per round. "
          f"Load average (1 min) {load:.2f} before, {os.getloadavg()[0]:.2f} after, {os.cpu_count()} cores.")
    print(f"| {'workload':<76} | {'seconds [quartiles]':>23} |")
    print(f"|{'-' * 78}|{'-' * 25}|")
    for name, t in rows:
        cell = f"{t[0]:.4f}" if len(t) == 1 else f"{t[0]:.4f} [{t[1]:.4f}-{t[2]:.4f}]"
        print(f"| {name:<76} | {cell:>23} |")


if __name__ == "__main__":
    main()
