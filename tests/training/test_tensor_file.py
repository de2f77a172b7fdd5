"""eager.train.tensor_file: the safetensors layout with NumPy, checked before anything is read."""
import json

import numpy as np
import pytest

from eager.train import tensor_file
from eager.train.tensor_file import TensorFileError, read_tensors, to_bytes, write_tensors

ALL = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3), "f64": np.array([1.5, -2.0]), "f16": np.ones(3, np.float16),
    "i8": np.array([-1, 2], np.int8), "i16": np.array([3], np.int16), "i32": np.array([[7]], np.int32),
    "i64": np.array(9, np.int64), "u8": np.array([255], np.uint8), "u16": np.array([1], np.uint16),
    "u32": np.array([1], np.uint32), "u64": np.array([2 ** 63], np.uint64), "b": np.array([True, False]),
    "empty": np.zeros((0, 4), np.float32), "scalar": np.array(3.25, np.float32), "é/ü": np.ones(1, np.float32),
}


def test_round_trip_every_dtype_and_shape(tmp_path):
    path = str(tmp_path / "t.safetensors")
    write_tensors(path, ALL, {"note": "héllo\n\"q\""})
    got, meta = read_tensors(path)
    assert meta == {"note": "héllo\n\"q\""} and set(got) == set(ALL)
    for k, v in ALL.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape
        np.testing.assert_array_equal(got[k], v)
    only, _ = read_tensors(path, names=["f64"])
    assert list(only) == ["f64"]


def test_bytes_equal_the_safetensors_package_and_it_reads_ours(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    for meta in (None, {"graphjit": json.dumps({"a": [1, 2]})}):
        ours = to_bytes(ALL, meta)
        assert ours == st.save(ALL, metadata=meta)
        back = st.load(ours)
        for k, v in ALL.items():
            np.testing.assert_array_equal(back[k], v)
    path = tmp_path / "lib.safetensors"
    st.save_file({"x": np.arange(5, dtype=np.int32)}, str(path))
    np.testing.assert_array_equal(read_tensors(str(path))[0]["x"], np.arange(5, dtype=np.int32))


def header_file(tmp_path, header, data=b"", length=None):
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    path = tmp_path / "bad.safetensors"
    path.write_bytes((len(raw) if length is None else length).to_bytes(8, "little") + raw + data)
    return str(path)


@pytest.mark.parametrize("header, data, length, match", [
    ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, None, "cover 8 bytes"),
    ({"x": {"dtype": "F32", "shape": [10 ** 12], "data_offsets": [0, 4 * 10 ** 12]}}, b"", None, "cover"),
    ({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, None, "needs 12 bytes"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8, None, "gap or overlap"),
    ({"x": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8, None, "unsupported dtype"),
    ({"x": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}}, b"\0" * 4, None, "bad shape"),
    ({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, None, "bad shape"),
    ({"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, b"\0" * 4, None, "bad data_offsets"),
    ({"x": {"dtype": "F32", "shape": [1]}}, b"\0" * 4, None, "exactly dtype"),
    ({"__metadata__": {"a": 1}}, b"", None, "strings to strings"),
    (b"\xff\xfe{}", b"", None, "not UTF-8 JSON"),
    (b"[" * 100000 + b"]" * 100000, b"", None, "not UTF-8 JSON"),
    (b"[1]", b"", None, "not a JSON object"),
    (b"{}", b"", 2 ** 60, "header declares"),
])
def test_malformed_files_raise_before_reading(tmp_path, header, data, length, match):
    with pytest.raises(TensorFileError, match=match):
        read_tensors(header_file(tmp_path, header, data, length))


def test_truncated_and_missing_files(tmp_path):
    good = to_bytes({"x": np.ones(4, np.float32)})
    for cut in (0, 5, 12, len(good) - 1):
        p = tmp_path / f"cut{cut}.safetensors"
        p.write_bytes(good[:cut])
        with pytest.raises(TensorFileError):
            read_tensors(str(p))
    with pytest.raises(TensorFileError, match="cannot open"):
        read_tensors(str(tmp_path / "absent.safetensors"))
    assert issubclass(TensorFileError, ValueError)


def test_unsupported_dtypes_and_names_are_refused():
    with pytest.raises(TensorFileError, match="cannot be stored"):
        to_bytes({"s": np.array(["a"])})
    with pytest.raises(TypeError):
        to_bytes({"__metadata__": np.ones(1)})
    assert tensor_file.MAX_HEADER_BYTES == 100_000_000
