"""`model.save_weights(path)` / `model.load_weights(path)`: graphjit's own weights format.

One file (any name; Keras 3's `*.weights.h5` is accepted, the content is not HDF5) in the
safetensors layout, written and read by `eager.train.tensor_file` (the same module that writes
checkpoints): an 8-byte header length, a JSON header naming each tensor's dtype, shape and byte
range, then the raw little-endian bytes.  Each weight is stored under `NNNN/<path>`, its
position in `model.weights` and its Keras path (`0000/dense/kernel`), and the header's metadata
says `{"format": "graphjit.keras.weights", "version": "3"}` and holds the file's checksum
(`tensor_file.DIGEST_KEY`), verified when it is read; version 2 files, which have none, still
load.

Loading matches weights by position, as Keras matches them by the model's structure (layer
names may differ between two instances of the same architecture), and checks the count, every
shape and every dtype first: a mismatch raises before any weight changes.  The file is written
to a temporary name and renamed, so a crash never leaves half a file; the reader checks the
header before it reads any tensor.  Nothing read from the file becomes code: JSON and raw
numbers, no pickle.
"""
from __future__ import annotations

import os
import re

from ..train import tensor_file
from ..variable_storage import snapshot

FORMAT, VERSION = "graphjit.keras.weights", "3"
VERSIONS_READ = ("2", "3")
_KEY = re.compile(r"^(\d{4,})/(.*)$")


def save_weights(model, path) -> None:
    path = os.fspath(path)
    if not model.built:
        raise ValueError(f"save_weights: model {model.name!r} is not built yet; call it on data (or build it) first")
    tensors = {f"{i:04d}/{w.path}": snapshot(w) for i, w in enumerate(model.weights)}      # no copies
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tensor_file.write_tensors(path, tensors, {"format": FORMAT, "version": VERSION}, checksum=True)


def read_weights(path):
    """[(saved path, array)] in model order, from a weights file, validated."""
    path = os.fspath(path)
    try:
        tensors, metadata = tensor_file.read_tensors(path)
    except tensor_file.TensorFileError as e:
        raise ValueError(f"load_weights: {path} is not a graphjit weights file ({e})") from None
    metadata = metadata or {}
    if metadata.get("format") != FORMAT:
        raise ValueError(f"load_weights: {path} is not a graphjit weights file (format {metadata.get('format')!r})")
    if metadata.get("version") not in VERSIONS_READ:
        raise ValueError(f"load_weights: {path} has format version {metadata.get('version')!r}; this graphjit "
                         f"reads versions {', '.join(VERSIONS_READ)}")
    if metadata["version"] != "2" and not tensor_file.has_checksum(metadata):
        raise ValueError(f"load_weights: {path}: a version-{metadata['version']} weights file must carry a checksum "
                         f"and this one has none: the file was changed or damaged after it was written")
    entries = []
    for key, value in tensors.items():
        m = _KEY.match(key)
        if m is None:
            raise ValueError(f"load_weights: {path}: tensor {key!r} is not named 'NNNN/<weight path>'")
        entries.append((int(m.group(1)), m.group(2), value))
    entries.sort(key=lambda e: e[0])
    if [e[0] for e in entries] != list(range(len(entries))):
        raise ValueError(f"load_weights: {path}: the weights are not numbered 0..{len(entries) - 1}")
    return [(p, v) for _, p, v in entries]


def load_weights(model, path) -> None:
    saved = read_weights(path)
    weights = model.weights
    if not model.built:
        raise ValueError(f"load_weights: model {model.name!r} is not built yet; call it on data (or build it) "
                         f"first, so its weights exist")
    if len(saved) != len(weights):
        raise ValueError(f"load_weights: {path} holds {len(saved)} weights but model {model.name!r} has "
                         f"{len(weights)}")
    for w, (saved_path, a) in zip(weights, saved):
        if tuple(a.shape) != tuple(w.shape.as_list()) or a.dtype != w.dtype.as_numpy_dtype:
            raise ValueError(f"load_weights: saved weight {saved_path!r} ({a.dtype.name}{list(a.shape)}) does "
                             f"not fit {w.path!r} ({w.dtype.name}{w.shape.as_list()})")
    for w, (_, a) in zip(weights, saved):
        w.replace_stored_array(a)            # the array read from the file is ours: no second copy of the model
