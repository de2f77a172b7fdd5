"""eager.data figures: a pipeline feeding the digits MLP step, and a pure input pipeline.

1. Digits MLP (64-64-10, Adam, batch 64): `from_tensor_slices -> shuffle ->
   batch(64) -> map(normalise) -> prefetch(2)` feeding the @function train
   step (and the same with `map` before `batch`, one traced call per image).  Reported per epoch: the input pipeline alone, the train steps alone
   (on ready batches), the two run serially, the two with `prefetch`, and a
   hand-written NumPy slicing loop feeding the same step.  The target is
   prefetch epoch <= 1.1 x max(input, compute).  Both sides hold the GIL for
   most of their work (the plan executor and the dataset's Python are Python),
   so the overlap is limited by what NumPy runs without it; where the input
   costs under a tenth of the step, prefetch starts no thread
   (eager/data/threads.py) and the epoch is input + compute.
2. Pure input pipeline: `from_tensor_slices` of 60k 28x28 uint8 images,
   `shuffle(10000)`, `map` normalising to float32, `batch(64)`: elements per
   second beside a NumPy generator doing the same work (the same buffered
   shuffle order, per-element normalisation, stacking).

Run: `python -m benchmarks.bench_data [--quick]`.  Timings on a shared machine
are noisy; each figure is the median of 15 epochs (5 passes of the 60k
pipeline), the variants taking turns.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import eager as ek
import tracing  # noqa: F401 - registers @function for eager.data's traced map functions
from eager.data import Dataset
from eager.data.shuffling import rng, shuffled_order
from tracing import TensorSpec, function


def _interleaved(fns, rounds):
    """Median of `rounds` runs of each function, the functions taking turns in every round (so that on a
    busy machine they see the same load); every function runs once first (traces, caches)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


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


def digits_rows(repeat, per_element):
    x, y = digits()
    step = mlp_train_step()
    base = Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0)
    # normalising whole batches (one traced call per batch, TF's "vectorized map") or each element
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
        [input_only, compute_only, train(base), train(base.prefetch(2)), numpy_loop], repeat)
    bound = max(t_in, t_cp)
    return [(f"digits MLP, {what}: input pipeline alone", t_in),
            (f"digits MLP, {what}: train steps alone", t_cp),
            (f"digits MLP, {what}: pipeline, no prefetch ({t_serial / bound:.2f}x max)", t_serial),
            (f"digits MLP, {what}: + prefetch ({t_pre / bound:.2f}x max(in, compute))", t_pre),
            (f"digits MLP, {what}: NumPy slicing loop ({t_np / bound:.2f}x max)", t_np)]


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

    t_ds, t_np = _interleaved([pipeline, numpy_generator], repeat)
    return [(f"input pipeline {n} 28x28: eager.data ({n / t_ds:,.0f} elements/s)", t_ds),
            (f"input pipeline {n} 28x28: NumPy generator ({n / t_np:,.0f} elements/s)", t_np)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6000 images and one repeat")
    args = ap.parse_args(argv)
    repeat = 1 if args.quick else 15
    rows = digits_rows(repeat, False) + digits_rows(repeat, True) + \
        input_pipeline_rows(6000 if args.quick else 60000, 1 if args.quick else 5)
    print(f"| {'workload':<72} | {'seconds':>8} |")
    print(f"|{'-' * 74}|{'-' * 10}|")
    for name, seconds in rows:
        print(f"| {name:<72} | {seconds:8.3f} |")


if __name__ == "__main__":
    main()
