"""Constant folding during shape inference: `fold(kernel, specs, attrs, shape=out_shape)`.

Runs a small op's kernel on its inputs' known values so shape arithmetic stays
static in graphs; returns None when a value is unknown, the kernel fails (the
error is reported when the op runs), or the inputs or the output would exceed
`FOLD_LIMIT` elements (checked on the output's static shape before computing:
a tiny GraphDef may declare `Range(0, 3e8)` or a huge `Tile`; inference must
not compute it).  Sits below conversion and the op wrappers: inference of any
primitive may use it.  Imports `fp_semantics` only.
"""
from __future__ import annotations

import math

import numpy as np

from ..fp_semantics import ignoring

EMPTY: dict = {}
FOLD_LIMIT = 4096      # elements: inference computes values no bigger than this, inputs and output alike


def fold(kernel, specs, attrs=EMPTY, limit: int = FOLD_LIMIT, *, shape):
    """Run `kernel` on the inputs' known constant values; None if unknown, failing or too big.

    `shape` is the output's static shape, checked BEFORE anything is computed: when a dimension is unknown
    or the output (or the inputs) would exceed `limit` elements, nothing is folded (the op runs at run time)."""
    if shape is None or any(d is None for d in shape) or math.prod(shape) > limit:
        return None
    vals = []
    total = 0
    for s in specs:
        v = s.value
        if v is None:
            return None
        total += np.size(v)
        vals.append(v)
    if total > limit:
        return None
    try:
        with ignoring():
            return kernel(*vals, **attrs)
    except Exception:  # the error is reported when the op runs
        return None
