"""eager.data eagerly: sources, transformations, structures, inspection; expected values are tf.data's."""
import collections

import numpy as np
import pytest

import eager as ek
import tracing  # noqa: F401 - registers @function with eager.compiler_hook (the entry point may not be installed)
from eager.data import Dataset

Point = collections.namedtuple("Point", ["x", "y"])


def values(ds):
    return [_plain(x) for x in ds.as_numpy_iterator()]


def _plain(x):
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return type(x)(*[_plain(v) for v in x]) if hasattr(x, "_fields") else tuple(_plain(v) for v in x)
    return np.asarray(x).tolist()


def test_sources_and_their_specs():
    assert values(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert values(Dataset.range(2, 10, 3)) == [2, 5, 8]
    assert values(Dataset.range(5, 0, -2)) == [5, 3, 1]
    assert Dataset.range(3).element_spec == ek.TensorSpec([], ek.int64)
    ds = Dataset.from_tensor_slices(([1, 2], [[1.0, 2.0], [3.0, 4.0]]))
    assert ds.element_spec == (ek.TensorSpec([], ek.int32), ek.TensorSpec([2], ek.float32))
    assert values(ds) == [(1, [1.0, 2.0]), (2, [3.0, 4.0])]
    assert values(Dataset.from_tensors([1, 2, 3])) == [[1, 2, 3]]
    assert Dataset.from_tensors([1, 2, 3]).element_spec == ek.TensorSpec([3], ek.int32)
    with pytest.raises(ValueError, match="same first dimension"):
        Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))


def test_dicts_and_namedtuples_are_structure():
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": np.array([3.0, 4.0])})
    assert values(ds) == [{"a": 1, "b": 3.0}, {"a": 2, "b": 4.0}]
    ds = Dataset.from_tensor_slices(Point([1, 2], [3, 4]))
    first = next(iter(ds))
    assert isinstance(first, Point) and int(first.y) == 3


def test_map_unpacks_tuples_and_passes_dicts_whole():
    pairs = Dataset.from_tensor_slices(([1, 2], [10, 20]))
    assert values(pairs.map(lambda a, b: a + b)) == [11, 22]
    dicts = Dataset.from_tensor_slices({"a": [1, 2], "b": [10, 20]})
    assert values(dicts.map(lambda d: d["a"] * d["b"])) == [10, 40]
    points = Dataset.from_tensor_slices(Point([1, 2], [3, 4]))
    assert values(points.map(lambda p: p.x - p.y)) == [-2, -2]      # a namedtuple is one argument
    assert values(Dataset.range(2).map(lambda x: [x, x + 1])) == [(0, 1), (1, 2)]   # list -> tuple


def test_map_and_filter_are_traced_once_not_called_per_element():
    calls = []

    def double(x):
        calls.append(1)
        if x > 2:                 # a tensor condition: AutoGraph stages it
            x = x * 10
        return x * 2

    ds = Dataset.range(6).map(double)
    assert len(calls) == 1                       # traced when the dataset was built
    assert values(ds) == [0, 2, 4, 60, 80, 100]
    assert values(ds) == [0, 2, 4, 60, 80, 100]
    assert len(calls) == 1

    def keep(x):
        calls.append(2)
        return x % 2 == 0
    assert values(Dataset.range(7).filter(keep)) == [0, 2, 4, 6]
    assert calls.count(2) == 1


def test_filter_predicate_must_be_a_bool_scalar():
    with pytest.raises(TypeError, match="must return a `bool` scalar"):
        Dataset.range(3).filter(lambda x: x)


def test_batch_padded_batch_unbatch_rebatch():
    assert values(Dataset.range(7).batch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert values(Dataset.range(7).batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert Dataset.range(7).batch(3).element_spec == ek.TensorSpec([None], ek.int64)
    assert Dataset.range(7).batch(3, drop_remainder=True).element_spec == ek.TensorSpec([3], ek.int64)
    ragged = Dataset.range(1, 4).map(lambda x: ek.fill([x], x))
    assert values(ragged.padded_batch(2)) == [[[1, 0], [2, 2]], [[3, 3, 3]]]
    assert values(ragged.padded_batch(2, padded_shapes=[4], padding_values=ek.constant(-1, ek.int64))) == \
        [[[1, -1, -1, -1], [2, 2, -1, -1]], [[3, 3, 3, -1]]]
    with pytest.raises(ek.errors.InvalidArgumentError, match="Cannot batch tensors with different shapes"):
        list(ragged.batch(2))
    assert values(Dataset.range(6).batch(4).unbatch()) == [0, 1, 2, 3, 4, 5]
    assert values(Dataset.range(8).batch(4).rebatch(3)) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert values(Dataset.range(8).batch(4).rebatch([3, 1])) == [[0, 1, 2], [3], [4, 5, 6], [7]]


def test_take_skip_repeat_enumerate_shard_concatenate():
    assert values(Dataset.range(5).take(2)) == [0, 1]
    assert values(Dataset.range(5).take(-1)) == [0, 1, 2, 3, 4]
    assert values(Dataset.range(5).skip(3)) == [3, 4]
    assert values(Dataset.range(2).repeat(3)) == [0, 1, 0, 1, 0, 1]
    assert values(Dataset.range(2).repeat().take(5)) == [0, 1, 0, 1, 0]
    assert values(Dataset.range(3, 5).enumerate(start=10)) == [(10, 3), (11, 4)]
    assert values(Dataset.range(7).shard(3, 1)) == [1, 4]
    assert values(Dataset.range(2).concatenate(Dataset.range(5, 7))) == [0, 1, 5, 6]
    assert values(Dataset.range(5).take_while(lambda x: x < 3)) == [0, 1, 2]


def test_zip_structures():
    a, b = Dataset.range(3), Dataset.range(10, 20)
    assert values(Dataset.zip(a, b)) == [(0, 10), (1, 11), (2, 12)]
    assert values(Dataset.zip((a, b))) == [(0, 10), (1, 11), (2, 12)]
    assert values(Dataset.zip({"x": a, "y": b}).take(1)) == [{"x": 0, "y": 10}]


def test_interleave_order_is_tf_data_order():
    # tf.data.Dataset.interleave documentation example
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
                                        cycle_length=2, block_length=4)
    assert values(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    ds = Dataset.range(1, 4).interleave(lambda x: Dataset.range(x), cycle_length=2)
    assert values(ds) == [0, 0, 1, 0, 1, 2]
    assert values(Dataset.range(1, 4).flat_map(lambda x: Dataset.range(x))) == [0, 0, 1, 0, 1, 2]


def test_window_scan_reduce():
    windows = Dataset.range(5).window(3, shift=1)
    assert [values(w) for w in windows] == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4], [4]]
    assert values(Dataset.range(7).window(2, shift=3, drop_remainder=True).flat_map(lambda w: w.batch(2))) == \
        [[0, 1], [3, 4]]
    assert isinstance(windows.element_spec, ek.data.DatasetSpec)
    assert values(Dataset.range(5).scan(ek.constant(0, ek.int64), lambda s, x: (s + x, s))) == [0, 0, 1, 3, 6]
    assert int(Dataset.range(5).reduce(ek.constant(0, ek.int64), lambda s, x: s + x)) == 10
    # a state whose shape changes is retraced once with a relaxed shape, as in tf.data
    grown = Dataset.range(3).reduce(ek.zeros([0], ek.int64), lambda s, x: ek.concat([s, [x]], 0))
    assert grown.numpy().tolist() == [0, 1, 2]


def test_cardinality_and_len():
    assert int(Dataset.range(10).batch(3).cardinality()) == 4
    assert int(Dataset.range(10).repeat().cardinality()) == ek.data.INFINITE_CARDINALITY == -1
    assert int(Dataset.range(10).filter(lambda x: x > 2).cardinality()) == ek.data.UNKNOWN_CARDINALITY == -2
    assert int(Dataset.range(10).repeat().take(4).cardinality()) == 4
    assert len(Dataset.range(10).skip(3)) == 7
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(3).repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(Dataset.range(3).filter(lambda x: x > 0))


def test_from_generator_is_called_again_each_pass_and_checks_values():
    calls = []

    def gen():
        calls.append(1)
        for i in range(3):
            yield i, [i] * i
    sig = (ek.TensorSpec([], ek.int32), ek.TensorSpec([None], ek.int32))
    ds = Dataset.from_generator(gen, output_signature=sig)
    assert values(ds.padded_batch(3)) == [([0, 1, 2], [[0, 0], [1, 0], [2, 2]])]
    assert values(ds.take(1)) == [(0, [])]
    assert len(calls) == 2
    assert int(ds.cardinality()) == -2
    bad = Dataset.from_generator(lambda: iter([[1, 2, 3]]), output_signature=ek.TensorSpec([2], ek.int32))
    with pytest.raises(ek.errors.InvalidArgumentError, match="shape"):
        list(bad)


def test_seeded_shuffle_is_reproducible_and_reshuffles_each_pass():
    a = Dataset.range(20).shuffle(20, seed=7)
    b = Dataset.range(20).shuffle(20, seed=7)
    first, second = values(a), values(a)
    assert first == values(b) and second == values(b)          # same seed: same sequence of passes
    assert sorted(first) == list(range(20)) and first != list(range(20))
    assert first != second                                       # reshuffle_each_iteration=True
    fixed = Dataset.range(20).shuffle(20, seed=7, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed) == first
    assert values(Dataset.range(5).shuffle(1, seed=3)) == [0, 1, 2, 3, 4]    # a buffer of 1 keeps the order
    # a small buffer only moves elements forward by less than the buffer size
    small = values(Dataset.range(100).shuffle(4, seed=1))
    assert all(v <= i + 3 for i, v in enumerate(small))


def test_cache_freezes_a_shuffle_before_it():
    ds = Dataset.range(10).shuffle(10, seed=1).cache()
    assert values(ds) == values(ds)
    assert values(Dataset.range(10).shuffle(10, seed=1).cache().repeat(2))[:10] == \
        values(Dataset.range(10).shuffle(10, seed=1).cache().repeat(2))[10:]


def test_iter_next_and_get_next():
    it = iter(Dataset.range(2))
    assert int(next(it)) == 0 and int(it.get_next()) == 1
    with pytest.raises(ek.errors.OutOfRangeError):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)
    assert int(Dataset.from_tensors(5).get_single_element()) == 5


def _same(*element):
    return element if len(element) > 1 else element[0]


def test_batches_gathered_from_slices_equal_the_row_by_row_batches():
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    y = np.arange(20, dtype=np.int32)
    for make in (lambda: Dataset.from_tensor_slices((x, y)),
                 lambda: Dataset.from_tensor_slices({"x": x, "y": y}).shuffle(7, seed=3)):
        gathered = values(make().batch(6))                      # batch right after slices / shuffle
        row_by_row = values(make().map(_same).batch(6))     # the map hides the slices from batch
        if isinstance(gathered[0], dict):
            assert all(g == r for g, r in zip(gathered, row_by_row))
        else:
            assert gathered == row_by_row
        assert len(gathered) == 4


def test_from_generator_args_and_legacy_types():
    def count(n, scale):
        for i in range(int(n)):
            yield i * int(scale)
    ds = Dataset.from_generator(count, output_types=ek.int64, output_shapes=[], args=(3, 10))
    assert ds.element_spec == ek.TensorSpec([], ek.int64)
    assert values(ds) == [0, 10, 20]
    wrong = Dataset.from_generator(lambda: iter([(1, 2)]), output_signature=ek.TensorSpec([], ek.int32))
    with pytest.raises(TypeError, match="did not match the expected structure"):
        list(wrong)


def test_map_functions_run_outside_any_tape_as_in_tf():
    # tf.data runs map functions in its own runtime: a GradientTape around the iteration does not see them
    # (TF: the gradient is None), and each element costs one graph run, not a @function call
    v = ek.Variable(2.0)
    ds = Dataset.range(3).map(lambda x: ek.cast(x, ek.float32) * v)
    with ek.GradientTape() as tape:
        total = ek.add_n(list(ds))
    assert float(total) == 6.0
    assert tape.gradient(total, v) is None
