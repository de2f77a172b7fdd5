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

Imports `eager` modules and the standard library.
"""
from __future__ import annotations

import os

from .. import context as _context
from ..convert import constant
from ..variables import Variable
from .manager import record_single_save
from .object_graph import is_node, is_var, escape, read_checkpoint, walk, write_checkpoint

_HOOKS = "_graphjit_deferred"    # the attribute of a marked object holding its `_Waiting` restores


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
                hooks = node.__dict__.setdefault(_HOOKS, _Waiting())
                if not any(r is self and p == key for r, p in hooks):
                    hooks.append((self, key))

    def _assign(self, key, var, value):
        if value.dtype != var.dtype.np_dtype or not var.shape.is_compatible_with(value.shape):
            raise ValueError(f"Checkpoint {self.path}: {key} is {value.dtype}{list(value.shape)} in the checkpoint "
                             f"but variable {var.name} is {var.dtype.name}{var.shape}")
        with _context.init_scope():
            var.assign(constant(value, var.dtype))
        self.restored[key] = var


class _Waiting(list):
    """The restores waiting below one marked object, as `(restoration, key of the object)` pairs.

    A marked object keeps this under `_graphjit_deferred` and calls its `notify` when it changes: a
    `Module` for each attribute set, an optimizer when it makes slots, a `Checkpoint` for each object
    assigned to it.  So the object's own module need not know eager.train.
    """

    def notify(self, obj, attr=None, value=None) -> None:
        """`obj` got attribute `attr` = `value` (or, with no attr, new state): assign what now has a variable."""
        for restoration, key in list(self):
            if not restoration.pending:
                self.remove((restoration, key))
            elif attr is None:
                restoration.attach(obj, key)
            elif is_var(value) or is_node(value):
                restoration.attach(value, f"{key}/{escape(attr)}" if key else escape(attr))


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
            if not (is_var(obj) or is_node(obj)):
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
        hooks = self.__dict__.get(_HOOKS)
        if hooks:
            hooks.notify(self, name, value)

    def _checkpoint_children(self) -> dict:
        """The object graph's edges from the root: its keyword objects and `save_counter`."""
        return self._objects

    def write(self, file_prefix: str, options=None) -> str:
        """Write `file_prefix.safetensors` (no numbering, no index); returns the prefix."""
        return write_checkpoint(self, os.fspath(file_prefix))

    def save(self, file_prefix: str, options=None) -> str:
        """Increment `save_counter`, write `file_prefix-N` and record it in the directory's index."""
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
