"""Callbacks that watch a logged quantity: EarlyStopping, ReduceLROnPlateau, ModelCheckpoint, and
LearningRateScheduler (which sets the rate every epoch).

Improvement is strict, as in Keras: an equal value is no improvement.  `mode="auto"` maximizes
quantities named like accuracies, AUC, precision or recall and minimizes the rest.  The
learning rate is read and written through `get_learning_rate`/`set_learning_rate`, which assign
the optimizer's learning-rate variable, so a compiled train step sees the new value without
retracing.
"""
from __future__ import annotations

import warnings

import numpy as np

from .base import Callback

_MAXIMIZED = ("acc", "auc", "precision", "recall", "fmeasure")


def _mode(mode, monitor, who):
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max', got {mode!r}")
    if mode == "auto":
        return "max" if any(k in monitor for k in _MAXIMIZED) else "min"
    return mode


def get_learning_rate(optimizer) -> float:
    lr = optimizer.learning_rate
    if callable(lr) and not hasattr(lr, "numpy"):
        raise TypeError("the optimizer's learning rate is a schedule; it cannot be read or set by a callback")
    return float(np.asarray(lr.numpy() if hasattr(lr, "numpy") else lr))


def set_learning_rate(optimizer, value) -> None:
    lr = optimizer.learning_rate
    if not hasattr(lr, "assign"):
        # a schedule, or a Python number a compiled train step has already baked in: refuse
        raise TypeError(f"the optimizer's learning rate ({type(lr).__name__}) is not a variable, so a callback "
                        f"cannot change it (use an eager.keras.optimizers optimizer with a float learning rate)")
    lr.assign(np.asarray(value, lr.dtype.as_numpy_dtype))


class _Monitor(Callback):
    def __init__(self, monitor, mode, min_delta, who):
        super().__init__()
        self.monitor = monitor
        self.mode = _mode(mode, monitor, who)
        self.min_delta = abs(min_delta)
        self._who = who

    def _better(self, current, reference) -> bool:
        if self.mode == "min":
            return current + self.min_delta < reference
        return current - self.min_delta > reference

    def _worst(self) -> float:
        return np.inf if self.mode == "min" else -np.inf

    def _value(self, logs):
        value = (logs or {}).get(self.monitor)
        if value is None:
            warnings.warn(f"{self._who}: the monitored quantity {self.monitor!r} is not in the logs "
                          f"(available: {sorted(logs or {})}); skipping", RuntimeWarning, stacklevel=3)
            return None
        return float(value)


class EarlyStopping(_Monitor):
    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta, "EarlyStopping")
        self.patience, self.verbose, self.baseline = patience, verbose, baseline
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, start_from_epoch

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best_epoch = 0, 0, 0
        self.best, self.best_weights = self._worst(), None

    def on_epoch_end(self, epoch, logs=None):
        current = self._value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ReduceLROnPlateau(_Monitor):
    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        super().__init__(monitor, mode, min_delta, "ReduceLROnPlateau")
        self.factor, self.patience, self.verbose = factor, patience, verbose
        self.cooldown, self.min_lr = cooldown, min_lr

    def on_train_begin(self, logs=None):
        self.wait, self.cooldown_counter, self.best = 0, 0, self._worst()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["learning_rate"] = get_learning_rate(self.model.optimizer)
        current = self._value(logs)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._better(current, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = get_learning_rate(self.model.optimizer)
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    set_learning_rate(self.model.optimizer, new)
                    if self.verbose:
                        print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0


class LearningRateScheduler(Callback):
    """Sets the learning rate to `schedule(epoch, lr)` (or `schedule(epoch)`) before each epoch; the
    epoch logs (and so the History) get `learning_rate`."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = get_learning_rate(self.model.optimizer)
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = float(np.asarray(new))
        if not np.isfinite(new):
            raise ValueError(f"LearningRateScheduler: the schedule returned {new} for epoch {epoch}")
        set_learning_rate(self.model.optimizer, new)
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = get_learning_rate(self.model.optimizer)


class ModelCheckpoint(_Monitor):
    """Saves the model's weights (`model.save_weights`, our own format: saving.py) after each epoch,
    or only when `monitor` improved (`save_best_only`).  `filepath` may format `{epoch:02d}` and
    any log (`{val_loss:.2f}`).  As Keras 3 asks, a weights file is named `*.weights.h5`; the
    content is graphjit's format, not HDF5."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__(monitor, mode, 0, "ModelCheckpoint")
        filepath = str(filepath)
        if not filepath.endswith(".weights.h5"):
            raise ValueError(f"ModelCheckpoint: filepath must end in '.weights.h5' (graphjit saves weights; the "
                             f"model itself is your code), got {filepath!r}")
        if save_freq != "epoch":
            raise ValueError(f"ModelCheckpoint: only save_freq='epoch' is supported, got {save_freq!r}")
        self.filepath, self.verbose, self.save_best_only = filepath, verbose, save_best_only
        self.best = initial_value_threshold if initial_value_threshold is not None else self._worst()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = self._value(logs)
            if current is None or not self._better(current, self.best):
                return
            if self.verbose:
                print(f"Epoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to {current:.5f}, "
                      f"saving model to {path}")
            self.best = current
        self.model.save_weights(path)
