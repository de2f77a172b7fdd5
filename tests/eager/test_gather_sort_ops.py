"""gather/gather_nd/scatter_nd, where, boolean_mask, sort/argsort/top_k, cumsum, einsum,
tensordot and strings.join against NumPy, with their error paths."""
import numpy as np
import pytest

import eager as ek
from eager.errors import InvalidArgumentError

R = np.random.default_rng(2)


def same(t, expect, dtype=None):
    np.testing.assert_array_equal(t.numpy(), expect)
    assert t.shape == np.shape(expect)
    if dtype is not None:
        assert t.dtype == dtype


# ------------------------------------------------------------------ gather family
def test_gather():
    x = np.arange(24).reshape(2, 3, 4)
    same(ek.gather(x, [1, 0]), np.take(x, [1, 0], axis=0))
    same(ek.gather(x, [[3, 0], [1, 1]], axis=-1), np.take(x, [[3, 0], [1, 1]], axis=2))
    same(ek.gather(x, 2, axis=1), x[:, 2])
    same(ek.gather(x, np.zeros((0,), np.int32), axis=1), np.zeros((2, 0, 4), np.int64))
    idx = np.array([[0, 2], [1, 1]])
    same(ek.gather(x, idx, axis=1, batch_dims=1), np.stack([np.take(x[b], idx[b], axis=0) for b in range(2)]))
    idx = R.integers(0, 4, (2, 3, 5))
    same(ek.gather(x, idx, axis=-1, batch_dims=-1), np.take_along_axis(x, idx, -1))
    same(ek.gather(x, [2, 0], 1), np.take(x, [2, 0], axis=1))  # int third argument = axis (see docstring)
    s = ek.constant(["a", "b"])
    assert ek.gather(s, 1).dtype == ek.string and ek.gather_nd(s, [0]).numpy() == b"a"
    with pytest.raises(InvalidArgumentError, match=r"GatherV2: index 3 is not in \[0, 3\)"):
        ek.gather(x, [0, 3], axis=1)
    with pytest.raises(InvalidArgumentError, match="not in"):
        ek.gather(x, [-1])
    with pytest.raises(InvalidArgumentError, match="batch_dims"):
        ek.gather(x, [[0]], axis=0, batch_dims=1)
    with pytest.raises(InvalidArgumentError, match="int32 or int64"):
        ek.gather(x, ek.constant([0.0]))


def test_gather_nd_and_scatter_nd():
    x = np.arange(24).reshape(2, 3, 4)
    same(ek.gather_nd(x, [[1, 2], [0, 0]]), np.stack([x[1, 2], x[0, 0]]))
    same(ek.gather_nd(x, [[1, 2, 3]]), np.array([x[1, 2, 3]]))
    same(ek.gather_nd(x, np.zeros((2, 0), np.int32)), np.stack([x, x]))
    idx = np.array([[[2], [0]], [[1], [1]]])
    same(ek.gather_nd(x, idx, batch_dims=1), np.stack([x[b][idx[b, :, 0]] for b in range(2)]))
    with pytest.raises(InvalidArgumentError, match="GatherNd: index 2 is not in"):
        ek.gather_nd(x, [[2, 0]])
    out = ek.scatter_nd([[1], [3], [1]], np.array([[1, 2], [3, 4], [5, 6]]), [4, 2])
    same(out, np.array([[0, 0], [6, 8], [0, 0], [3, 4]]))
    same(ek.scatter_nd([[0, 1]], np.array([9.0]), [2, 2]), np.array([[0.0, 9.0], [0.0, 0.0]]))
    with pytest.raises(InvalidArgumentError, match="updates must have shape"):
        ek.scatter_nd([[0]], np.ones((2, 2)), [3, 2])


def test_where():
    c = np.array([[True, False, True]])
    x, y = np.arange(6.0).reshape(2, 3), np.array(-1.0)
    same(ek.where(c, x, y), np.where(c, x, y))
    same(ek.where(c, ek.constant(x), 0), np.where(c, x, 0.0))
    same(ek.where(ek.constant([[True, False], [False, True]])), np.argwhere([[1, 0], [0, 1]]), ek.int64)
    same(ek.where(np.zeros((0, 2), bool)), np.zeros((0, 2), np.int64))
    same(ek.where(ek.constant(True)), np.zeros((1, 0), np.int64))
    with pytest.raises(InvalidArgumentError, match=r"SelectV2.*float32.*float64"):
        ek.where(c, ek.constant([1.0, 2.0, 3.0]), ek.constant(np.ones(3)))
    with pytest.raises(InvalidArgumentError, match="broadcasting"):
        ek.where(c, np.ones((2, 2)), 0.0)
    with pytest.raises(ValueError, match="both"):
        ek.where(c, x)
    with pytest.raises(InvalidArgumentError, match="bool"):
        ek.where(ek.constant([1, 0]), 1, 2)


def test_boolean_mask():
    x = np.arange(24).reshape(2, 3, 4)
    m = R.random((2, 3)) > 0.4
    same(ek.boolean_mask(x, m), x[m])
    m1 = np.array([True, False, True, True])
    same(ek.boolean_mask(x, m1, axis=2), x[:, :, m1])
    same(ek.boolean_mask(x, m1, axis=-1), x[:, :, m1])
    same(ek.boolean_mask(x, np.zeros(2, bool)), np.zeros((0, 3, 4), np.int64))
    with pytest.raises(ValueError, match="incompatible"):
        ek.boolean_mask(x, np.ones(3, bool))
    with pytest.raises(ValueError, match="scalar"):
        ek.boolean_mask(x, True)
    with pytest.raises(InvalidArgumentError, match="bool"):
        ek.boolean_mask(x, [1, 0])


# ------------------------------------------------------------------ sorting and scans
def test_sort_argsort():
    x = np.array([[3.0, 1.0, 2.0, 1.0], [0.0, -1.0, 5.0, 0.0]], np.float32)
    same(ek.sort(x), np.sort(x, axis=-1))
    same(ek.sort(x, axis=0, direction="DESCENDING"), -np.sort(-x, axis=0))
    same(ek.argsort(x), np.argsort(x, axis=-1, kind="stable"), ek.int32)
    same(ek.argsort(x, direction="DESCENDING"), np.array([[0, 2, 1, 3], [2, 0, 3, 1]]))
    same(ek.sort(np.array([b"b", b"a"], object)), np.array([b"a", b"b"], object))
    same(ek.sort(np.zeros((2, 0))), np.zeros((2, 0)))
    with pytest.raises(ValueError, match="direction"):
        ek.sort(x, direction="up")
    with pytest.raises(InvalidArgumentError, match="out of range"):
        ek.argsort(x, axis=2)
    with pytest.raises(InvalidArgumentError, match="scalar"):
        ek.sort(3.0)


def test_top_k():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [4.0, 0.0, 1.0, 4.0]], np.float32)
    values, indices = ek.top_k(x, 2)
    same(values, np.array([[3.0, 3.0], [4.0, 4.0]], np.float32))
    same(indices, np.array([[1, 2], [0, 3]]), ek.int32)
    r = ek.top_k(x)
    same(r.values, np.array([[3.0], [4.0]], np.float32))
    assert ek.top_k(x, 0).values.shape == (2, 0)
    with pytest.raises(InvalidArgumentError, match=r"TopKV2.*k=5.*had 4"):
        ek.top_k(x, 5)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(exclusive, reverse, axis):
    x = R.integers(-5, 5, (3, 4)).astype(np.int32)
    v = np.flip(x, axis) if reverse else x
    c = np.cumsum(v, axis=axis, dtype=np.int32)
    if exclusive:
        c = c - v
    expect = np.flip(c, axis) if reverse else c
    same(ek.cumsum(x, axis=axis, exclusive=exclusive, reverse=reverse), expect, ek.int32)


def test_cumsum_edges():
    same(ek.cumsum(np.zeros((0, 3), np.float32), axis=0, exclusive=True), np.zeros((0, 3), np.float32))
    with pytest.raises(InvalidArgumentError, match="scalar"):
        ek.cumsum(1.0)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        ek.cumsum([1.0], axis=1)
    with pytest.raises(InvalidArgumentError, match="numeric"):
        ek.cumsum([True])


# ------------------------------------------------------------------ einsum / tensordot
@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
    ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("...ij,...jk->...ik", [(5, 2, 3), (1, 3, 4)]),
    ("b i j, b j k -> b i k", [(2, 2, 3), (2, 3, 1)]), ("i,j->ij", [(3,), (2,)]), ("...i,i", [(2, 3), (3,)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]), ("ab,ab,ab->a", [(2, 3)] * 3), ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("i,i", [(0,), (0,)]),
])
def test_einsum(eq, shapes):
    xs = [R.standard_normal(s) for s in shapes]
    got = ek.einsum(eq, *xs)
    expect = np.einsum(eq.replace(" ", ""), *xs)
    np.testing.assert_allclose(got.numpy(), expect, rtol=1e-12)
    assert got.shape == np.shape(expect)


def test_einsum_errors():
    a = np.ones((2, 3))
    with pytest.raises(InvalidArgumentError, match="2 operands but 1"):
        ek.einsum("ij,jk->ik", a)
    with pytest.raises(InvalidArgumentError, match="rank 2"):
        ek.einsum("ijk->i", a)
    with pytest.raises(InvalidArgumentError, match="Einsum.*float64.*float32"):
        ek.einsum("ij,jk", a, np.ones((3, 2), np.float32))
    with pytest.raises(InvalidArgumentError, match=r"Einsum.*\[2, 3\]"):
        ek.einsum("ij,jk", a, np.ones((2, 2)))
    with pytest.raises(InvalidArgumentError, match="does not appear"):
        ek.einsum("ij->k", a)


@pytest.mark.parametrize("axes,sa,sb", [(1, (2, 3), (3, 4)), (0, (2,), (3,)), (2, (2, 3, 4), (3, 4, 5)),
                                        ([[0, 2], [1, 0]], (4, 3, 5), (5, 4)), ([1, 0], (2, 3), (3, 2))])
def test_tensordot(axes, sa, sb):
    a, b = R.standard_normal(sa), R.standard_normal(sb)
    np.testing.assert_allclose(ek.tensordot(a, b, axes).numpy(), np.tensordot(a, b, axes), rtol=1e-12)


def test_tensordot_errors():
    with pytest.raises(InvalidArgumentError, match="must agree"):
        ek.tensordot(np.ones((2, 3)), np.ones((2, 3)), 1)
    with pytest.raises(InvalidArgumentError, match="axes=3"):
        ek.tensordot(np.ones((2, 3)), np.ones((3, 2)), 3)


# ------------------------------------------------------------------ strings
def test_strings_join():
    a = ek.constant([["a", "b"], ["c", "d"]])
    same(ek.strings.join([a, "x"], separator=", "),
         np.array([[b"a, x", b"b, x"], [b"c, x", b"d, x"]], object), ek.string)
    assert ek.strings.join(["p", "q", "r"]).numpy() == b"pqr"
    same(ek.strings.join([ek.constant(["1", "2"]), ek.constant(["a", "b"])], "-"), np.array([b"1-a", b"2-b"],
                                                                                          object))
    with pytest.raises(InvalidArgumentError, match="StringJoin.*int32"):
        ek.strings.join(["a", ek.constant(1)])
    with pytest.raises(InvalidArgumentError, match="broadcasting"):
        ek.strings.join([ek.constant(["a", "b"]), ek.constant(["a", "b", "c"])])
