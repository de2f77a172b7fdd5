"""The kernels of ResourceScatterNd{Update,Add,Sub}: write slices of a variable at coordinates.

Registered as ops in eager/variables.py.  Like every variable write, a kernel
holds the variable's lock from the read to the store and writes into the
stored array only when nothing else holds it (eager/variable_storage.py),
else into a fresh copy.

Imports numpy and `eager` modules only.
"""
from __future__ import annotations

import numpy as np

from . import variable_storage as _storage
from .dtypes import as_dtype
from .errors import InvalidArgumentError
from .ops.gather import _nd_index


def scatter_kernel(kind, opname):
    """ResourceScatterNd{Update,Add,Sub}: write `updates` at the coordinates `indices` (last dim) of `var`."""
    def kernel(indices, updates, var):
        with var._lock:
            target = _storage.in_place_target(var)
            old = target if target is not None else _storage.read_locked(var)
            if updates.dtype != old.dtype:
                raise InvalidArgumentError(f"{opname}: updates have dtype {as_dtype(updates.dtype).name}, but "
                                           f"variable {var.name} has dtype {var._dtype.name}", op_name=opname)
            idx = _nd_index(old.shape, indices, 0, opname)
            expect = indices.shape[:-1] + old.shape[indices.shape[-1]:]
            if updates.shape != expect:
                raise InvalidArgumentError(f"{opname}: updates must have shape {list(expect)} for indices of shape "
                                           f"{list(indices.shape)} and variable {var.name} of shape "
                                           f"{list(old.shape)}, got {list(updates.shape)}", op_name=opname)
            if idx is None:                     # empty coordinates: every update is the whole variable
                new = np.array(old)
                whole = updates.reshape((-1,) + old.shape)
                if len(whole):
                    new = whole[-1].copy() if kind == "update" else \
                        np.add(new, whole.sum(0, dtype=old.dtype)) if kind == "add" else \
                        np.subtract(new, whole.sum(0, dtype=old.dtype))
            else:
                # into the stored array when nothing else holds it, else a fresh copy (earlier reads keep theirs)
                new = old if target is not None else np.array(old)
                if kind == "update":
                    new[idx] = updates
                else:
                    (np.add if kind == "add" else np.subtract).at(new, idx, updates)
            _storage.store_locked(var, new)
            return new
    return kernel
