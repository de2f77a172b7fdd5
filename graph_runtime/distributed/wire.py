"""The bytes of a message on a direct link (links.py): plain data and NumPy arrays, never a pickle.

`encode(obj) -> bytes` and `decode(bytes) -> obj` for None, bool, int,
float, str, bytes, lists, tuples, dicts, NumPy arrays and NumPy scalars,
nested freely.  A message is a 4-byte header length, a JSON header (the
structure, arrays replaced by their dtype, shape and the index of their
bytes) and the arrays' bytes one after another.  Decoding only builds those
types: a dtype is parsed from its string and must be a plain kind (bool,
integers, floats, complex, fixed-width bytes and str); an object array
travels as the list of its str or bytes elements.  Decoded arrays view one
writable copy of the message's bytes.

`encode` raises `Unencodable` for anything else (the caller then sends the
step by actor calls); `decode` raises `ValueError` on a malformed message.

Imports `numpy` only.
"""
from __future__ import annotations

import json
import struct

import numpy as np

_PLAIN_KINDS = "biufcSU"        # bool, ints, uints, floats, complex, bytes, str: their bytes are the values
_HEAD = struct.Struct("<I")


class Unencodable(TypeError):
    """A value a direct link does not carry."""


def encode(obj) -> bytes:
    blobs: list = []
    head = json.dumps(_tree(obj, blobs), separators=(",", ":")).encode()
    return b"".join([_HEAD.pack(len(head)), head] + blobs)


def _tree(obj, blobs: list):
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if type(obj) in (int, float):
        return obj
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        items = [_tree(v, blobs) for v in obj]
        return items if type(obj) is list else {"t": items}
    if type(obj) is dict:
        return {"m": [[_tree(k, blobs), _tree(v, blobs)] for k, v in obj.items()]}
    if type(obj) is bytes:
        blobs.append(obj)
        return {"b": len(blobs) - 1, "n": len(obj)}
    if isinstance(obj, np.generic):
        return {"g": _tree(np.asarray(obj), blobs)}
    if isinstance(obj, np.ndarray):
        return _array(obj, blobs)
    raise Unencodable(f"a direct link does not carry a {type(obj).__name__}")


def _array(a: np.ndarray, blobs: list) -> dict:
    if a.dtype.kind == "O":
        flat = a.ravel().tolist()
        if not all(type(v) in (str, bytes) for v in flat):
            raise Unencodable("a direct link carries object arrays of str or bytes only")
        return {"o": [_tree(v, blobs) for v in flat], "s": list(a.shape)}
    if a.dtype.kind not in _PLAIN_KINDS or a.dtype.fields is not None:
        raise Unencodable(f"a direct link does not carry arrays of dtype {a.dtype}")
    data = np.ascontiguousarray(a).tobytes()
    blobs.append(data)
    return {"a": len(blobs) - 1, "d": a.dtype.str, "s": list(a.shape), "n": len(data)}


def decode(message: bytes):
    view = memoryview(bytearray(message))       # one copy: the arrays are writable, as a local run's are
    if len(view) < _HEAD.size:
        raise ValueError("direct link: a message shorter than its header")
    (n,) = _HEAD.unpack_from(view)
    head = json.loads(bytes(view[_HEAD.size:_HEAD.size + n]))
    return _build(head, _blobs(head, view, _HEAD.size + n))


def _blobs(head, view, at: int) -> list:
    """The message's blobs, in order (their sizes come from the header's array and bytes entries)."""
    sizes: dict = {}
    stack = [head]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if "a" in node or "b" in node:
                sizes[node.get("a", node.get("b"))] = node.get("n")
            stack.extend(v for k, v in node.items() if k in ("t", "m", "g", "o"))
    if sorted(sizes) != list(range(len(sizes))) or not all(type(v) is int and v >= 0 for v in sizes.values()):
        raise ValueError("direct link: the header's blobs are not numbered 0..n-1 with sizes")
    out = []
    for i in range(len(sizes)):
        out.append(view[at:at + sizes[i]])
        at += sizes[i]
    if at != len(view):
        raise ValueError(f"direct link: the blobs take {at} bytes of a {len(view)}-byte message")
    return out


def _build(node, blobs):
    if node is None or isinstance(node, (bool, str, int, float)):
        return node
    if isinstance(node, list):
        return [_build(v, blobs) for v in node]
    if not isinstance(node, dict):
        raise ValueError(f"direct link: unexpected {type(node).__name__} in a header")
    if "t" in node:
        return tuple(_build(v, blobs) for v in node["t"])
    if "m" in node:
        return {_build(k, blobs): _build(v, blobs) for k, v in node["m"]}
    if "b" in node:
        return bytes(blobs[node["b"]])
    if "g" in node:
        return _build(node["g"], blobs)[()]
    if "o" in node:
        out = np.empty(len(node["o"]), dtype=object)
        out[:] = [_build(v, blobs) for v in node["o"]]
        return out.reshape(_shape(node["s"]))
    if "a" in node:
        dtype = np.dtype(node["d"])
        if dtype.kind not in _PLAIN_KINDS or dtype.fields is not None:
            raise ValueError(f"direct link: arrays of dtype {dtype} are not carried")
        return np.frombuffer(blobs[node["a"]], dtype=dtype).reshape(_shape(node["s"]))
    raise ValueError(f"direct link: unknown header entry {sorted(node)}")


def _shape(shape) -> tuple:
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise ValueError(f"direct link: bad shape {shape!r}")
    return tuple(shape)
