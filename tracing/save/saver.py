"""`Saver`: checkpoints of a Session's variables, wherever they live (TF1's `tf.compat.v1.train.Saver`).

    saver = Saver()                       # the graph's global variables (or Saver(var_list))
    saver.save(sess, "/tmp/ckpt")         # values read from the session's tasks
    saver.restore(sess, "/tmp/ckpt")      # values written back to them

The directory is a checkpoint of checkpoint.py (same format, atomic write,
checksums; paths are the variables' names, `['dense/w']`), so
`restore_checkpoint` reads it too.  With a local Session the values are the
`Variable` objects' own; with a distributed one (`Session(target="ray://...")`)
they are read from and written to the tasks the variables live on, so a
checkpoint covers every task.  A distributed session remembers the last
checkpoint saved with it: `SessionConfig(task_recovery="restore")` restores
it after a task died.

Imports `graph_runtime` and sibling modules.
"""
from __future__ import annotations

from graph_runtime.graph import GraphKeys

from .checkpoint import RestoreStatus, restore_checkpoint, save_checkpoint


class Saver:
    """Save and restore variables of a Session (module docstring)."""

    def __init__(self, var_list=None):
        if var_list is not None:
            var_list = list(var_list.values()) if isinstance(var_list, dict) else list(var_list)
            bad = [v for v in var_list if not getattr(v, "_is_variable", False)]
            if bad:
                raise TypeError(f"Saver: var_list must hold Variables, got {bad[0]!r}")
        self._var_list = var_list

    def _named(self, sess) -> dict:
        variables = self._var_list
        if variables is None:
            variables = sess.graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
        named: dict = {}
        for v in variables:
            if v.name in named and named[v.name] is not v:
                raise ValueError(f"Saver: two variables are named {v.name!r}; pass a dict name -> variable")
            named[v.name] = v
        if not named:
            raise ValueError("Saver: there are no variables to save")
        return named

    def save(self, sess, save_path: str) -> str:
        """Write the variables' current values (read through `sess`) to directory `save_path`."""
        path = save_checkpoint(self._named(sess), save_path, read=sess._read_variables)
        sess._remember_checkpoint(lambda: self.restore(sess, path))
        return path

    def restore(self, sess, save_path: str) -> RestoreStatus:
        """Assign the values in `save_path` to the variables (through `sess`: on their tasks)."""
        return restore_checkpoint(self._named(sess), save_path, assign=sess._assign_variables)
