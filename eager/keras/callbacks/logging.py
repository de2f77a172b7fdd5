"""Callbacks that write what happened: TensorBoard (through `eager.summary`) and CSVLogger."""
from __future__ import annotations

import csv
import os

from ... import summary
from .base import Callback


class TensorBoard(Callback):
    """Writes `train/` and `validation/` runs under `log_dir`: `epoch_loss`, `epoch_<metric>` (and
    `epoch_learning_rate` when a callback logged it) at every epoch; with `update_freq=N` also
    `batch_loss`, `batch_<metric>` every N train steps (step = the global step count); with
    `write_graph` the compiled train step's graph, once it has been traced.  Needs the optional
    `tensorboard` package, as `eager.summary` does."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, update_freq="epoch", **kwargs):
        super().__init__()
        if update_freq not in ("epoch", "batch") and not (isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive int, got {update_freq!r}")
        if histogram_freq:
            raise ValueError("TensorBoard: histogram_freq is not supported yet (use eager.summary.histogram)")
        self.log_dir, self.write_graph = str(log_dir), write_graph
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self._writers = {}
        self._global_step = 0
        self._graph_written = False

    def _writer(self, run):
        w = self._writers.get(run)
        if w is None:
            w = self._writers[run] = summary.create_file_writer(os.path.join(self.log_dir, run))
        return w

    def _scalars(self, run, prefix, items, step):
        with self._writer(run).as_default():
            for name, value in items:
                summary.scalar(f"{prefix}{name}", float(value), step=step)

    def on_train_begin(self, logs=None):
        self._writer("train")

    def on_train_batch_end(self, batch, logs=None):
        self._global_step += 1
        if self.write_graph and not self._graph_written:
            self._graph_written = True
            concrete = self.model._traced_train_step()
            if concrete is not None:
                with self._writer("train").as_default():
                    summary.graph(concrete)
        if self.update_freq != "epoch" and self._global_step % self.update_freq == 0:
            self._scalars("train", "batch_", (logs or {}).items(), self._global_step)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self._scalars("train", "epoch_", [(k, v) for k, v in logs.items() if not k.startswith("val_")], epoch)
        val = [(k[4:], v) for k, v in logs.items() if k.startswith("val_")]
        if val:
            self._scalars("validation", "epoch_", val, epoch)
        for w in self._writers.values():
            w.flush()

    def on_train_end(self, logs=None):
        for w in self._writers.values():
            w.close()
        self._writers = {}


class CSVLogger(Callback):
    """One row per epoch: `epoch` and the epoch logs in sorted order (Keras's layout)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename, self.sep, self.append = str(filename), separator, append
        self._file = self._writer = self._keys = None

    def on_train_begin(self, logs=None):
        exists = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._header_needed = not exists

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self._keys, delimiter=self.sep)
            if self._header_needed:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **{k: logs.get(k, "NA") for k in self._keys}})
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
        self._file = self._writer = self._keys = None
