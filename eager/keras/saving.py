"""`model.save_weights(path)` / `model.load_weights(path)`: graphjit's own weights format.

One file (any name; Keras 3's `*.weights.h5` is accepted, the content is not HDF5): a NumPy
`.npz` archive, written with `numpy.savez` and read with `numpy.load(allow_pickle=False)`, that
holds one array per weight (`w0000`, `w0001`, ... in the order of `model.weights`) and a
`manifest` entry, UTF-8 JSON bytes stored as a uint8 array:

    {"format": "graphjit.keras.weights", "version": 1,
     "weights": [{"key": "w0000", "path": "dense/kernel", "shape": [64, 32], "dtype": "float32"}, ...]}

Loading matches weights by position, as Keras matches them by the model's structure (layer
names may differ between two instances of the same architecture), and checks the count,
every shape and every dtype first: a mismatch raises before any weight changes.  The file is
written next to its destination and renamed, so a crash never leaves half a file.  Nothing
read from the file becomes code: it is arrays and JSON.
"""
from __future__ import annotations

import json
import os
import tempfile

import numpy as np

FORMAT, VERSION = "graphjit.keras.weights", 1


def save_weights(model, path) -> None:
    path = os.fspath(path)
    weights = model.weights
    if not model.built:
        raise ValueError(f"save_weights: model {model.name!r} is not built yet; call it on data (or build it) first")
    arrays, records = {}, []
    for i, w in enumerate(weights):
        key = f"w{i:04d}"
        value = np.asarray(w.numpy())
        arrays[key] = value
        records.append({"key": key, "path": w.path, "shape": list(value.shape), "dtype": value.dtype.name})
    manifest = {"format": FORMAT, "version": VERSION, "weights": records}
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode("utf-8"), np.uint8)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".weights-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_weights(path):
    """(manifest, [arrays in order]) from a weights file, validated."""
    path = os.fspath(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"load_weights: {path} is not a graphjit weights file ({e})") from None
    with archive:
        if "manifest" not in archive.files:
            raise ValueError(f"load_weights: {path} has no manifest: not a graphjit weights file")
        try:
            manifest = json.loads(bytes(archive["manifest"]).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"load_weights: {path}: unreadable manifest ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(f"load_weights: {path} is not a graphjit weights file (format "
                             f"{manifest.get('format') if isinstance(manifest, dict) else None!r})")
        if manifest.get("version") != VERSION:
            raise ValueError(f"load_weights: {path} has format version {manifest.get('version')!r}; this graphjit "
                             f"reads version {VERSION}")
        records = manifest.get("weights")
        if not isinstance(records, list):
            raise ValueError(f"load_weights: {path}: the manifest lists no weights")
        arrays = []
        for r in records:
            key = r.get("key") if isinstance(r, dict) else None
            if not isinstance(key, str) or key not in archive.files or key == "manifest":
                raise ValueError(f"load_weights: {path}: manifest entry {r!r} names no array of the file")
            arrays.append(archive[key])
    return manifest, arrays


def load_weights(model, path) -> None:
    manifest, arrays = read_weights(path)
    weights = model.weights
    if not model.built:
        raise ValueError(f"load_weights: model {model.name!r} is not built yet; call it on data (or build it) "
                         f"first, so its weights exist")
    if len(arrays) != len(weights):
        raise ValueError(f"load_weights: {path} holds {len(arrays)} weights but model {model.name!r} has "
                         f"{len(weights)}")
    for w, a, r in zip(weights, arrays, manifest["weights"]):
        if tuple(a.shape) != tuple(w.shape.as_list()) or a.dtype != w.dtype.as_numpy_dtype:
            raise ValueError(f"load_weights: saved weight {r.get('path')!r} ({a.dtype.name}{list(a.shape)}) does "
                             f"not fit {w.path!r} ({w.dtype.name}{w.shape.as_list()})")
    for w, a in zip(weights, arrays):
        w.assign(a)
