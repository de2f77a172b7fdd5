"""Variable checkpoints: `save_checkpoint(obj, path)` / `restore_checkpoint(obj, path)`.

A checkpoint stores only variable VALUES, keyed by where each variable sits in
the object (its attribute path, as TensorFlow's object-based checkpoints do),
so renaming a variable does not break restoring while moving it does:

    obj.dense.w        -> "dense.w"
    obj.layers[1].b    -> "layers[1].b"
    obj.table['emb']   -> "table['emb']"

`obj` may be a `Module`, a Variable, or a list/tuple/dict of them.  Paths
are found by walking Module attributes in sorted order and containers in
order (like `Module.variables`), each variable once (its first path).  Other
objects are not walked (optimizers are, see below): put their variables in a dict,
e.g. `save_checkpoint({"model": m, "step": step_var}, path)`.  An optimizer
(any object with `_checkpoint_children()`) contributes its step counter,
hyperparameter variables and slots: `optimizer.iterations`,
`optimizer.slots_m[0]` (slots indexed in the order the optimizer first saw
its variables).  Restoring into a fresh optimizer needs its slots first:
`opt.build(model.trainable_variables)`.

Directory layout (written atomically like `tracing.save`):

    graphjit_checkpoint.json   {"format": "graphjit.Checkpoint", "version": 2,
                                "variables": [{"path", "name", "dtype", "shape", "array"}],
                                "files": {"variables.npz": sha256},
                                "manifest_sha256": sha256 of the rest}
    variables.npz              one array per variable (no pickles)

The manifest checksums itself (version 2; `format.manifest_digest`): one
flipped bit turned a record's array key "v0" into "v1", and a variable of
the same shape as variable 1 was restored from its value without a word.
Version 1 checkpoints (written before) are read without it.

`restore_checkpoint` checks everything first (file checksums, every path
present, dtypes and shapes equal) and only then assigns, so a failed restore
changes nothing.  Mismatches raise `SavedModelError` listing missing and
unexpected paths; `strict=False` restores the paths that match and returns
what was skipped instead.  Returns a `RestoreStatus`.

Imports `numpy`, `eager` and sibling modules.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from eager.module import Module
from eager.variable_storage import snapshot

from . import format as fmt
from .format import SavedModelError


def variable_paths(obj) -> dict:
    """{path: Variable} for every variable reachable from `obj` (see module docstring).

    An object with a `_checkpoint_paths` dict (what `tracing.load` returns for
    a saved Module) supplies its paths directly.
    """
    given = getattr(obj, "_checkpoint_paths", None)
    if isinstance(given, dict) and given:
        return dict(given)
    out: dict = {}
    seen: set = set()
    stack = [("", obj)]
    while stack:
        path, x = stack.pop()
        if getattr(x, "_is_variable", False):
            if id(x) not in seen:
                seen.add(id(x))
                out[path or "<root>"] = x
            continue
        if id(x) in seen:
            continue
        children = []
        if isinstance(x, dict):
            children = [(f"{path}[{k!r}]", x[k]) for k in sorted(x, key=repr)]
        elif isinstance(x, (list, tuple)):
            children = [(f"{path}[{i}]", v) for i, v in enumerate(x)]
        elif callable(getattr(x, "_checkpoint_children", None)):
            # an optimizer: its step counter, hyperparameters and slots (eager/optimizers.py)
            kids = x._checkpoint_children()
            children = [(f"{path}.{k}" if path else k, kids[k]) for k in sorted(kids)]
        elif isinstance(x, Module):
            attrs = vars(x)
            children = [(f"{path}.{k}" if path else k, attrs[k]) for k in sorted(attrs)
                        if not k.startswith("_graphjit") and not k.startswith("__")]
        else:
            continue
        seen.add(id(x))
        stack.extend(reversed(children))
    return out


@dataclass
class RestoreStatus:
    """What `restore_checkpoint` did."""

    restored: list = field(default_factory=list)
    missing: list = field(default_factory=list)       # in the object, not in the checkpoint
    unexpected: list = field(default_factory=list)    # in the checkpoint, not in the object

    def assert_consumed(self) -> "RestoreStatus":
        if self.missing or self.unexpected:
            raise SavedModelError(f"checkpoint does not match the object: missing {self.missing}, "
                                  f"unexpected {self.unexpected}")
        return self


def save_checkpoint(obj, path: str, read=None) -> str:
    """Write the values of every variable of `obj` to directory `path`; returns the path.

    `read(variables) -> values` (default: each variable's own value) reads them where they live: a
    distributed session's tasks (saver.py)."""
    paths = variable_paths(obj)
    if not paths:
        raise ValueError(f"save_checkpoint: {type(obj).__name__} has no variables")
    values = read(list(paths.values())) if read is not None else [snapshot(var) for var in paths.values()]
    recs, arrays = [], {}
    for i, ((p, var), value) in enumerate(zip(paths.items(), values)):
        if value is None:
            raise ValueError(f"save_checkpoint: variable {p} ({var.name}) holds no value yet: run its initializer "
                             f"first")
        value = np.asarray(value)
        if value.dtype.kind in "OSU":
            raise ValueError(f"save_checkpoint: variable {p} holds strings, which checkpoints do not support")
        arrays[f"v{i}"] = np.asarray(value, order="C")      # np.savez writes it in chunks: no copy of the model
        recs.append({"path": p, "name": var._name, "dtype": var.dtype.name, "shape": list(value.shape),
                     "array": f"v{i}"})
    manifest = {"format": fmt.CHECKPOINT_FORMAT, "version": 2, "variables": recs, "files": {}}
    with fmt.atomic_directory(path, fmt.CHECKPOINT_MANIFEST) as tmp:
        manifest["files"][fmt.VARIABLES_FILE] = fmt.write_arrays(os.path.join(tmp, fmt.VARIABLES_FILE), arrays)
        fmt.write_json(os.path.join(tmp, fmt.CHECKPOINT_MANIFEST), fmt.seal_manifest(manifest))
    return os.path.abspath(path)


def read_checkpoint(path: str) -> dict:
    """{path: ndarray} stored in checkpoint directory `path` (SavedModelError if bad)."""
    mpath = fmt.check_inside(path, fmt.CHECKPOINT_MANIFEST)
    if not os.path.isfile(mpath):
        raise SavedModelError(f"{path} is not a checkpoint written by save_checkpoint ({fmt.CHECKPOINT_MANIFEST} "
                              f"is missing)")
    m = fmt.read_json(mpath, path)
    if not isinstance(m, dict) or m.get("format") != fmt.CHECKPOINT_FORMAT or m.get("version") not in (1, 2) \
            or type(m.get("version")) is not int:
        raise SavedModelError(f"{mpath} is not a graphjit checkpoint manifest of version 1 or 2")
    if m["version"] == 2 and m.get(fmt.MANIFEST_DIGEST) != fmt.checked_digest(m, mpath):
        raise SavedModelError(f"{mpath} is corrupted: its content does not match its own SHA-256 "
                              f"({fmt.MANIFEST_DIGEST})")
    files, recs = m.get("files"), m.get("variables")
    if not isinstance(files, dict) or not isinstance(recs, list):
        raise SavedModelError(f"{mpath}: malformed manifest ('files' dict and 'variables' list required)")
    vpath = fmt.check_inside(path, fmt.VARIABLES_FILE)
    if not os.path.isfile(vpath) or files.get(fmt.VARIABLES_FILE) != fmt.sha256_file(vpath):
        raise SavedModelError(f"{path}: {fmt.VARIABLES_FILE} is missing or corrupted (checksum mismatch)")
    arrays = fmt.read_arrays(vpath, path)
    out = {}
    for i, r in enumerate(recs):
        if not isinstance(r, dict) or not isinstance(r.get("path"), str) or r.get("array") not in arrays:
            raise SavedModelError(f"{mpath}: malformed variable record #{i}")
        out[r["path"]] = arrays[r["array"]]
    return out


def _slot_hint(unexpected) -> str:
    if any(".slots_" in p or p.startswith("slots_") for p in unexpected):
        return ("; the checkpoint holds optimizer slots the optimizer does not have yet: call "
                "optimizer.build(model.trainable_variables) before restoring")
    return ""


def restore_checkpoint(obj, path: str, strict: bool = True, assign=None) -> RestoreStatus:
    """Assign the values stored in checkpoint `path` to the variables of `obj` (see module docstring).

    `assign([(variable, value), ...])` (default: each variable's `assign`) writes them where they live."""
    values = read_checkpoint(path)
    paths = variable_paths(obj)
    status = RestoreStatus(missing=[p for p in paths if p not in values],
                           unexpected=[p for p in values if p not in paths])
    if strict and (status.missing or status.unexpected):
        raise SavedModelError(f"restore_checkpoint({path}): the checkpoint does not match the object: variables "
                              f"missing from the checkpoint: {status.missing}; in the checkpoint but not in the "
                              f"object: {status.unexpected} (pass strict=False to restore the matching ones)"
                              f"{_slot_hint(status.unexpected)}")
    todo = []
    for p, var in paths.items():
        if p not in values:
            continue
        v = values[p]
        if v.dtype != var.dtype.np_dtype or not var.shape.is_compatible_with(v.shape):
            raise SavedModelError(f"restore_checkpoint({path}): {p} is {v.dtype}{list(v.shape)} in the checkpoint "
                                  f"but the variable is {var.dtype.name}{var.shape}")
        todo.append((p, var, v))
    if assign is not None:
        assign([(var, v) for _, var, v in todo])
    for p, var, v in todo:
        if assign is None:
            var.replace_stored_array(v)      # the array read from the file is ours: no second copy of the model
        status.restored.append(p)
    return status
