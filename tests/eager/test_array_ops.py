"""Creation, rearranging and padding ops against NumPy: values, dtypes, zero-size dims,
negative axes, and errors that name the op and the shapes."""
import numpy as np
import pytest

import eager as ek
from eager.errors import InvalidArgumentError

R = np.random.default_rng(1)


def same(t, expect, dtype=None):
    assert isinstance(t, ek.Tensor)
    np.testing.assert_array_equal(t.numpy(), expect)
    assert t.shape == np.shape(expect)
    if dtype is not None:
        assert t.dtype == dtype


# ------------------------------------------------------------------ creation
@pytest.mark.parametrize("args,kw,expect,dtype", [
    ((5,), {}, np.arange(5), ek.int32),
    ((2, 8, 3), {}, np.arange(2, 8, 3), ek.int32),
    ((5, 0, -2), {}, np.arange(5, 0, -2), ek.int32),
    ((0.0, 1.0, 0.25), {}, np.arange(0, 1, 0.25), ek.float32),
    ((1, 2.5), {}, np.arange(1, 2.5), ek.float32),
    ((3,), {"dtype": ek.float64}, np.arange(3.0), ek.float64),
    ((0,), {}, np.arange(0), ek.int32),
])
def test_range(args, kw, expect, dtype):
    same(ek.range(*args, **kw), expect.astype(dtype.as_numpy_dtype), dtype)


def test_range_with_tensors_and_errors():
    same(ek.range(ek.constant(4, ek.int64)), np.arange(4), ek.int64)
    same(ek.range(ek.constant(1.0, ek.float64), 3), np.arange(1.0, 3.0), ek.float64)
    with pytest.raises(InvalidArgumentError, match="delta != 0"):
        ek.range(0, 5, 0)
    with pytest.raises(InvalidArgumentError, match="start <= limit"):
        ek.range(5, 0)
    with pytest.raises(InvalidArgumentError, match="start <= limit"):
        ek.range(ek.constant(5), 0)


def test_linspace():
    same(ek.linspace(0.0, 1.0, 5), np.linspace(0, 1, 5, dtype=np.float32), ek.float32)
    same(ek.linspace(2, 3, 1), np.array([2.0], np.float32))
    same(ek.linspace(0.0, 1.0, 0), np.zeros(0, np.float32))
    a, b = np.array([0.0, 1.0]), np.array([1.0, 3.0])
    np.testing.assert_allclose(ek.linspace(a, b, 3, axis=-1).numpy(), np.linspace(a, b, 3, axis=-1))
    np.testing.assert_allclose(ek.linspace(a, b, 4).numpy(), np.linspace(a, b, 4))
    with pytest.raises(InvalidArgumentError, match="floating"):
        ek.linspace(ek.constant(0), ek.constant(1), 3)


def test_eye():
    same(ek.eye(3), np.eye(3, dtype=np.float32), ek.float32)
    same(ek.eye(2, 4, dtype=ek.int32), np.eye(2, 4, dtype=np.int32))
    same(ek.eye(2, batch_shape=[3]), np.broadcast_to(np.eye(2, dtype=np.float32), (3, 2, 2)))
    same(ek.eye(0), np.zeros((0, 0), np.float32))
    same(ek.eye(ek.constant(3), 2), np.eye(3, 2, dtype=np.float32))


def test_one_hot():
    idx = np.array([[0, 2], [5, -1]])
    expect = (idx[..., None] == np.arange(3)).astype(np.float32)
    same(ek.one_hot(idx, 3), expect, ek.float32)
    same(ek.one_hot(idx, 3, axis=0), np.moveaxis(expect, -1, 0))
    same(ek.one_hot(idx, 3, axis=1), np.moveaxis(expect, -1, 1))
    same(ek.one_hot([1], 2, on_value=5, off_value=-1), np.array([[-1, 5]], np.int32), ek.int32)
    same(ek.one_hot([1], 2, dtype=ek.bool), np.array([[False, True]]))
    same(ek.one_hot(np.zeros(0, np.int64), 4), np.zeros((0, 4), np.float32))
    with pytest.raises(InvalidArgumentError, match="axis"):
        ek.one_hot([1, 2], 3, axis=3)
    with pytest.raises(InvalidArgumentError, match="integers"):
        ek.one_hot(ek.constant([1.0]), 3)


# ------------------------------------------------------------------ transpose, concat, split, reverse
def test_transpose():
    x = R.standard_normal((2, 3, 4)).astype(np.float32)
    same(ek.transpose(x), x.T)
    same(ek.transpose(x, [1, 0, 2]), x.transpose(1, 0, 2))
    same(ek.transpose(ek.constant(x), ek.constant([2, 0, 1])), x.transpose(2, 0, 1))
    same(ek.transpose(5.0), np.float32(5.0))
    same(ek.transpose(np.zeros((0, 2))), np.zeros((2, 0)))
    with pytest.raises(InvalidArgumentError, match=r"Transpose.*\[2, 3, 4\]"):
        ek.transpose(x, [0, 1])
    with pytest.raises(InvalidArgumentError, match="permutation"):
        ek.transpose(x, [0, 0, 1])
    same(ek.invert_permutation([2, 0, 1]), np.array([1, 2, 0]))
    with pytest.raises(InvalidArgumentError, match="InvertPermutation"):
        ek.invert_permutation([0, 0])


def test_concat():
    a, b = np.ones((2, 3), np.float32), np.zeros((2, 1), np.float32)
    same(ek.concat([a, b], 1), np.concatenate([a, b], 1))
    same(ek.concat([a, b], -1), np.concatenate([a, b], 1))
    same(ek.concat([a, a], 0), np.concatenate([a, a], 0))
    same(ek.concat([a], 0), a)
    same(ek.concat([np.zeros((0, 3), np.float32), a], 0), a)
    same(ek.concat([ek.constant([1.0]), [2.0, 3.0]], 0), np.array([1.0, 2.0, 3.0], np.float32))
    with pytest.raises(InvalidArgumentError, match=r"ConcatV2.*\[2, 3\].*\[2, 1\]"):
        ek.concat([a, b], 0)
    with pytest.raises(InvalidArgumentError, match="ConcatV2.*dtype"):
        ek.concat([a, b.astype(np.float64)], 1)
    with pytest.raises(InvalidArgumentError, match="axis 2 is out of range"):
        ek.concat([a, b], 2)
    with pytest.raises(InvalidArgumentError, match="scalars"):
        ek.concat([1.0, 2.0], 0)


def test_split():
    x = np.arange(12).reshape(2, 6)
    for got, want in zip(ek.split(x, 3, axis=1), np.split(x, 3, axis=1)):
        same(got, want)
    for got, want in zip(ek.split(x, [1, -1, 2], axis=-1), np.split(x, [1, 4], axis=1)):
        same(got, want)
    assert [p.shape for p in ek.split(x, [0, 2], axis=0)] == [(0, 6), (2, 6)]
    with pytest.raises(InvalidArgumentError, match=r"Split.*evenly divide.*\[2, 6\]"):
        ek.split(x, 4, axis=1)
    with pytest.raises(InvalidArgumentError, match="sum to"):
        ek.split(x, [1, 2], axis=1)
    with pytest.raises(InvalidArgumentError, match="at most one"):
        ek.split(x, [-1, -1], axis=1)


def test_reverse():
    x = np.arange(24).reshape(2, 3, 4)
    same(ek.reverse(x, [1]), x[:, ::-1])
    same(ek.reverse(x, [0, -1]), x[::-1, :, ::-1])
    same(ek.reverse(x, []), x)
    with pytest.raises(InvalidArgumentError, match="duplicates"):
        ek.reverse(x, [1, -2])
    with pytest.raises(InvalidArgumentError, match="out of range"):
        ek.reverse(x, [3])


# ------------------------------------------------------------------ tile, pad, slice
def test_tile():
    x = np.arange(6).reshape(2, 3)
    same(ek.tile(x, [2, 3]), np.tile(x, [2, 3]))
    same(ek.tile(x, [0, 1]), np.zeros((0, 3), np.int64))
    same(ek.tile(ek.constant(x), ek.constant([1, 2], ek.int64)), np.tile(x, [1, 2]))
    with pytest.raises(InvalidArgumentError, match=r"Tile.*\[2, 3\]"):
        ek.tile(x, [2])


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
def test_pad(mode):
    x = np.arange(12.0).reshape(3, 4)
    p = [[1, 2], [2, 0]]
    expect = np.pad(x, p, mode=mode.lower()) if mode != "CONSTANT" else np.pad(x, p)
    same(ek.pad(x, p, mode=mode), expect)


def test_pad_values_and_errors():
    x = np.ones((2, 2), np.int32)
    same(ek.pad(x, [[0, 1], [1, 0]], constant_values=7), np.pad(x, [[0, 1], [1, 0]], constant_values=7))
    same(ek.pad(np.zeros((0, 2)), [[1, 1], [0, 0]]), np.zeros((2, 2)))
    with pytest.raises(InvalidArgumentError, match=r"paddings must have shape \[2, 2\]"):
        ek.pad(x, [[1, 1]])
    with pytest.raises(InvalidArgumentError, match="non-negative"):
        ek.pad(x, [[-1, 0], [0, 0]])
    with pytest.raises(InvalidArgumentError, match="REFLECT"):
        ek.pad(x, [[2, 0], [0, 0]], mode="REFLECT")
    with pytest.raises(ValueError, match="mode"):
        ek.pad(x, [[0, 0], [0, 0]], mode="wrap")
    with pytest.raises(InvalidArgumentError, match="dtype"):
        ek.pad(x, [[0, 0], [0, 0]], constant_values=ek.constant(1.0))


def test_slice():
    x = np.arange(24).reshape(2, 3, 4)
    same(ek.slice(x, [0, 1, 1], [2, 2, -1]), x[0:2, 1:3, 1:])
    same(ek.slice(x, [1, 0, 0], [0, -1, -1]), x[1:1])
    with pytest.raises(InvalidArgumentError, match=r"Slice.*out of bounds.*\[2, 3, 4\]"):
        ek.slice(x, [0, 2, 0], [1, 2, 1])
    with pytest.raises(InvalidArgumentError, match="3 entries"):
        ek.slice(x, [0], [1])


def test_axis_arguments_must_be_integers():
    with pytest.raises(TypeError, match="integers"):
        ek.concat([[1.0], [2.0]], 0.5)
    with pytest.raises(InvalidArgumentError, match="int32 or int64"):
        ek.reverse([1, 2], ek.constant([0.0]))
