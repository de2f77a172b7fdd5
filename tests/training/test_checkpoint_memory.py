"""Saving weights holds the variables' own arrays instead of copies, and streams them to the file.

Holding a variable's array makes its next in-place update write a fresh array
(eager/variable_storage.py), so a writer that holds references sees values
that never change under it: no copy is needed.  The peak Python allocation
(tracemalloc, which NumPy reports its buffers to) of every save path stays far
below the model's size, updates racing a save never tear a saved value, and
once the save returns the updates write in place again.
"""
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import eager as ek
from eager import keras
from eager.train import Checkpoint
from eager.train.object_graph import read_checkpoint
import tracing

N, COUNT = 1 << 17, 16           # sixteen float32 variables of 512 KiB each
MODEL_BYTES = COUNT * N * 4


class Net(ek.Module):
    def __init__(self):
        super().__init__()
        self.ws = [ek.Variable(np.full(N, float(i), np.float32), name=f"w{i}") for i in range(COUNT)]


def _weights(saved: dict) -> list:
    return [a for key, a in saved.items() if key.startswith("net/")]


def _keras_model():
    model = keras.Sequential([keras.Input((512,)), keras.layers.Dense(512, use_bias=False),
                              keras.layers.Dense(512, use_bias=False), keras.layers.Dense(512, use_bias=False),
                              keras.layers.Dense(512, use_bias=False)])
    return model, sum(w.numpy().nbytes for w in model.weights)


def _peak(save) -> int:
    tracemalloc.start()
    try:
        save()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _saves(tmp_path):
    net = Net()
    model, model_bytes = _keras_model()
    return {
        "train.Checkpoint": (lambda: Checkpoint(net=net).write(str(tmp_path / "ckpt")), MODEL_BYTES),
        "tracing.save_checkpoint": (lambda: tracing.save_checkpoint(net, str(tmp_path / "tc")), MODEL_BYTES),
        "keras save_weights": (lambda: model.save_weights(str(tmp_path / "m.weights.h5")), model_bytes),
    }


@pytest.mark.parametrize("which", ["train.Checkpoint", "tracing.save_checkpoint", "keras save_weights"])
def test_a_save_takes_no_copy_of_the_model(tmp_path, which):
    save, model_bytes = _saves(tmp_path)[which]
    save()                                   # first call: imports and caches are not the save's memory
    peak = _peak(save)
    # before: a copy per variable, then the file's bytes built whole (two more copies): 2-4x the model;
    # now a chunk of one variable at most (np.savez copies one array's bytes at a time)
    assert peak < model_bytes // 4, f"{which}: peak {peak} bytes for a model of {model_bytes}"


def test_saved_values_are_the_values_and_updates_write_in_place_after_the_save(tmp_path):
    net = Net()
    for v in net.ws:
        v.assign_add(np.ones(N, np.float32))              # each variable now owns an array it updates in place
    Checkpoint(net=net).write(str(tmp_path / "ckpt"))
    saved = _weights(read_checkpoint(str(tmp_path / "ckpt")))
    assert sorted(np.unique(a).item() for a in saved) == [i + 1.0 for i in range(COUNT)]
    refs = [weakref.ref(v.stored_array()) for v in net.ws]
    for v in net.ws:
        v.assign_add(np.ones(N, np.float32))
    assert all(r() is v.stored_array() for r, v in zip(refs, net.ws)), "the save kept a reference"


def test_updates_racing_a_save_never_tear_a_saved_value(tmp_path):
    net = Net()
    stop, steps = threading.Event(), [0]

    def train():
        one = np.ones(N, np.float32)
        while not stop.is_set():
            for v in net.ws:
                v.assign_add(one)                   # in place whenever the save does not hold the array
            steps[0] += 1

    worker = threading.Thread(target=train)
    worker.start()
    try:
        for k in range(6):
            Checkpoint(net=net).write(str(tmp_path / f"c{k}"))
            tracing.save_checkpoint(net, str(tmp_path / f"t{k}"))
    finally:
        stop.set()
        worker.join()
    assert steps[0] > 0
    for k in range(6):
        for a in _weights(read_checkpoint(str(tmp_path / f"c{k}"))):
            assert np.all(a == a[0]), f"checkpoint {k}: a torn value {np.unique(a)[:5]}"
        back = Net()
        tracing.restore_checkpoint(back, str(tmp_path / f"t{k}"))
        for v in back.ws:
            a = v.numpy()
            assert np.all(a == a[0]), f"tracing checkpoint {k}: a torn value {np.unique(a)[:5]}"


@pytest.mark.parametrize("which", ["tracing.restore_checkpoint", "keras load_weights"])
def test_a_restore_holds_the_model_once(tmp_path, which):
    net = Net()
    model, model_bytes = _keras_model()
    tracing.save_checkpoint(net, str(tmp_path / "tc"))
    model.save_weights(str(tmp_path / "m.weights.h5"))
    expect = [w.numpy() for w in model.weights]
    target = Net()
    restore, size = {
        "tracing.restore_checkpoint": (lambda: tracing.restore_checkpoint(target, str(tmp_path / "tc")), MODEL_BYTES),
        "keras load_weights": (lambda: model.load_weights(str(tmp_path / "m.weights.h5")), model_bytes)}[which]
    restore()
    for w in model.weights:
        w.assign_add(np.ones(w.shape.as_list(), np.float32))
    peak = _peak(restore)
    # before: the arrays read from the file, then an assign's copy of each: twice the model
    assert peak < size * 1.5, f"{which}: peak {peak} bytes for a model of {size}"
    restored = ([(w, e) for w, e in zip(model.weights, expect)] if which == "keras load_weights" else
                [(w, np.full(N, float(i), np.float32)) for i, w in enumerate(target.ws)])
    for w, e in restored:
        np.testing.assert_array_equal(w.numpy(), e)
        w.assign_add(np.ones(w.shape.as_list(), np.float32))          # updates after a restore stay right
        np.testing.assert_array_equal(w.numpy(), e + 1)
