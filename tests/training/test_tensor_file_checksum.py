"""Checksummed tensor files: a flipped bit anywhere in a checkpoint or weights file is refused, not restored.

The safetensors layout has no checksum of its own; `eager.train.Checkpoint` (version 2) and
`Model.save_weights` (version 3) add one in the metadata.  These tests corrupt files the way a disk
or a careless copy would and check that reading refuses them, while older files without a checksum
and files of the `safetensors` package still read.
"""
import json

import numpy as np
import pytest

import eager as ek
from eager import keras
from eager.train import Checkpoint, tensor_file
from eager.train.tensor_file import DIGEST_KEY, TensorFileError, read_tensors, to_bytes, write_tensors

VALUES = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1.5, -2.0]), "c": np.zeros((0, 2))}


def header_span(raw: bytes) -> tuple:
    n = int.from_bytes(raw[:8], "little")
    return 8, 8 + n


def flip(path, position: int, bit: int = 0) -> None:
    raw = bytearray(path.read_bytes())
    raw[position] ^= 1 << bit
    path.write_bytes(bytes(raw))


def test_round_trip_and_the_digest_covers_header_and_data(tmp_path):
    path = tmp_path / "t.safetensors"
    write_tensors(str(path), VALUES, {"note": "x"}, checksum=True)
    got, meta = read_tensors(str(path))
    assert tensor_file.has_checksum(meta) and meta["note"] == "x"
    for k, v in VALUES.items():
        np.testing.assert_array_equal(got[k], v)
    # same bytes without a checksum read back the same values, and say they have none
    plain = tmp_path / "plain.safetensors"
    write_tensors(str(plain), VALUES, {"note": "x"})
    assert not tensor_file.has_checksum(read_tensors(str(plain))[1])


def test_every_data_bit_flip_is_refused(tmp_path):
    path = tmp_path / "t.safetensors"
    write_tensors(str(path), VALUES, checksum=True)
    good = path.read_bytes()
    _, data_start = header_span(good)
    for position in range(data_start, len(good)):
        for bit in (0, 7):
            path.write_bytes(good)
            flip(path, position, bit)
            with pytest.raises(TensorFileError, match="checksum does not match"):
                read_tensors(str(path))
            with pytest.raises(TensorFileError, match="checksum does not match"):
                read_tensors(str(path), names=["c"])       # even when the damaged tensor is not asked for


def test_header_flips_that_still_parse_are_refused(tmp_path):
    path = tmp_path / "t.safetensors"
    write_tensors(str(path), VALUES, {"note": "x"}, checksum=True)
    good = path.read_bytes()
    start, end = header_span(good)
    refused = parsed = 0
    for position in range(start, end):
        path.write_bytes(good)
        flip(path, position)
        try:
            got, _ = read_tensors(str(path))
        except TensorFileError:
            refused += 1
            continue
        parsed += 1
        # a flip that reads back must have been harmless padding or whitespace: same names, same values
        assert set(got) == set(VALUES)
        for k, v in VALUES.items():
            np.testing.assert_array_equal(got[k], v)
    assert refused > 0


def test_a_file_with_an_empty_data_area_is_checked_too(tmp_path):
    path = tmp_path / "e.safetensors"
    write_tensors(str(path), {"z": np.zeros((0,), np.float32)}, {"k": "v"}, checksum=True)
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"k":"v"', b'"k":"w"'))
    with pytest.raises(TensorFileError, match="checksum does not match"):
        read_tensors(str(path))


def test_the_digest_key_is_reserved():
    with pytest.raises(TypeError, match="reserved"):
        to_bytes(VALUES, {DIGEST_KEY: "0" * 64})


def test_the_safetensors_package_reads_checksummed_files():
    st = pytest.importorskip("safetensors.numpy")
    back = st.load(to_bytes(VALUES, {"note": "x"}, checksum=True))
    for k, v in VALUES.items():
        np.testing.assert_array_equal(back[k], v)


def checkpoint(tmp_path):
    v, w = ek.Variable([1.0, 2.0, 3.0]), ek.Variable([4.0, 5.0, 6.0])
    prefix = Checkpoint(v0=v, v1=w).write(str(tmp_path / "ck"))
    return prefix, tmp_path / "ck.safetensors"


def test_a_checkpoint_with_a_flipped_value_bit_is_not_restored(tmp_path):
    prefix, path = checkpoint(tmp_path)
    flip(path, len(path.read_bytes()) - 2)
    v, w = ek.Variable([0.0, 0.0, 0.0]), ek.Variable([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="checksum does not match"):
        Checkpoint(v0=v, v1=w).restore(prefix)
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0, 0.0])          # nothing half-restored
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0, 0.0])


def test_a_checkpoint_whose_keys_were_swapped_by_one_bit_is_not_restored(tmp_path):
    # "v0" and "v1" differ in one bit: without a checksum each variable would get the other's value
    prefix, path = checkpoint(tmp_path)
    raw = path.read_bytes()
    start, end = header_span(raw)
    header = raw[start:end].replace(b'"v0":{', b'"vX":{').replace(b'"v1":{', b'"v0":{').replace(b'"vX":{', b'"v1":{')
    path.write_bytes(raw[:start] + header + raw[end:])
    with pytest.raises(ValueError, match="checksum does not match"):
        Checkpoint(v0=ek.Variable([0.0] * 3), v1=ek.Variable([0.0] * 3)).restore(prefix)


def test_a_version_2_checkpoint_without_its_checksum_is_refused_and_version_1_still_reads(tmp_path):
    prefix, path = checkpoint(tmp_path)
    _, meta = read_tensors(str(path))
    values, _ = read_tensors(str(path))
    stripped = {k: v for k, v in meta.items() if k != DIGEST_KEY}
    write_tensors(str(path), values, stripped)
    with pytest.raises(ValueError, match="must carry a checksum"):
        Checkpoint(v0=ek.Variable([0.0] * 3), v1=ek.Variable([0.0] * 3)).restore(prefix)
    graph = json.loads(stripped["graphjit"])
    graph["version"] = 1                                   # what the first format wrote: no checksum
    write_tensors(str(path), values, {"graphjit": json.dumps(graph, sort_keys=True)})
    v = ek.Variable([0.0] * 3)
    Checkpoint(v0=v, v1=ek.Variable([0.0] * 3)).restore(prefix)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])


def model():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])


def test_weights_files_are_checksummed_and_version_2_still_loads(tmp_path):
    a, b = model(), model()
    path = tmp_path / "m.weights.h5"
    a.save_weights(path)
    good = path.read_bytes()
    flip(path, len(good) - 1)
    before = b.get_weights()
    with pytest.raises(ValueError, match="checksum does not match"):
        b.load_weights(path)
    for x, y in zip(before, b.get_weights()):
        np.testing.assert_array_equal(x, y)
    path.write_bytes(good)
    values, meta = read_tensors(str(path))
    write_tensors(str(path), values, {"format": meta["format"], "version": "3"})
    with pytest.raises(ValueError, match="must carry a checksum"):
        b.load_weights(path)
    write_tensors(str(path), values, {"format": meta["format"], "version": "2"})
    b.load_weights(path)
    for x, y in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(x, y)
