"""Map vectorization: `map(fn).batch(n)` runs `fn` once per batch when that gives the same bits as per row.

tf.data's static optimization `map_vectorization` rewrites `map -> batch` as
`batch -> map(vectorized fn)`: the function runs once on a whole batch
instead of once per row (each call costs a graph run, which for a cheap
function is most of the input pipeline's time, and under the GIL it competes
with the training step).  `vectorized_map(fn, row_spec)` returns that batched
function, or None when the per-row path must stay.  The rules are TF's
(`grappler/optimizers/data/map_vectorization.cc`), made strict enough that
the batched result equals the stacked per-row results bit for bit:

1. the map's input spec is fully defined (every dimension known), so its
   rows always stack (TF: inputs of unknown shape might not be batchable);
2. its output spec is fully defined, so a batching error (rows of different
   shapes) cannot be hidden by running on a batch;
3. no stateful op (random numbers, variable reads, asserts, prints) and no
   captured symbolic tensor: once per batch is not once per row;
4. every other op is declared `rowwise_exact` in the op registry (opt-in per
   op: casts, IEEE-754 arithmetic, comparisons, ...; reductions, reshapes
   and transcendental functions are not) and its operands line up under
   broadcasting with a leading batch dimension: an operand that depends on
   the row has the op's full per-row rank, one that does not (a constant)
   has no more than that rank;
5. every output depends on the row (a constant output would not be stacked);
6. the function traced on the batched specs (`[None] + row shape`) is the
   same graph: the same ops, inputs, attrs and constants in the same order.
   Python that looks at static shapes (`len(x.shape)`, `x.shape[0]`) could
   otherwise build a different computation for a batch.

The batched trace runs the function's Python a second time, when the
dataset is built.  Imports `eager` modules only.
"""
from __future__ import annotations

import numpy as np

from .. import nest
from ..tensor_spec import TensorSpec
from . import functions

_INPUT, _CONSTANT = "Placeholder", "Const"


def _fully_defined(spec) -> bool:
    return all(s.shape.dims is not None and None not in s.shape.dims for s in nest.flatten(spec))


def _batched(spec):
    return nest.map_structure(lambda s: TensorSpec([None] + list(s.shape.dims), s.dtype), spec)


def _lines_up(op, row_dependent: set) -> bool:
    """Rule 4's broadcasting condition for one op (see the module docstring)."""
    rank = op.outputs[0].shape.rank
    if rank is None:
        return False
    for t in op.inputs:
        r = t.shape.rank
        if r is None or (r != rank if t.name in row_dependent else r > rank):
            return False
    return True


def _rowwise(concrete) -> bool:
    """Rules 3-5 on a traced function's graph."""
    if getattr(concrete.graph, "captures", None):
        return False
    row_dependent = {t.name for t in concrete.inputs}
    for op in concrete.graph.get_operations():
        if op.type == _INPUT:
            if not all(t.name in row_dependent for t in op.outputs):
                return False
            continue
        if op.type == _CONSTANT and not op.control_inputs:
            continue
        opdef = op.opdef
        if op.stateful or op.control_inputs or opdef is None or not opdef.rowwise_exact:
            return False
        if any(t.name in row_dependent for t in op.inputs):
            if not _lines_up(op, row_dependent):
                return False
            row_dependent.update(t.name for t in op.outputs)
    return all(t.name in row_dependent for t in concrete.outputs)


def _attr_key(value):
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    return ("value", repr(value))


def _structure(concrete) -> list:
    """Rule 6's comparison key: every op but the inputs' shapes, in graph order."""
    out = []
    for op in concrete.graph.get_operations():
        attrs = {k: v for k, v in op.attrs.items() if not (op.type == _INPUT and k == "shape")}
        out.append((op.type, op.name, tuple(t.name for t in op.inputs),
                    tuple(sorted((k, _attr_key(v)) for k, v in attrs.items()))))
    return out


def vectorized_map(fn: "functions.StructuredFunction", row_spec):
    """The map function traced on batches of `row_spec`, or None when it must run per row (module doc)."""
    if not fn.traced or fn.flat_arrays is None or not _fully_defined(row_spec) \
            or not _fully_defined(fn.output_spec):
        return None
    row = fn.compiled.get_concrete_function()
    if not _rowwise(row):
        return None
    try:
        batched = functions.element_function(fn.python_function, _batched(row_spec), fn.what)
    except Exception:       # noqa: BLE001 - a function that does not trace on batches keeps the per-row path
        return None
    if batched.flat_arrays is None or batched.output_spec != _batched(fn.output_spec):
        return None
    concrete = batched.compiled.get_concrete_function()
    if _structure(concrete) != _structure(row) or not _rowwise(concrete):
        return None
    return batched
