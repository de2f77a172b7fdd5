"""Gradient cases for eager/ops/array.py and indexing ops."""
import eager as ek
from gradcheck import GradCase

CASES = [
    GradCase("Reshape", lambda x: ek.reshape(x, [3, 2]), [(2, 3)]),
    GradCase("BroadcastTo", lambda x: ek.broadcast_to(x, [2, 3]), [(3,)]),
    GradCase("ExpandDims", lambda x: ek.expand_dims(x, 1), [(3,)]),
    GradCase("Squeeze", lambda x: ek.squeeze(x, axis=[1]), [(3, 1)]),
    GradCase("Pack", lambda a, b: ek.stack([a, b], axis=1), [(3,), (3,)]),
    GradCase("Unpack", lambda x: ek.unstack(x, axis=0), [(2, 3)]),
]
