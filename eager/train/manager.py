"""`CheckpointManager`, `latest_checkpoint` and the directory index (TF2's `tf.train.CheckpointManager`).

The index is the file `checkpoint` in the directory, JSON:
`{"model_checkpoint_path": "ckpt-3", "all_model_checkpoint_paths": [...],
"all_model_checkpoint_timestamps": [...], "last_preserved_timestamp": t}`
(paths relative to the directory; TensorFlow's fields, in JSON instead of a
text proto).  It is replaced atomically (`tensor_file.atomic_write_bytes`).

A save is crash-safe at every instant:
1. the new checkpoint file is written to a temporary file and renamed into
   place (a crash before the rename leaves only a stray temporary file, which
   the next manager on the directory deletes);
2. the index is replaced by one that names the new checkpoint and the
   checkpoints being kept, and no longer the ones about to be deleted;
3. only then are the old checkpoints' files deleted.
So the index always names complete files, the latest of which is the new
checkpoint from step 2 on and the previous one before it.  A crash during
step 3 can leave an unlisted old file behind; it is never read.

Retention: `max_to_keep` newest checkpoints stay listed (None keeps all);
with `keep_checkpoint_every_n_hours`, a checkpoint leaving the list is kept on
disk (unlisted, as in TensorFlow) when at least that long has passed since the
last one kept that way.  A new manager on a directory takes over the
checkpoints its index lists.

Imports `eager` modules and the standard library.
"""
from __future__ import annotations

import json
import os
import re
import time

from .. import context as _context
from ..convert import constant
from . import tensor_file
from .object_graph import SUFFIX, file_path, write_checkpoint

INDEX = "checkpoint"
_stage_hook = None      # a crash-test hook: called with the name of each stage of a save (see tests)


def _stage(name: str) -> None:
    if _stage_hook is not None:
        _stage_hook(name)


def read_index(directory: str):
    """The index of `directory` as a dict, or None when there is none; ValueError when it is damaged."""
    path = os.path.join(directory, INDEX)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            raw = f.read(10_000_000 + 1)
        state = json.loads(raw.decode("utf-8")) if len(raw) <= 10_000_000 else None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        state = None
    if not isinstance(state, dict) or not isinstance(state.get("model_checkpoint_path"), str) or \
            not isinstance(state.get("all_model_checkpoint_paths"), list) or \
            not all(isinstance(p, str) for p in state["all_model_checkpoint_paths"]):
        raise ValueError(f"{path} is not a checkpoint index written by eager.train (damaged or foreign): "
                         f"restore a checkpoint by its path instead")
    return state


def _write_index(directory, latest, paths, timestamps, last_preserved):
    rel = lambda p: os.path.relpath(p, directory)      # noqa: E731 - paths inside the directory stay relative
    state = {"model_checkpoint_path": rel(latest), "all_model_checkpoint_paths": [rel(p) for p in paths],
             "all_model_checkpoint_timestamps": list(timestamps), "last_preserved_timestamp": last_preserved}
    tensor_file.atomic_write_bytes(os.path.join(directory, INDEX),
                                   json.dumps(state, indent=1).encode("utf-8"),
                                   before_rename=lambda: _stage("index-temp-written"))


def latest_checkpoint(checkpoint_dir: str, latest_filename=None):
    """The prefix of the newest checkpoint the index of `checkpoint_dir` names, or None."""
    state = read_index(os.fspath(checkpoint_dir))
    if state is None:
        return None
    path = os.path.join(checkpoint_dir, state["model_checkpoint_path"])
    return path if os.path.isfile(file_path(path)) else None


def record_single_save(prefix: str) -> None:
    """`Checkpoint.save`'s index update: the new checkpoint becomes the latest (TF keeps the others listed)."""
    directory = os.path.dirname(os.path.abspath(prefix))
    state = read_index(directory) or {"all_model_checkpoint_paths": [], "all_model_checkpoint_timestamps": []}
    paths = [os.path.join(directory, p) for p in state["all_model_checkpoint_paths"]]
    stamps = list(state.get("all_model_checkpoint_timestamps") or [time.time()] * len(paths))
    prefix = os.path.abspath(prefix)
    if prefix in paths:
        i = paths.index(prefix)
        del paths[i], stamps[i]
    _write_index(directory, prefix, paths + [prefix], stamps + [time.time()],
                 state.get("last_preserved_timestamp", time.time()))


class CheckpointManager:
    """Numbered saves of one `Checkpoint` in a directory, keeping the newest `max_to_keep` (module docstring)."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None, init_fn=None):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"max_to_keep must be None or a positive number, got {max_to_keep}")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not None.")
        self._checkpoint = checkpoint
        self._directory = os.path.abspath(os.fspath(directory))
        self._max_to_keep = max_to_keep
        self._keep_every_seconds = None if keep_checkpoint_every_n_hours is None else \
            keep_checkpoint_every_n_hours * 3600.0
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter, self._interval, self._init_fn = step_counter, checkpoint_interval, init_fn
        self._last_saved_step = None
        os.makedirs(self._directory, exist_ok=True)
        self._remove_stray_temporaries(checkpoint_name)
        state = read_index(self._directory)
        self._kept: list = []           # [(prefix, timestamp)], oldest first
        self._last_preserved = time.time()
        if state is not None:
            stamps = state.get("all_model_checkpoint_timestamps") or []
            for i, p in enumerate(state["all_model_checkpoint_paths"]):
                full = os.path.join(self._directory, p)
                if os.path.isfile(file_path(full)):
                    self._kept.append((full, float(stamps[i]) if i < len(stamps) else time.time()))
            self._last_preserved = float(state.get("last_preserved_timestamp") or self._last_preserved)

    def _remove_stray_temporaries(self, name):
        pattern = re.compile(re.escape(name) + r"-\d+" + re.escape(SUFFIX) + r"\..*\.tmp$|" + INDEX + r"\..*\.tmp$")
        for entry in os.listdir(self._directory):
            if pattern.fullmatch(entry):
                os.unlink(os.path.join(self._directory, entry))

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoints(self) -> list:
        """The prefixes of the kept checkpoints, oldest first."""
        return [p for p, _ in self._kept]

    @property
    def latest_checkpoint(self):
        return self._kept[-1][0] if self._kept else None

    @property
    def checkpoint_interval(self):
        return self._interval

    def restore_or_initialize(self):
        """Restore the latest checkpoint (returns its path), or run `init_fn` and return None."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Write `<checkpoint_name>-<number>` and retire the oldest; returns its prefix (None if skipped)."""
        if self._interval is not None and check_interval:
            step = int(self._step_counter.numpy())
            if self._last_saved_step is not None and step < self._last_saved_step + self._interval:
                return None
            self._last_saved_step = step
        counter = self._checkpoint.save_counter
        with _context.init_scope():
            counter.assign_add(constant(1, "int64"))
        number = int(counter.numpy()) if checkpoint_number is None else int(checkpoint_number.numpy()) \
            if hasattr(checkpoint_number, "numpy") else int(checkpoint_number)
        prefix = f"{self._prefix}-{number}"
        write_checkpoint(self._checkpoint, prefix, before_rename=lambda: _stage("data-temp-written"))
        _stage("data-renamed")
        now = time.time()
        kept = [(p, t) for p, t in self._kept if p != prefix] + [(prefix, now)]
        retire = []
        while self._max_to_keep is not None and len(kept) > self._max_to_keep:
            old, stamp = kept.pop(0)
            if self._keep_every_seconds is not None and stamp - self._last_preserved >= self._keep_every_seconds:
                self._last_preserved = stamp          # kept on disk, no longer listed
            else:
                retire.append(old)
        _write_index(self._directory, prefix, [p for p, _ in kept], [t for _, t in kept], self._last_preserved)
        self._kept = kept
        _stage("index-written")
        for old in retire:
            if os.path.exists(file_path(old)):
                os.unlink(file_path(old))
            _stage("old-deleted")
        return prefix
