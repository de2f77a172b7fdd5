"""Train an MLP on the UCI handwritten digits (8x8 images, 10 classes), Keras-style.

The data ships with scikit-learn (`pip install 'graphjit[examples]'`) and is fed to `fit` by
an `eager.data` pipeline (shuffle, batch, prefetch).  The model is an
`eager.keras.Sequential` (64 -> 64 relu -> 10 logits); `compile` + `fit` train it with Adam
and sparse categorical cross-entropy, validating on the test split after every epoch.  `fit`
runs its train step as one compiled `@function` (traced once: the batch dimension is left
unknown, so the last, smaller batch needs no second trace).  The example reports the test
accuracy and training steps per second with `run_eagerly=True` versus compiled.

With `--logdir DIR` (needs `pip install 'graphjit[tensorboard]'`) the TensorBoard callback
writes `train/` and `validation/` runs (loss and accuracy per epoch, the loss at every step)
and the train step's graph: `tensorboard --logdir DIR`.  With `--save DIR` the trained model's
serving function is exported with `tracing.save` (try `graphjit show DIR`).

Run:  python examples/mlp_digits.py [--epochs 40] [--quick] [--save DIR] [--logdir DIR]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import eager as ek  # noqa: E402
import tracing  # noqa: E402
from eager import keras  # noqa: E402


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


def mlp(hidden=64):
    return keras.Sequential([keras.Input((64,)), keras.layers.Dense(hidden, activation="relu"),
                             keras.layers.Dense(10)], name="mlp")


def compiled(model, learning_rate=0.01, run_eagerly=False):
    model.compile(optimizer=ek.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                  run_eagerly=run_eagerly)
    return model


def batches(x, y, batch, seed=0):
    """The training batches: an eager.data pipeline, reshuffled every epoch (seeded), prefetched."""
    return (ek.data.Dataset.from_tensor_slices((x, y))
            .shuffle(len(x), seed=seed)
            .batch(batch)
            .prefetch(ek.data.AUTOTUNE))


def steps_per_second(make_model, x, y, batch, run_eagerly, seconds) -> float:
    model = compiled(make_model(), 1e-3, run_eagerly)
    model.train_on_batch(x[:batch], y[:batch])                 # warm up (traces the compiled step)
    steps_per_epoch = -(-len(x) // batch)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
        n += steps_per_epoch
    return n / (time.perf_counter() - start)


def fit_and_report(make_model, train, test, epochs, batch, quick, logdir=None):
    """Time eager vs compiled fit, then train `make_model()` and report; returns (model, test accuracy).

    Shared with examples/cnn_digits.py.
    """
    (x_train, y_train), (x_test, y_test) = train, test
    timing = 0.3 if quick else 1.5
    keras.utils.set_random_seed(1)
    eager_sps = steps_per_second(make_model, x_train, y_train, batch, True, timing)
    graph_sps = steps_per_second(make_model, x_train, y_train, batch, False, timing)

    keras.utils.set_random_seed(0)
    model = compiled(make_model())
    callbacks = [keras.callbacks.TensorBoard(logdir, update_freq=1)] if logdir else []
    start = time.perf_counter()
    history = model.fit(batches(x_train, y_train, batch), epochs=epochs, validation_data=(x_test, y_test),
                        callbacks=callbacks, verbose=2 if not quick else 0)
    elapsed = time.perf_counter() - start
    if logdir:
        print(f"TensorBoard summaries written to {logdir}: tensorboard --logdir {logdir}")
    loss, acc = model.evaluate(x_test, y_test, verbose=0)
    steps = epochs * -(-len(x_train) // batch)
    traces = model._steps["train"].fn.experimental_get_tracing_count()
    print(f"\ntest accuracy: {acc:.3f} (loss {loss:.4f}) after {steps} steps ({elapsed:.1f} s, "
          f"{len(history.epoch)} epochs); train step traced {traces} time(s)")
    print(f"train steps per second (batch {batch}):  eager {eager_sps:8.0f}   @function {graph_sps:8.0f}   "
          f"speedup {graph_sps / eager_sps:.1f}x")
    return model, acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="a short run (used by the tests)")
    ap.add_argument("--save", metavar="DIR", help="export the trained model's serving function here")
    ap.add_argument("--logdir", metavar="DIR", help="write TensorBoard summaries (loss, accuracy, graph) here")
    args = ap.parse_args(argv)
    epochs = 4 if args.quick else args.epochs
    train, test = load_data()
    print(f"UCI digits: {len(train[0])} training and {len(test[0])} test images of 8x8 pixels")
    model, acc = fit_and_report(mlp, train, test, epochs, args.batch, args.quick, logdir=args.logdir)
    if args.save:
        tracing.save({"serve": model.serving_function()}, args.save)
        print(f"saved the model's serving function to {args.save} (try: graphjit show {args.save})")
    return 0 if acc > (0.8 if args.quick else 0.93) else 1


if __name__ == "__main__":
    sys.exit(main())
