"""Train an MLP on the UCI handwritten digits (8x8 images, 10 classes) with a @function train step.

The data ships with scikit-learn (`pip install 'graphjit[examples]'`) and is
fed by an `eager.data` pipeline (shuffle, batch, prefetch).  The
model is an `eager.Module` with two dense layers; the train step (forward,
GradientTape, Adam update) is one `@function` with an `input_signature` whose
batch dimension is unknown, so one graph serves every batch size.  The example
reports test accuracy and training steps per second run eagerly versus as a
graph (both timed here, on the same batches).

With `--logdir DIR` (needs `pip install 'graphjit[tensorboard]'`) the train
step also writes its loss at every step (a summary op inside the @function),
the test accuracy is written after each epoch, and the train step's graph is
written for TensorBoard's graph dashboard: `tensorboard --logdir DIR`.

Run:  python examples/mlp_digits.py [--epochs 40] [--quick] [--save DIR] [--logdir DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import eager as ek  # noqa: E402
import tracing  # noqa: E402
from tracing import TensorSpec, function  # noqa: E402


def load_data(seed=0):
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("mlp_digits needs scikit-learn for the UCI digits data: pip install scikit-learn "
                 "(or pip install 'graphjit[examples]')")
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)           # 1797 x 64, pixel values 0..16
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    n_test = len(x) // 5
    return (x[n_test:], y[n_test:]), (x[:n_test], y[:n_test])


class Dense(ek.Module):
    def __init__(self, n_in, n_out, seed, name=None):
        super().__init__(name)
        with self.name_scope:
            scale = np.sqrt(2.0 / n_in)
            self.w = ek.Variable(ek.random.normal((n_in, n_out), stddev=scale, seed=seed), name="w")
            self.b = ek.Variable(ek.zeros((n_out,)), name="b")

    def __call__(self, x):
        return ek.matmul(x, self.w) + self.b


class MLP(ek.Module):
    def __init__(self, hidden=64, seed=0):
        super().__init__()
        self.hidden = Dense(64, hidden, seed, name="hidden")
        self.out = Dense(hidden, 10, seed + 1, name="out")

    def __call__(self, x):
        return self.out(ek.nn.relu(self.hidden(x)))

    @function(input_signature=[TensorSpec([None, 64])])
    def predict(self, x):
        return ek.argmax(self(x), axis=1)


def make_train_step(model, optimizer, step=None):
    """The train step; with a `step` Variable it also writes the loss summary (when a writer is the default)."""
    def train_step(x, y):
        with ek.GradientTape() as tape:
            logits = model(x)
            loss = ek.reduce_mean(ek.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if step is not None:
            with ek.name_scope("train"):
                ek.summary.scalar("loss", loss, step=step)
            step.assign_add(1)
        return loss
    return train_step


def batches(x, y, batch, seed=0):
    """The training batches: an eager.data pipeline, reshuffled every epoch (seeded), prefetched."""
    return (ek.data.Dataset.from_tensor_slices((x, y))
            .shuffle(len(x), seed=seed)
            .batch(batch)
            .prefetch(ek.data.AUTOTUNE))


def accuracy(model, x, y) -> float:
    return float(np.mean(model.predict(ek.constant(x)).numpy() == y))


def steps_per_second(step, x, y, batch, seconds) -> float:
    xb, yb = ek.constant(x[:batch]), ek.constant(y[:batch])
    step(xb, yb)                                             # warm up (traces the graph version)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step(xb, yb)
        n += 1
    return n / (time.perf_counter() - start)


def train_and_report(make_model, signature, train, test, epochs, batch, quick, logdir=None):
    """Time eager vs @function train steps, then train `make_model(seed=0)` with Adam; returns (model, accuracy).

    Shared with examples/cnn_digits.py.  `signature` is the train step's input_signature.  With `logdir`,
    writes TensorBoard summaries there (loss per step, test accuracy per epoch, the train step's graph).
    """
    (x_train, y_train), (x_test, y_test) = train, test
    # speed: the same train step eagerly and as a graph, on separate copies of the model
    timing = 0.3 if quick else 1.5
    eager_sps = steps_per_second(make_train_step(make_model(seed=1), ek.optimizers.Adam(1e-3)), x_train, y_train,
                                 batch, timing)
    graph_step = function(make_train_step(make_model(seed=1), ek.optimizers.Adam(1e-3)), input_signature=signature)
    graph_sps = steps_per_second(graph_step, x_train, y_train, batch, timing)

    model = make_model(seed=0)
    step = ek.Variable(0, dtype=ek.int64, trainable=False, name="step")
    train_step = function(make_train_step(model, ek.optimizers.Adam(0.01), step), input_signature=signature)
    writer = ek.summary.create_file_writer(logdir) if logdir else None
    train_batches = batches(x_train, y_train, batch)
    start = time.perf_counter()
    steps = 0
    with writer.as_default() if writer else contextlib.nullcontext():
        for epoch in range(1, epochs + 1):
            losses = []
            for xb, yb in train_batches:
                losses.append(float(train_step(xb, yb)))
                steps += 1
            acc = accuracy(model, x_test, y_test)
            ek.summary.scalar("test/accuracy", acc, step=step)
            if epoch == 1 or epoch % max(1, epochs // 4) == 0 or epoch == epochs:
                print(f"epoch {epoch:3d}  loss {np.mean(losses):.4f}  test accuracy {acc:.3f}")
        ek.summary.graph(train_step.get_concrete_function())
    if writer:
        writer.close()
        print(f"TensorBoard summaries written to {logdir}: tensorboard --logdir {logdir}")
    elapsed = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test)
    print(f"\ntest accuracy: {acc:.3f} after {steps} steps ({elapsed:.1f} s); "
          f"train step traced {train_step.experimental_get_tracing_count()} time(s)")
    print(f"train steps per second (batch {batch}):  eager {eager_sps:8.0f}   @function {graph_sps:8.0f}   "
          f"speedup {graph_sps / eager_sps:.1f}x")
    return model, acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="a short run (used by the tests)")
    ap.add_argument("--save", metavar="DIR", help="save the trained model's predict function here")
    ap.add_argument("--logdir", metavar="DIR", help="write TensorBoard summaries (loss, accuracy, graph) here")
    args = ap.parse_args(argv)
    epochs = 4 if args.quick else args.epochs
    (x_train, y_train), (x_test, y_test) = load_data()
    print(f"UCI digits: {len(x_train)} training and {len(x_test)} test images of 8x8 pixels")

    model, acc = train_and_report(MLP, [TensorSpec([None, 64]), TensorSpec([None], ek.int32)],
                                  (x_train, y_train), (x_test, y_test), epochs, args.batch, args.quick,
                                  logdir=args.logdir)
    if args.save:
        tracing.save(model, args.save)
        print(f"saved the model's predict function to {args.save} (try: graphjit show {args.save})")
    return 0 if acc > (0.8 if args.quick else 0.93) else 1


if __name__ == "__main__":
    sys.exit(main())
