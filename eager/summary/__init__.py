"""`eager.summary`: TensorBoard summaries, TensorFlow 2 style (optional extra `[tensorboard]`).

    writer = eager.summary.create_file_writer("logs/run1")
    with writer.as_default():
        eager.summary.scalar("loss", loss, step=step)      # eagerly, or inside @function (every call)
        eager.summary.histogram("weights", w, step=step)
        eager.summary.graph(train_step.get_concrete_function(x, y))

- `create_file_writer(logdir)` -> `SummaryWriter` (`as_default(step=None)`,
  `set_as_default()`, `flush()`, `close()`); ImportError naming the extra when
  the `tensorboard` package is missing (writer.py).
- `scalar`, `histogram`: stateful graph ops (ops.py).
- `graph(graph_or_concrete_function)`: writes the graph for TensorBoard's
  graph dashboard (graph_proto.py), eagerly only.
- `experimental.set_step(step)` / `experimental.get_step()`; `flush()`.

Nothing here imports `tensorboard` until a writer is created.  Imports the
eager core only.
"""
from __future__ import annotations

import types as _types

from ..context import executing_eagerly
from .graph_proto import to_tensorboard_graph_def
from .ops import histogram, scalar
from .writer import SummaryWriter, create_file_writer, default_writer, get_step, set_step

__all__ = ["create_file_writer", "SummaryWriter", "scalar", "histogram", "graph", "flush", "experimental"]

experimental = _types.SimpleNamespace(set_step=set_step, get_step=get_step)


def flush(writer=None):
    """Flush `writer` (default: the default writer)."""
    writer = writer or default_writer()
    if writer is not None:
        writer.flush()


def graph(graph_data):
    """Write a graph (a Graph, or a concrete function: its `.graph`) for the graph dashboard.

    Returns True, or False when no default writer is set.  Eager only, as in TensorFlow.
    """
    if not executing_eagerly():
        raise ValueError("summary.graph() must be called eagerly (outside @function and graph building)")
    g = graph_data if hasattr(graph_data, "get_operations") else getattr(graph_data, "graph", None)
    if g is None or not hasattr(g, "get_operations"):
        raise TypeError(f"summary.graph expects a Graph or a concrete function (with .graph), got "
                        f"{type(graph_data).__name__}; for a @function use f.get_concrete_function(...)")
    writer = default_writer()
    if writer is None:
        return False
    writer.write_graph(to_tensorboard_graph_def(g).SerializeToString())
    return True


from ..namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
