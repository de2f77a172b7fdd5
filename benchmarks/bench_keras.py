"""Keras-level training cost: one epoch of `Model.fit` against the hand-written @function loop.

Run: `python -m benchmarks.bench_keras`.  Workload: the digits MLP of examples/mlp_digits.py
(64 -> 64 relu -> 10, Adam, sparse softmax cross-entropy from logits, batch 64, reshuffled every
epoch; the UCI digits when scikit-learn is installed, random data of the same shape otherwise).

- `fit`: `model.fit(x, y, batch_size=64, epochs=1, verbose=0)` (a compiled train step, the loss
  tracker, per-epoch logs, History);
- the baseline: the loop a user writes without Keras: the same model's train step (tape,
  loss, Adam) as one `@function` with a batch-None input_signature, fed the same reshuffled
  batches, the epoch's mean loss read at the end.

Both run interleaved in the same process (`harness.paired`, fastest of the rounds), each call
one full epoch (23 steps), timed in wall time and in CPU time (`time.process_time`: on a
shared, busy machine the time spent waiting for a core is left out).  With TensorFlow importable a `tf.keras` row times its fit on the
same data.  Figures are printed, never asserted.
"""
from __future__ import annotations

import time

import numpy as np

import eager as ek
from benchmarks.harness import Row, optional_peers, paired, table
from eager import keras
from tracing import TensorSpec, function

BATCH = 64


def data():
    try:
        from sklearn.datasets import load_digits
        digits = load_digits()
        x, y = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int32)
        source = "UCI digits"
    except ImportError:
        rng = np.random.default_rng(0)
        x, y = rng.uniform(size=(1797, 64)).astype(np.float32), rng.integers(0, 10, 1797).astype(np.int32)
        source = "random digits-shaped data (scikit-learn not installed)"
    n_test = len(x) // 5
    return x[n_test:], y[n_test:], source


def make_model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"),
                             keras.layers.Dense(10)])


def fit_epoch(x, y):
    model = make_model()
    model.compile(optimizer=ek.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return lambda: model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)


def loop_epoch(x, y):
    model = make_model()
    optimizer = ek.optimizers.Adam(1e-3)
    variables = model.trainable_variables

    @function(input_signature=[TensorSpec([None, 64]), TensorSpec([None], ek.int32)])
    def train_step(xb, yb):
        with ek.GradientTape() as tape:
            loss = ek.reduce_mean(ek.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=model(xb)))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss
    rng = np.random.default_rng(0)

    def epoch():
        order = rng.permutation(len(x))
        losses = []
        for i in range(0, len(x), BATCH):
            idx = order[i:i + BATCH]
            losses.append(train_step(ek.constant(x[idx]), ek.constant(y[idx])))
        return float(np.mean([float(l) for l in losses]))
    return epoch


def tf_fit_epoch(tf, x, y):
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return lambda: model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)


def rows():
    x, y, source = data()
    steps = -(-len(x) // BATCH)
    workload = f"digits MLP, 1 epoch ({steps} steps)"
    fit_s, loop_s = paired(fit_epoch(x, y), loop_epoch(x, y), rounds=9)
    out = [Row(workload, "Model.fit (wall time)", fit_s, loop_s, "baseline: @function loop")]
    fit_c, loop_c = paired(fit_epoch(x, y), loop_epoch(x, y), rounds=9, clock=time.process_time)
    out.append(Row(workload, "Model.fit (CPU time)", fit_c, loop_c, "baseline: @function loop"))
    tf = optional_peers().get("tensorflow")
    if tf is not None:
        tf_s, loop2 = paired(tf_fit_epoch(tf, x, y), loop_epoch(x, y), rounds=5)
        out.append(Row(workload, "tf.keras Model.fit", tf_s, loop2, "baseline: graphjit @function loop"))
    return out, source


def main() -> None:
    r, source = rows()
    print(f"data: {source}; the 'numpy' column is the hand-written @function loop")
    print(table(r))


if __name__ == "__main__":
    main()
