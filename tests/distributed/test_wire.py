"""wire.py: what a direct link carries (plain data and NumPy arrays, nested) and what it refuses to
encode or decode (no Ray needed)."""
import json
import struct

import numpy as np
import pytest

from graph_runtime.distributed.wire import Unencodable, decode, encode


def test_plain_data_and_arrays_survive_the_trip():
    value = ("run", 3, [np.float32(2.5), np.arange(6, dtype=np.int64).reshape(2, 3), np.zeros((0, 4), np.float32),
                        np.array([True, False]), np.array(["ab", "c"]), np.array([b"x", b"yz"], dtype=object)],
             {"k": (None, 1.5, float("inf"), b"\x00\xff", "s")})
    out = decode(encode(value))
    assert out[:2] == ("run", 3) and out[3] == value[3]
    assert type(out[2][0]) is np.float32 and out[2][0] == 2.5
    for a, b in zip(value[2][1:], out[2][1:]):
        assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
    assert out[2][1].flags.writeable
    assert type(out[2]) is list and type(out) is tuple


def test_values_a_link_does_not_carry_are_refused():
    for bad in (object(), np.array([object()], dtype=object), np.zeros(2, [("a", "<f4")]), {1, 2}):
        with pytest.raises(Unencodable):
            encode(bad)


def _message(head, blobs=b""):
    raw = json.dumps(head).encode()
    return struct.pack("<I", len(raw)) + raw + blobs


def test_malformed_messages_raise_value_error():
    for message in (b"\x01", _message({"a": 0, "d": "|O", "s": [1], "n": 8}, b"\x00" * 8),
                    _message({"a": 0, "d": "<f4", "s": [2], "n": 8}, b"\x00" * 4),
                    _message({"a": 1, "d": "<f4", "s": [1], "n": 4}, b"\x00" * 4),
                    _message({"a": 0, "d": "<f4", "s": [-1], "n": 4}, b"\x00" * 4),
                    _message({"x": 1})):
        with pytest.raises(ValueError):
            decode(message)
