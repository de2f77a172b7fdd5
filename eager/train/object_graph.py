"""The object graph of a `train.Checkpoint` and its file (checkpoint.py has the object and restoration).

`walk(root)` finds every variable reachable from `root` and its key, the path
from the root (`model/dense/kernel`): edges go from an object with a
`_checkpoint_children()` method (a `Checkpoint`, an optimizer) to its
children, from a `Module` to its attributes (sorted), from lists, tuples and
dicts to their items; each object once, breadth first, so a variable
reachable by several paths has its shortest.  `write_checkpoint` /
`read_checkpoint`: the safetensors file (`tensor_file`) holding one tensor per
key, with a JSON description of the graph in its metadata (format, version,
each object node's type, each variable's name) and, from version 2 on, a
checksum of the whole file that reading verifies (version 1 files, which have
none, are still read).  Nothing from a file becomes code.

Imports numpy, `eager` modules and the standard library.
"""
from __future__ import annotations

import json
import os

from ..module import Module
from ..variable_storage import snapshot
from . import tensor_file

FORMAT = "graphjit.train.Checkpoint"
VERSION = 2
VERSIONS_READ = (1, 2)
SUFFIX = ".safetensors"
_META_KEY = "graphjit"


def is_var(x) -> bool:
    return getattr(x, "_is_variable", False)


def escape(name) -> str:
    return str(name).replace("%", "%25").replace("/", "%2F")


def _children(obj) -> list:
    """[(edge name, child)] of one object node (module docstring)."""
    kids = getattr(obj, "_checkpoint_children", None)
    if callable(kids):
        return sorted(kids().items())
    if isinstance(obj, Module):
        attrs = vars(obj)
        return [(k, attrs[k]) for k in sorted(attrs) if not k.startswith("_graphjit") and not k.startswith("__")]
    if isinstance(obj, dict):
        return [(str(k), obj[k]) for k in sorted(obj, key=repr)]
    if isinstance(obj, (list, tuple)):
        return list(enumerate(obj))
    return []


def is_node(x) -> bool:
    return isinstance(x, (Module, dict, list, tuple)) or callable(getattr(x, "_checkpoint_children", None))


def walk(root, prefix: str = "", seen=None):
    """({key: variable}, {key: object node}) reachable from `root`, breadth first, each object once."""
    seen = set() if seen is None else seen
    variables, nodes = {}, {}
    queue = [(prefix, root)]
    seen.add(id(root))
    while queue:
        nxt = []
        for path, obj in queue:
            if is_var(obj):
                variables[path] = obj
                continue
            nodes[path] = obj
            for name, child in _children(obj):
                if id(child) in seen or not (is_var(child) or is_node(child)):
                    continue
                seen.add(id(child))
                nxt.append((f"{path}/{escape(name)}" if path else escape(name), child))
        queue = nxt
    return variables, nodes


def file_path(prefix: str) -> str:
    return prefix if prefix.endswith(SUFFIX) else prefix + SUFFIX


def write_checkpoint(root, prefix: str, before_rename=None) -> str:
    """Write every variable reachable from `root` to `prefix.safetensors`; returns `prefix`."""
    variables, nodes = walk(root)
    values = {}
    for key, var in variables.items():
        if not var.is_initialized():
            raise ValueError(f"Checkpoint.write: variable {key} ({var.name}) holds no value yet")
        values[key] = snapshot(var)        # no copy: see variable_storage
    graph = {"format": FORMAT, "version": VERSION,
             "objects": {k: type(v).__name__ for k, v in nodes.items()},
             "variables": {k: v.name for k, v in variables.items()}}
    target = file_path(prefix)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    tensor_file.write_tensors(target, values, {_META_KEY: json.dumps(graph, sort_keys=True)}, before_rename,
                              checksum=True)
    return prefix[:-len(SUFFIX)] if prefix.endswith(SUFFIX) else prefix


def read_checkpoint(path: str) -> dict:
    """{key: array} saved in checkpoint `path` (a prefix or the file); ValueError for anything else."""
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, "graphjit_checkpoint.json")):
        raise ValueError(f"{path} was written by tracing.save_checkpoint, not by eager.train.Checkpoint: restore it "
                         f"with tracing.save.restore_checkpoint(obj, path) (paths there are attribute paths), then "
                         f"save a train.Checkpoint if you want one")
    target = file_path(path)
    if not os.path.isfile(target):
        raise ValueError(f"no checkpoint at {path}: {target} does not exist")
    values, metadata = tensor_file.read_tensors(target)
    try:
        graph = json.loads(metadata.get(_META_KEY, ""))
    except ValueError:
        graph = None
    if not isinstance(graph, dict) or graph.get("format") != FORMAT or graph.get("version") not in VERSIONS_READ:
        raise ValueError(f"{target} is a tensor file but not a {FORMAT} checkpoint of version "
                         f"{' or '.join(map(str, VERSIONS_READ))}")
    if graph["version"] >= 2 and not tensor_file.has_checksum(metadata):
        raise ValueError(f"{target}: a version-{graph['version']} checkpoint must carry a checksum and this one has "
                         f"none: the file was changed or damaged after it was written")
    return values
