"""The global step variable: `create_global_step(graph=None)`, `get_global_step(graph=None)` (TF semantics).

`create_global_step` makes an int64 scalar `Variable` named "global_step"
(not trainable, in GLOBAL_VARIABLES and GLOBAL_STEP) in the graph, and raises
ValueError when the graph already has one.  `get_global_step` returns it:
the one variable of the GLOBAL_STEP collection, else a variable named
"global_step" of the graph, else None; TypeError when the collection holds
several, or the variable is not an integer.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

from eager.dtypes import int64
from eager.variables import Variable

from .graph import GraphKeys, get_default_graph, name_scope


def get_global_step(graph=None):
    graph = get_default_graph() if graph is None else graph
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        raise TypeError(f"There are multiple items in collection {GraphKeys.GLOBAL_STEP!r}: {found}. There should "
                        f"be only one.")
    step = found[0] if found else graph._variables.get("global_step")
    if step is None:
        return None
    if not step.dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {step.dtype.name}')
    return step


def create_global_step(graph=None):
    graph = get_default_graph() if graph is None else graph
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), name_scope(""):
        step = Variable(0, dtype=int64, trainable=False, name="global_step", shape=[])
    graph.add_to_collection(GraphKeys.GLOBAL_STEP, step)
    return step
