"""Fast paths over tensor slices give exactly what the element-by-element paths give.

Shuffles and batches of tensor slices work on index arrays: the same rows, in the same order, as the
element-by-element buffered shuffle (which `range` and any non-slice input take).  A map over tensor slices
followed by `batch` stacks the function's output arrays: the same batches, specs and errors as mapping each
row to an element and stacking the elements."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import eager as ek
import tracing  # noqa: F401 - registers @function with eager.compiler_hook
from eager.data import Dataset, shuffle_order, shuffling


def _ints(ds):
    return [np.asarray(x).tolist() for x in ds.as_numpy_iterator()]


def _generic(n, buffer_size, seed, batch=None):
    """The element-by-element path: a range (no index array) shuffled, then batched by stacking."""
    ds = Dataset.range(n).shuffle(buffer_size, seed=seed)
    return _ints(ds if batch is None else ds.batch(batch))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 2100), buffer_size=st.integers(1, 2500), seed=st.integers(0, 2 ** 31 - 1),
       batch=st.integers(1, 70))
def test_shuffled_slices_keep_the_buffered_shuffle_order(n, buffer_size, seed, batch):
    slices = Dataset.from_tensor_slices(np.arange(n, dtype=np.int64))
    assert _ints(slices.shuffle(buffer_size, seed=seed)) == _generic(n, buffer_size, seed)
    assert _ints(slices.shuffle(buffer_size, seed=seed).batch(batch)) == _generic(n, buffer_size, seed, batch)


def test_a_long_shuffle_crosses_its_chunks_in_the_same_order():
    n = 70_000          # more emits than one chunk of draws; the first pass of a seeded shuffle is epoch 0
    slices = Dataset.from_tensor_slices(np.arange(n, dtype=np.int64)).shuffle(3000, seed=11)
    reference = list(shuffling.buffered_shuffle(range(n), 3000, shuffling.rng(11, 0)))
    assert next(iter(slices.batch(n))).numpy().tolist() == reference


@st.composite
def _shuffle_sizes(draw):
    """(n, buffer_size): any sizes, and often a buffer near n (where filling turns into draining)."""
    n = draw(st.integers(0, 3000))
    if draw(st.booleans()):
        return n, max(1, n + draw(st.integers(-3, 3)))
    return n, draw(st.integers(1, 3500))


@settings(max_examples=120, deadline=None)
@given(sizes=_shuffle_sizes(), seed=st.integers(0, 2 ** 32 - 1), epoch=st.integers(0, 5))
def test_the_computed_orders_are_the_buffered_shuffle_order(sizes, seed, epoch):
    n, buffer_size = sizes
    expected = list(shuffling.buffered_shuffle(range(n), buffer_size, shuffling.rng(seed, epoch)))
    for vectorized in (True, False, None):
        order = shuffle_order.shuffled_order(n, buffer_size, shuffling.rng(seed, epoch), vectorized)
        assert order.dtype == np.int64 and order.tolist() == expected


def test_the_computed_orders_on_tiny_and_edge_sizes():
    for n in range(0, 12):
        for buffer_size in range(1, 14):
            for seed in range(4):
                expected = list(shuffling.buffered_shuffle(range(n), buffer_size, shuffling.rng(seed, 1)))
                for vectorized in (True, False):
                    order = shuffle_order.shuffled_order(n, buffer_size, shuffling.rng(seed, 1), vectorized)
                    assert order.tolist() == expected
    assert shuffle_order.shuffled_order(5, 1, shuffling.rng(0, 0), True).tolist() == [0, 1, 2, 3, 4]


def test_reshuffled_passes_and_nested_shuffles_of_slices():
    x = np.arange(30, dtype=np.int64)
    ds = Dataset.from_tensor_slices({"a": x, "b": x * 10}).shuffle(30, seed=4).shuffle(5, seed=9)
    generic = Dataset.range(30).shuffle(30, seed=4).shuffle(5, seed=9)
    for _ in range(3):          # every pass draws the next order of both shuffles, on both paths
        rows = [(int(e["a"]), int(e["b"])) for e in ds]
        assert rows == [(int(v), int(v) * 10) for v in generic]
    # the fourth pass, gathered in batches: the same rows as the generic path's fourth pass
    batches = [b["a"].numpy().tolist() for b in ds.batch(8, drop_remainder=True)]
    assert batches == _ints(generic.batch(8, drop_remainder=True))
    assert [len(b) for b in batches] == [8, 8, 8]


def _rows_then_batch(make, size, **kw):
    """The same pipeline with `take(-1)` (all elements) between map and batch: the element-by-element path."""
    return make().take(-1).batch(size, **kw)


def _as_lists(batches):
    out = []
    for b in batches.as_numpy_iterator():
        if isinstance(b, dict):
            out.append({k: v.tolist() for k, v in b.items()})
        elif isinstance(b, tuple):
            out.append(type(b)(*[v.tolist() for v in b]) if hasattr(b, "_fields") else
                       tuple(v.tolist() for v in b))
        else:
            out.append(b.tolist())
    return out


def test_a_map_over_slices_then_batch_gives_the_row_by_row_batches():
    x = np.arange(60, dtype=np.uint8).reshape(20, 3)
    y = np.arange(20, dtype=np.int32)
    makes = [
        lambda: Dataset.from_tensor_slices((x, y)).shuffle(20, seed=2).map(
            lambda a, b: (ek.cast(a, ek.float32) / 16.0, b)),
        lambda: Dataset.from_tensor_slices({"x": x, "y": y}).map(lambda e: {"s": e["y"] * 2, "x": e["x"]}),
        lambda: Dataset.from_tensor_slices(y).map(lambda v: [v, v + 1]),       # a list becomes a tuple
        lambda: Dataset.from_tensor_slices(x).map(lambda r: r),                  # the row itself
        lambda: Dataset.from_tensor_slices(y).map(lambda v: (v, 7)),             # a Python number output
    ]
    for make in makes:
        for kw in ({}, {"drop_remainder": True}):
            ds = make().batch(6, **kw)
            assert _as_lists(ds) == _as_lists(_rows_then_batch(make, 6, **kw))
            assert ds.element_spec == _rows_then_batch(make, 6, **kw).element_spec
    first = next(iter(Dataset.from_tensor_slices(x).map(lambda r: r).batch(4)))
    assert first.dtype == ek.uint8 and first.numpy().tolist() == x[:4].tolist()


def test_a_mapped_batch_with_rows_of_different_shapes_fails_as_stacking_does():
    ragged = Dataset.from_tensor_slices(np.arange(6, dtype=np.int32)).map(lambda v: ek.range(v))
    with pytest.raises(ek.errors.InvalidArgumentError, match="different shapes in component 0"):
        list(ragged.batch(3))


def test_a_mapped_batch_raises_the_map_error_at_the_next_that_reaches_it():
    def check(v):
        ek.debugging.Assert(v < 5, ["row too large"])
        return v * 2
    it = iter(Dataset.from_tensor_slices(np.arange(12, dtype=np.int32)).map(check).batch(4))
    assert next(it).numpy().tolist() == [0, 2, 4, 6]
    with pytest.raises(ek.errors.InvalidArgumentError, match="row too large") as info:
        next(it)
    assert "test_dataset_slice_orders.py" in str(info.value) or any(
        str(f.path) == __file__ for f in info.traceback)
