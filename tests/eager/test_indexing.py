"""`tensor[key]` and `strided_slice` against NumPy, including random keys (hypothesis)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import eager as ek
from eager.errors import InvalidArgumentError

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
T = ek.constant(X)


@pytest.mark.parametrize("key", [
    0, -1, 2, (1, 2), (-1, -2, -3), slice(None), slice(1, None), slice(None, None, -1), slice(None, None, 2),
    slice(-2, None), slice(5, 1, -2), (Ellipsis, 1), (1, Ellipsis), (None,), (None, 1, None), (Ellipsis, None),
    (slice(None), None, slice(1, 3)), (1, slice(None, None, -1), -1), (slice(10, 20),), (slice(-100, 100, 3),),
    (), (Ellipsis,), (0, 0, 0), (slice(None), slice(None), slice(None), None), [0, 1],
], ids=repr)
def test_getitem_matches_numpy(key):
    expect = X[tuple(key) if isinstance(key, list) else key]
    got = T[key]
    assert got.shape == np.shape(expect)
    np.testing.assert_array_equal(got.numpy(), expect)


def _slice_st(dim):
    bound = st.one_of(st.none(), st.integers(-dim - 2, dim + 2))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
    return st.builds(slice, bound, bound, step)


@st.composite
def keys(draw):
    """(shape, key): one int/slice per dim, some None entries, maybe a run replaced by `...` or a cut tail."""
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=4))
    entries = []
    for d in shape:
        if d > 0 and draw(st.booleans()):
            entries.append(draw(st.integers(-d, d - 1)))
        else:
            entries.append(draw(_slice_st(d)))
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    mode = draw(st.integers(0, 2))
    if mode == 1:
        i = draw(st.integers(0, len(entries)))
        j = draw(st.integers(i, len(entries)))
        entries[i:j] = [Ellipsis]
    elif mode == 2:
        entries = entries[:draw(st.integers(0, len(entries)))]
    return tuple(shape), tuple(entries)


@given(keys())
def test_random_keys_match_numpy(shape_key):
    shape, key = shape_key
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    expect = x[key]
    got = ek.constant(x)[key]
    assert got.shape == np.shape(expect)
    np.testing.assert_array_equal(got.numpy(), expect)


def test_scalar_tensor_indices_and_bounds():
    i = ek.constant(2)
    np.testing.assert_array_equal(T[i].numpy(), X[2])
    np.testing.assert_array_equal(T[1, ek.constant(-1)].numpy(), X[1, -1])
    np.testing.assert_array_equal(T[:, ek.constant(1):ek.constant(3, ek.int64)].numpy(), X[:, 1:3])
    np.testing.assert_array_equal(T[::ek.constant(-2)].numpy(), X[::-2])
    np.testing.assert_array_equal(T[np.int64(1), np.int32(2)].numpy(), X[1, 2])


def test_bool_and_int_array_keys():
    m = np.array([True, False, True])
    np.testing.assert_array_equal(T[ek.constant(m)].numpy(), X[m])
    np.testing.assert_array_equal(T[m].numpy(), X[m])
    np.testing.assert_array_equal(T[ek.constant([2, 0, 2])].numpy(), X[[2, 0, 2]])
    np.testing.assert_array_equal(T[np.array([1, 1])].numpy(), X[[1, 1]])


def test_variable_and_string_indexing():
    v = ek.Variable(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(v[1, ::-1].numpy(), [5.0, 4.0, 3.0])
    s = ek.constant(["a", "b", "c"])
    assert s[1].numpy() == b"b" and s[1].dtype == ek.string and s[1].shape == ()
    assert ek.constant([["x"]])[0, 0].dtype == ek.string
    assert s[::-1].numpy().tolist() == [b"c", b"b", b"a"]


def test_zero_size_and_scalar():
    z = ek.zeros([0, 3])
    assert z[:, 1].shape == (0,)
    assert z[1:].shape == (0, 3)
    s = ek.constant(5.0)
    assert s[...].numpy() == 5.0
    assert s[None].shape == (1,)


@pytest.mark.parametrize("key,exc,msg", [
    (3, InvalidArgumentError, "out of bounds"),
    ((0, 0, 0, 0), InvalidArgumentError, "too many indices"),
    ((Ellipsis, Ellipsis), ValueError, "ellipses"),
    (slice(None, None, 0), ValueError, "zero"),
    (1.5, TypeError, "valid indices"),
    ((0, ek.constant([1, 2])), TypeError, "gather"),
    (ek.constant(1.0), TypeError, "valid indices"),
    (True, TypeError, "valid indices"),
])
def test_bad_keys(key, exc, msg):
    with pytest.raises(exc, match=msg):
        T[key]


def test_error_names_op_and_shape():
    with pytest.raises(InvalidArgumentError) as e:
        T[5]
    assert "StridedSlice" in str(e.value) and "[3, 4, 5]" in str(e.value)


def test_strided_slice_masks():
    x = ek.constant(X)
    got = ek.strided_slice(x, [0, 1, 0], [0, 3, 5], [1, 1, 2], begin_mask=1, end_mask=1, shrink_axis_mask=0)
    np.testing.assert_array_equal(got.numpy(), X[:, 1:3, 0:5:2])
    got = ek.strided_slice(x, [1, 0], [2, 0], [1, 1], ellipsis_mask=2, shrink_axis_mask=1)
    np.testing.assert_array_equal(got.numpy(), X[1, ...])
    got = ek.strided_slice(x, [0, 2], [0, 3], [1, 1], new_axis_mask=1, shrink_axis_mask=2)
    np.testing.assert_array_equal(got.numpy(), X[None, 2])


def test_getitem_gradient_scatters_into_zeros():
    x = ek.constant(np.ones((3, 4)))
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.reduce_sum(x[1:, ::2] * 2.0) + ek.reduce_sum(x[0])
    g = tape.gradient(y, x).numpy()
    expect = np.zeros((3, 4))
    expect[1:, ::2] = 2.0
    expect[0] += 1.0
    np.testing.assert_array_equal(g, expect)
