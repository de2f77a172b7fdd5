"""List operations: `list_append` and `list_stack`.

`list_append(l, x)` appends in place to a Python list (returning the same
object, so aliasing is preserved) and writes to the end of a TensorArray
(returning the new TensorArray) when a staged loop turned the list into one.
"""
from __future__ import annotations

import eager as ek

from ._tensors import is_tensor_array


def list_append(target, value):
    if is_tensor_array(target):
        return target.write(target.size(), value)
    target.append(value)
    return target


def list_stack(target):
    """A tensor from a list of tensors, a TensorArray, or a tensor."""
    if is_tensor_array(target):
        return target.stack()
    e = ek
    if e.is_tensor(target):
        return target
    return e.stack(target)
