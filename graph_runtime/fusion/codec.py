"""GraphDef support for optimized graphs: the `FusedElementwise` attr `program` as JSON.

A program is stored as what it was built from: the fused op's input dtypes
and static shapes, then one record per fused source op (its type, attrs,
argument slots, output dtype and name), the output slots and dtypes.
Decoding replays those records through `ProgramBuilder`, which numbers slots
the same way, so the decoded program is equivalent (same instructions, same
kernels).  Attr values go through the regular attr codecs.

Imports `numpy`, `eager` and `graph_runtime.attr_codecs`.
"""
from __future__ import annotations

import numpy as np

from eager.dtypes import as_dtype
from eager.registry import get

from ..attr_codecs import decode_attr, encode_attr, register_attr_codec
from .program import Program, ProgramBuilder


def encode_program(p: Program, ctx) -> dict:
    shapes = [None if p.static_shapes[s] is None else list(p.static_shapes[s]) for s in p.input_slots]
    return {
        "inputs": [[d.name, sh] for d, sh in zip(p.in_dtypes, shapes)],
        "ops": [[t, encode_attr(attrs, ctx, f"fused op {name}"), list(args), dt, name]
                for t, attrs, args, dt, name in p.sources],
        "outputs": list(p.outputs),
        "out_dtypes": [d.name for d in p.out_dtypes],
    }


def decode_program(data: dict, ctx) -> Program:
    b = ProgramBuilder()
    for dt, shape in data["inputs"]:
        b.input(np.dtype(dt), None if shape is None else tuple(shape))
    members = []
    for op_type, attrs, args, dt, name in data["ops"]:
        out = b.add_op(get(op_type), decode_attr(attrs, ctx, f"fused op {name}"), list(args), np.dtype(dt), name)
        if out != b.n - 1 and op_type != "Identity":     # pragma: no cover - corrupt data
            raise ValueError(f"fused op {name}: slot numbering does not match the stored program")
        members.append((name, op_type))
    return b.finish(list(data["outputs"]), [as_dtype(d) for d in data["out_dtypes"]], members)


register_attr_codec("fused_program", Program, encode_program, decode_program)
