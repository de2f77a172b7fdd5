"""`train.Checkpoint`: object-based checkpoints of models, optimizers and variables (TF2's `tf.train.Checkpoint`).

The object graph.  `Checkpoint(model=m, optimizer=opt, step=v)` is the root;
its children are its keyword objects and `save_counter`.  Edges go from a
`Module` to its attributes (sorted; Keras layers and models are Modules),
from an optimizer to its counter, hyperparameters and slots (its
`_checkpoint_children()`), and from lists, tuples and dicts to their items.
A variable's key is its path from the root, `model/dense/kernel` or
`optimizer/slots_m/0`; a variable reachable by several paths is saved once,
under its shortest (breadth-first, then sorted) path, as Keras does.

Files.  `write(prefix)` writes `prefix.safetensors` (`tensor_file`: the
safetensors layout, one tensor per variable key, atomic) whose metadata holds
a JSON description of the graph: format, version, the type of each object
node and the name of each variable.  `save(prefix)` increments `save_counter`
and writes `prefix-N`, then records it in the directory's `checkpoint` index
(`manager.py`).  `restore(path)` / `read(path)` take a prefix (with or without
the suffix).  Nothing from a file becomes code.

Restoration and deferred restoration.  `restore` assigns every saved value
whose variable exists now.  The values whose variables do not exist yet stay
pending: each object on the way to them is marked, and the value is assigned
when the variable appears, namely when a marked Module gets an attribute
(a layer's `build` assigning its weights), when a marked optimizer creates
slots (its first `apply_gradients`, or `build`), or when an object is
assigned to an attribute of the Checkpoint.  Items appended to a list after
the restore are not seen until the list's owner is re-marked by another
restore.  Assignments run eagerly (`init_scope`) even when the variable is
created while a `@function` traces.  A dtype or shape mismatch raises
ValueError naming the key.

`restore` returns a `CheckpointLoadStatus`: `assert_consumed()` raises
AssertionError while saved values are pending or variables of the graph
got no value; `assert_existing_objects_matched()` only checks the variables
that exist; `expect_partial()` returns the status (we log nothing about
unrestored values, so there is nothing to silence).

Imports numpy, `eager` modules and the standard library.
"""
from __future__ import annotations

import json
import os

import numpy as np

from .. import context as _context
from ..convert import constant
from ..module import Module
from ..variables import Variable
from . import tensor_file

FORMAT = "graphjit.train.Checkpoint"
VERSION = 1
SUFFIX = ".safetensors"
_META_KEY = "graphjit"
_HOOKS = "_graphjit_deferred"


def _is_var(x) -> bool:
    return getattr(x, "_is_variable", False)


def _escape(name) -> str:
    return str(name).replace("%", "%25").replace("/", "%2F")


def _children(obj) -> list:
    """[(edge name, child)] of one object node (module docstring)."""
    if isinstance(obj, Checkpoint):
        return sorted(obj._objects.items())
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


def _is_node(x) -> bool:
    return isinstance(x, (Checkpoint, Module, dict, list, tuple)) or callable(getattr(x, "_checkpoint_children",
                                                                                      None))


def walk(root, prefix: str = "", seen=None):
    """({key: variable}, {key: object node}) reachable from `root`, breadth first, each object once."""
    seen = set() if seen is None else seen
    variables, nodes = {}, {}
    queue = [(prefix, root)]
    seen.add(id(root))
    while queue:
        nxt = []
        for path, obj in queue:
            if _is_var(obj):
                variables[path] = obj
                continue
            nodes[path] = obj
            for name, child in _children(obj):
                if id(child) in seen or not (_is_var(child) or _is_node(child)):
                    continue
                seen.add(id(child))
                nxt.append((f"{path}/{_escape(name)}" if path else _escape(name), child))
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
        values[key] = np.asarray(var.numpy())
    graph = {"format": FORMAT, "version": VERSION,
             "objects": {k: type(v).__name__ for k, v in nodes.items()},
             "variables": {k: v.name for k, v in variables.items()}}
    target = file_path(prefix)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    tensor_file.write_tensors(target, values, {_META_KEY: json.dumps(graph, sort_keys=True)}, before_rename)
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
    if not isinstance(graph, dict) or graph.get("format") != FORMAT or graph.get("version") != VERSION:
        raise ValueError(f"{target} is a tensor file but not a version-{VERSION} {FORMAT} checkpoint")
    return values


class _Restoration:
    """The values of one restore that still wait for their variables, and the variables that got one."""

    def __init__(self, values: dict, path: str):
        self.pending = dict(values)
        self.path = path
        self.restored: dict = {}         # key -> variable

    def attach(self, obj, prefix: str) -> None:
        """Assign the pending values of `obj`'s subtree (rooted at key `prefix`) and mark its object nodes."""
        if not self.pending:
            return
        variables, nodes = walk(obj, prefix)
        for key, var in variables.items():
            if key in self.pending:
                self._assign(key, var, self.pending.pop(key))
        for key, node in nodes.items():
            inner = key + "/" if key else ""
            if any(k.startswith(inner) for k in self.pending) and not isinstance(node, (dict, list, tuple)):
                hooks = node.__dict__.setdefault(_HOOKS, [])
                if not any(r is self and p == key for r, p in hooks):
                    hooks.append((self, key))

    def _assign(self, key, var, value):
        if value.dtype != var.dtype.np_dtype or not var.shape.is_compatible_with(value.shape):
            raise ValueError(f"Checkpoint {self.path}: {key} is {value.dtype}{list(value.shape)} in the checkpoint "
                             f"but variable {var.name} is {var.dtype.name}{var.shape}")
        with _context.init_scope():
            var.assign(constant(value, var.dtype))
        self.restored[key] = var


def notify(obj, attr=None, value=None) -> None:
    """Deferred restoration hook: `obj` got attribute `attr` = `value` (or, with no attr, new state)."""
    hooks = obj.__dict__.get(_HOOKS)
    if not hooks:
        return
    for restoration, key in list(hooks):
        if not restoration.pending:
            hooks.remove((restoration, key))
        elif attr is None:
            restoration.attach(obj, key)
        elif _is_var(value) or _is_node(value):
            restoration.attach(value, f"{key}/{_escape(attr)}" if key else _escape(attr))


class CheckpointLoadStatus:
    """What a restore did; see the module docstring."""

    def __init__(self, restoration: _Restoration, root):
        self._restoration, self._root = restoration, root

    def _unmatched(self) -> list:
        variables, _ = walk(self._root)
        got = {id(v) for v in self._restoration.restored.values()}
        return sorted(k for k, v in variables.items() if id(v) not in got)

    def assert_consumed(self):
        pending, unmatched = sorted(self._restoration.pending), self._unmatched()
        if pending or unmatched:
            raise AssertionError(f"Checkpoint {self._restoration.path} was not consumed: saved values with no "
                                 f"variable (yet): {pending[:20]}{' ...' if len(pending) > 20 else ''}; variables "
                                 f"with no saved value: {unmatched[:20]}{' ...' if len(unmatched) > 20 else ''}")
        return self

    def assert_existing_objects_matched(self):
        unmatched = self._unmatched()
        if unmatched:
            raise AssertionError(f"Checkpoint {self._restoration.path}: variables with no saved value: {unmatched}")
        return self

    def assert_nontrivial_match(self):
        if not self._restoration.restored:
            raise AssertionError(f"Checkpoint {self._restoration.path}: nothing was restored")
        return self

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        """Nothing to run: values are assigned eagerly."""

    initialize_or_restore = run_restore_ops


class Checkpoint:
    """Groups objects to save and restore together (module docstring)."""

    def __init__(self, root=None, **kwargs):
        objects = dict(kwargs)
        if root is not None:
            objects["root"] = root
        for name, obj in objects.items():
            if not (_is_var(obj) or _is_node(obj)):
                raise ValueError(f"Checkpoint: {name}={type(obj).__name__} is not trackable: pass Modules (models, "
                                 f"layers), optimizers, Variables, or lists/dicts of them")
        with _context.init_scope():
            counter = Variable(constant(0, "int64"), trainable=False, name="save_counter")
        object.__setattr__(self, "_objects", {**objects, "save_counter": counter})

    @property
    def save_counter(self):
        return self._objects["save_counter"]

    def __getattr__(self, name):
        objects = self.__dict__.get("_objects", {})
        if name in objects:
            return objects[name]
        raise AttributeError(f"'Checkpoint' object has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        if name == "save_counter":
            raise AttributeError("Checkpoint.save_counter is managed by save()")
        self._objects[name] = value
        notify(self, name, value)

    def write(self, file_prefix: str, options=None) -> str:
        """Write `file_prefix.safetensors` (no numbering, no index); returns the prefix."""
        return write_checkpoint(self, os.fspath(file_prefix))

    def save(self, file_prefix: str, options=None) -> str:
        """Increment `save_counter`, write `file_prefix-N` and record it in the directory's index."""
        from .manager import record_single_save
        with _context.init_scope():
            self.save_counter.assign_add(constant(1, "int64"))
        path = self.write(f"{os.fspath(file_prefix)}-{int(self.save_counter.numpy())}")
        record_single_save(path)
        return path

    def read(self, save_path: str, options=None) -> CheckpointLoadStatus:
        return self.restore(save_path)

    def restore(self, save_path, options=None) -> CheckpointLoadStatus:
        """Assign the saved values now, or when their variables are created (module docstring)."""
        restoration = _Restoration({} if save_path is None else read_checkpoint(os.fspath(save_path)),
                                   "<none>" if save_path is None else os.fspath(save_path))
        restoration.attach(self, "")
        return CheckpointLoadStatus(restoration, self)
