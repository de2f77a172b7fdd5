"""Callbacks: History, EarlyStopping, ModelCheckpoint, LearningRateScheduler, ReduceLROnPlateau,
TensorBoard, CSVLogger, LambdaCallback, each through fit."""
import csv
import importlib.util

import numpy as np
import pytest

import eager as ek
import tracing  # noqa: F401 - registers the compiler fit uses
from eager import keras
from eager.keras import callbacks as C
from eager.keras import layers as L

RNG = np.random.default_rng(4)
X = RNG.normal(size=(64, 3)).astype(np.float32)
Y = (X @ np.array([[1.0], [2.0], [-1.0]], np.float32)).astype(np.float32)


def model(lr=0.05, metrics=None):
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((3,)), L.Dense(1)])
    m.compile(optimizer=ek.optimizers.SGD(lr), loss="mse", metrics=metrics)
    return m


def fit(m, callbacks, epochs=5, **kw):
    return m.fit(X, Y, batch_size=16, epochs=epochs, verbose=0, callbacks=callbacks, shuffle=False, **kw)


def test_early_stopping_needs_a_strict_improvement():
    m = model(lr=0.0)                    # the loss never changes: equal values are no improvement
    stop = C.EarlyStopping(monitor="loss", patience=2)
    h = fit(m, [stop], epochs=10)
    assert len(h.history["loss"]) == 3 and stop.stopped_epoch == 2
    learning = fit(model(), [C.EarlyStopping(monitor="loss", patience=0)], epochs=6)
    assert len(learning.history["loss"]) == 6


def test_early_stopping_restores_the_best_weights():
    m = model(lr=0.05)
    stop = C.EarlyStopping(monitor="val_loss", patience=1, restore_best_weights=True, mode="max")
    h = fit(m, [stop], epochs=10, validation_data=(X, Y))    # max mode on a falling loss: epoch 0 is best
    assert len(h.history["loss"]) == 2
    np.testing.assert_allclose(m.evaluate(X, Y, verbose=0), h.history["val_loss"][0], rtol=1e-5)


def test_model_checkpoint_formats_the_epoch_and_saves_only_improvements(tmp_path):
    m = model()
    path = str(tmp_path / "ckpt-{epoch:02d}.weights.h5")
    fit(m, [C.ModelCheckpoint(path, monitor="loss", save_best_only=True, save_weights_only=True)], epochs=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-01.weights.h5", "ckpt-02.weights.h5",
                                                          "ckpt-03.weights.h5"]
    other = model()
    other.load_weights(tmp_path / "ckpt-03.weights.h5")
    for a, b in zip(m.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)
    flat = model(lr=0.0)
    best = str(tmp_path / "best.weights.h5")
    fit(flat, [C.ModelCheckpoint(best, monitor="loss", save_best_only=True)], epochs=3)
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        C.ModelCheckpoint(str(tmp_path / "model.keras"))


def test_learning_rate_scheduler_changes_the_compiled_step_without_retracing():
    m = model(lr=0.05)
    seen = []
    sched = C.LearningRateScheduler(lambda epoch, lr: seen.append(lr) or (0.05 if epoch == 0 else 0.0))
    weights = []
    keep = C.LambdaCallback(on_epoch_end=lambda epoch, logs: weights.append(m.get_weights()[0].copy()))
    h = fit(m, [sched, keep], epochs=3)
    np.testing.assert_allclose(h.history["learning_rate"], [0.05, 0.0, 0.0])
    np.testing.assert_allclose(seen, [0.05, 0.05, 0.0])
    assert not np.array_equal(weights[0], model().get_weights()[0])
    np.testing.assert_array_equal(weights[1], weights[0])        # lr 0: the traced step used the new value
    assert m._steps["train"].fn.experimental_get_tracing_count() == 1


def test_reduce_lr_on_plateau():
    m = model(lr=0.0)
    m.optimizer.learning_rate.assign(0.0)
    h = fit(m, [C.ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5, min_lr=0.0)], epochs=4)
    assert h.history["learning_rate"] == [0.0, 0.0, 0.0, 0.0]       # already at min_lr: unchanged
    m2 = model(lr=1e-9)
    h2 = fit(m2, [C.ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5, min_delta=1.0)], epochs=4)
    # logged before the epoch's reduction (Keras): epoch 0 improves on inf, then every epoch halves it
    np.testing.assert_allclose(h2.history["learning_rate"], [1e-9, 1e-9, 5e-10, 2.5e-10], rtol=1e-5)


def test_csv_logger(tmp_path):
    path = tmp_path / "log.csv"
    h = fit(model(metrics=["mae"]), [C.CSVLogger(str(path))], epochs=3)
    rows = list(csv.DictReader(open(path)))
    assert list(rows[0]) == ["epoch", "loss", "mae"] and [r["epoch"] for r in rows] == ["0", "1", "2"]
    np.testing.assert_allclose([float(r["loss"]) for r in rows], h.history["loss"], rtol=1e-6)


def test_lambda_callback_and_custom_callback_see_every_hook():
    events = []

    class Recorder(C.Callback):
        def on_train_begin(self, logs=None):
            events.append("train_begin")

        def on_test_begin(self, logs=None):
            events.append("test_begin")

        def on_train_end(self, logs=None):
            events.append("train_end")
    batches = []
    lam = C.LambdaCallback(on_train_batch_end=lambda batch, logs: batches.append((batch, float(logs["loss"]))),
                           on_epoch_begin=lambda epoch, logs: events.append(f"epoch{epoch}"))
    fit(model(), [Recorder(), lam], epochs=2, validation_data=(X, Y))
    assert events == ["train_begin", "epoch0", "test_begin", "epoch1", "test_begin", "train_end"]
    assert [b for b, _ in batches] == [0, 1, 2, 3] * 2
    with pytest.raises(TypeError, match="unknown hook"):
        C.LambdaCallback(on_epoch_finish=print)


def test_stop_training_from_a_batch_hook():
    m = model()
    stopper = C.LambdaCallback(on_train_batch_end=lambda b, logs: setattr(m, "stop_training", b == 1))
    h = fit(m, [stopper], epochs=5)
    assert len(h.history["loss"]) == 1


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                    reason="the TensorBoard callback needs the tensorboard package (pip install 'graphjit[tensorboard]')")
def test_tensorboard_writes_train_and_validation_runs_batches_and_the_graph(tmp_path):
    from tensorboard.backend.event_processing import event_accumulator as ea
    h = fit(model(metrics=["mae"]), [C.TensorBoard(str(tmp_path), update_freq=1)], epochs=3,
            validation_data=(X, Y))

    def scalars(run):
        acc = ea.EventAccumulator(str(tmp_path / run), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
        acc.Reload()
        return acc
    train, val = scalars("train"), scalars("validation")
    tags = train.Tags()
    names = set(tags.get("scalars", [])) | set(tags.get("tensors", []))
    assert {"epoch_loss", "epoch_mae", "batch_loss", "batch_mae"} <= names

    def values(acc, tag):
        events = acc.Scalars(tag) if tag in acc.Tags().get("scalars", []) else acc.Tensors(tag)
        return [(e.step, float(getattr(e, "value", None) if hasattr(e, "value") else
                               np.asarray(e.tensor_proto.float_val)[0])) for e in events]
    epoch_loss = values(train, "epoch_loss")
    assert [s for s, _ in epoch_loss] == [0, 1, 2]
    np.testing.assert_allclose([v for _, v in epoch_loss], h.history["loss"], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in values(val, "epoch_loss")], h.history["val_loss"], rtol=1e-6)
    assert [s for s, _ in values(train, "batch_loss")] == list(range(1, 13))
    assert train.Graph() is not None and len(train.Graph().node) > 5
