"""Datasets inside @function: staged `for` loops (never unrolled), iter/next, reduce, save; same values as eagerly."""
import numpy as np
import pytest

import eager as ek
import tracing
from eager.data import Dataset
from tracing import function

# the pipelines below are lambdas sharing lines; AutoGraph says it cannot convert them (they need no conversion)
pytestmark = pytest.mark.filterwarnings("ignore:autograph could not convert")


def eager_values(ds):
    return [np.asarray(x).tolist() for x in ds.as_numpy_iterator()]


def staged_values(make):
    """The elements of `make()` (scalars) collected by a staged loop inside @function."""
    @function
    def collect():
        out = []
        for x in make():
            out.append(x)
        return out
    return collect().numpy().tolist()


PIPELINES = {
    "range": lambda: Dataset.range(2, 12, 3),
    "slices": lambda: Dataset.from_tensor_slices(np.array([5, 3, 9, 1], np.int64)),
    "map": lambda: Dataset.range(6).map(lambda x: x * x + 1),
    "filter": lambda: Dataset.range(10).filter(lambda x: x % 3 == 0),
    "map_filter_map": lambda: Dataset.range(10).map(lambda x: x * 2).filter(lambda x: x > 6).map(lambda x: x - 1),
    "take_skip": lambda: Dataset.range(10).skip(2).take(5),
    "repeat": lambda: Dataset.range(3).repeat(3),
    "repeat_take": lambda: Dataset.range(3).repeat().take(7),
    "shuffle": lambda: Dataset.range(20).shuffle(8, seed=4),
    "shuffle_repeat": lambda: Dataset.range(6).shuffle(6, seed=2).repeat(3),
    "shuffle_cache_repeat": lambda: Dataset.range(6).shuffle(6, seed=2).cache().repeat(2),
    "filter_repeat": lambda: Dataset.range(5).filter(lambda x: x > 2).repeat(2),
    "zip_sum": lambda: Dataset.zip(Dataset.range(4), Dataset.range(10, 20).filter(lambda x: x % 2 == 0))
                              .map(lambda a, b: a + b),
    "map_passing_an_argument_through": lambda: Dataset.zip(Dataset.range(2), Dataset.range(5, 7))
                                                      .map(lambda a, b: (a * 2, b)).map(lambda a, b: a * 10 + b),
    "enumerate": lambda: Dataset.range(3, 6).enumerate(start=1).map(lambda i, x: i * 100 + x),
    "concatenate": lambda: Dataset.range(3).concatenate(Dataset.range(7, 9).filter(lambda x: x > 7)),
    "shard": lambda: Dataset.range(10).shard(3, 1),
    "scan": lambda: Dataset.range(5).scan(ek.constant(0, ek.int64), lambda s, x: (s + x, s * 10)),
    "take_while": lambda: Dataset.range(10).take_while(lambda x: x < 4),
    "batch_unbatched_sum": lambda: Dataset.range(7).batch(3).map(lambda b: ek.reduce_sum(b)),
    "batch_drop": lambda: Dataset.range(7).batch(3, drop_remainder=True).map(lambda b: ek.reduce_max(b)),
    "unbatch": lambda: Dataset.range(7).batch(3).unbatch().map(lambda x: x * 10),
    "filter_batch_unbatch": lambda: Dataset.range(12).filter(lambda x: x % 4 != 0).batch(4).unbatch(),
    "rebatch": lambda: Dataset.range(9).batch(4).rebatch([3, 1]).map(lambda b: ek.reduce_sum(b) * 10 + ek.size(b, ek.int64)),
    "padded_batch": lambda: Dataset.range(1, 6).map(lambda x: ek.fill([x], x)).padded_batch(
        2, padded_shapes=[6], padding_values=ek.constant(-1, ek.int64)).map(lambda b: ek.reduce_sum(b)),
    "flat_map_slices": lambda: Dataset.from_tensor_slices(np.array([[1, 2], [3, 4]], np.int64))
                                      .flat_map(lambda r: Dataset.from_tensor_slices(r)),
    "flat_map_closing_over_the_element": lambda: Dataset.range(1, 4).flat_map(
        lambda x: Dataset.range(x).map(lambda y: y * 10 + x)),
    "flat_map_with_empty_datasets": lambda: Dataset.range(4).flat_map(
        lambda x: Dataset.range(x).filter(lambda y: y > 0)),
    "flat_map_of_batches": lambda: Dataset.range(5).batch(2).flat_map(lambda b: Dataset.from_tensors(b))
                                          .map(lambda b: ek.reduce_sum(b)),
    "interleave_blocks": lambda: Dataset.range(1, 5).interleave(
        lambda x: Dataset.range(x).map(lambda y: x * 10 + y), cycle_length=2, block_length=2),
    "interleave_three": lambda: Dataset.range(1, 6).interleave(
        lambda x: Dataset.range(x).map(lambda y: x * 10 + y), cycle_length=3),
    "from_tensors": lambda: Dataset.from_tensors(ek.constant(4, ek.int64)).repeat(2),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_staged_loop_gives_the_eager_elements(name):
    make = PIPELINES[name]
    assert staged_values(make) == eager_values(make())


def test_expected_values_written_out():
    # TF 2.21 gives these (tf.data's documented interleave order)
    assert staged_values(PIPELINES["interleave_blocks"]) == [10, 20, 21, 30, 31, 32, 40, 41, 42, 43]
    assert staged_values(PIPELINES["interleave_three"]) == [10, 20, 30, 21, 31, 40, 32, 41, 50, 42, 51, 43, 52,
                                                            53, 54]
    assert staged_values(PIPELINES["flat_map_closing_over_the_element"]) == [1, 2, 12, 3, 13, 23]
    # the example of tf.data.Dataset.interleave's documentation, with its printed output
    tf_doc = lambda: Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),  # noqa: E731
                                                    cycle_length=2, block_length=4)
    assert staged_values(tf_doc) == eager_values(tf_doc()) == [
        1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5]
    assert staged_values(PIPELINES["map_filter_map"]) == [7, 9, 11, 13, 15, 17]
    assert staged_values(PIPELINES["batch_unbatched_sum"]) == [3, 12, 6]
    assert staged_values(PIPELINES["zip_sum"]) == [10, 13, 16, 19]
    assert staged_values(PIPELINES["scan"]) == [0, 0, 10, 30, 60]


def test_batches_of_structures_in_a_staged_loop():
    ds = Dataset.from_tensor_slices({"x": np.arange(10, dtype=np.float32).reshape(5, 2),
                                     "y": np.array([0, 1, 0, 1, 1], np.int32)}).batch(2)

    @function
    def f():
        total, rows = ek.constant(0.0), ek.constant(0)
        for b in ds:
            total += ek.reduce_sum(b["x"]) * ek.cast(ek.reduce_sum(b["y"]) + 1, ek.float32)
            rows += ek.shape(b["x"])[0]
        return total, rows
    total, rows = f()
    assert float(total) == (1 + 5) * 2 + (9 + 13) * 2 + 17 * 2 and int(rows) == 5


def test_break_continue_return_and_variables():
    v = ek.Variable(ek.constant(0, ek.int64))

    @function
    def f(limit):
        s = ek.constant(0, ek.int64)
        for x in Dataset.range(100).map(lambda x: x * 2):
            if x % 4 == 0:
                continue
            if x > limit:
                break
            v.assign_add(x)
            s += x
        return s

    assert int(f(ek.constant(20, ek.int64))) == 2 + 6 + 10 + 14 + 18
    assert int(v) == 50

    @function
    def first_over(limit):
        for x in Dataset.range(10):
            if x * x > limit:
                return x
        return ek.constant(-1, ek.int64)
    assert int(first_over(ek.constant(20, ek.int64))) == 5
    assert int(first_over(ek.constant(200, ek.int64))) == -1


def test_loop_is_traced_once_and_never_unrolled():
    calls = []

    def square(x):
        calls.append(1)
        return x * x

    def graph_size(n):
        @function
        def f():
            s = ek.constant(0, ek.int64)
            for x in Dataset.range(n).map(square).batch(4):
                s += ek.reduce_sum(x)
            return s
        assert int(f()) == sum(i * i for i in range(n))
        return len(f.get_concrete_function().graph.get_operations())
    assert graph_size(10) == graph_size(1000)
    assert len(calls) == 2          # one trace of the map function per dataset built, none when staging


def test_iter_and_next_inside_a_function():
    @function
    def f():
        it = iter(Dataset.range(10).filter(lambda x: x % 2 == 1))
        a = next(it)
        b = next(it)
        s = ek.constant(0, ek.int64)
        for x in it:                # the rest of the iterator: 5, 7, 9
            s += x
        return a, b, s
    a, b, s = f()
    assert (int(a), int(b), int(s)) == (1, 3, 21)

    @function
    def too_far():
        it = iter(Dataset.range(1))
        next(it)
        return next(it)
    with pytest.raises(ek.errors.OutOfRangeError, match="End of sequence"):
        too_far()


def test_iterator_resumes_after_a_break():
    @function
    def f():
        it = iter(Dataset.range(10))
        for x in it:
            if x >= 3:
                break
        return next(it)
    assert int(f()) == 4


def test_dataset_built_from_function_arguments():
    @function
    def mean_of_batches(x, y):
        total = ek.constant(0.0)
        n = ek.constant(0.0)
        for a, b in Dataset.from_tensor_slices((x, y)).batch(3):
            total += ek.reduce_sum(a * b)
            n += ek.cast(ek.shape(a)[0], ek.float32)
        return total / n
    x = np.arange(7, dtype=np.float32)
    assert float(mean_of_batches(ek.constant(x), ek.constant(2 * x))) == pytest.approx(float(np.mean(2 * x * x)))
    x = np.arange(4, dtype=np.float32)
    assert float(mean_of_batches(ek.constant(x), ek.constant(x))) == pytest.approx(float(np.mean(x * x)))


def test_reduce_and_cardinality_inside_a_function():
    @function
    def f():
        ds = Dataset.range(5).map(lambda x: x + 1)
        return ds.reduce(ek.constant(0, ek.int64), lambda s, x: s + x), ds.cardinality()
    total, card = f()
    assert int(total) == 15 and int(card) == 5

    @function
    def g():
        return len(Dataset.range(3))
    with pytest.raises(TypeError, match="only supports `len` in eager mode"):
        g()


def test_a_map_inside_a_function_may_use_its_tensors():
    @function
    def scaled_sum(k, xs):
        s = ek.constant(0, ek.int64)
        for a in Dataset.from_tensor_slices(xs).map(lambda a: a * k):
            s += a
        return s
    xs = ek.constant([1, 2, 3], ek.int64)
    assert int(scaled_sum(ek.constant(3, ek.int64), xs)) == 18
    assert int(scaled_sum(ek.constant(2, ek.int64), xs)) == 12
    assert scaled_sum.experimental_get_tracing_count() == 1


def test_what_cannot_be_staged_is_refused_with_the_reason():
    windows = Dataset.range(7).window(3).flat_map(lambda w: w.batch(3))
    needs_an_int = Dataset.range(3).flat_map(lambda x: Dataset.range(5).take(int(x)))
    assert [x.tolist() for x in windows.as_numpy_iterator()] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [int(x) for x in needs_an_int.as_numpy_iterator()] == [0, 0, 1]        # eagerly both work

    def total(ds):
        @function
        def f():
            s = ek.constant(0, ek.int64)
            for x in ds:
                s += ek.reduce_sum(x)
            return s
        return f
    with pytest.raises(NotImplementedError, match="Window.*its elements are datasets"):
        total(windows)()
    with pytest.raises(NotImplementedError, match="flat_map.*could not be called on symbolic elements"):
        total(needs_an_int)()
    with pytest.raises(NotImplementedError, match="only the in-memory cache"):
        Dataset.range(3).cache("/tmp/somewhere")


def test_generator_datasets_are_refused_inside_a_graph_with_the_reason():
    ds = Dataset.from_generator(lambda: iter([1, 2]), output_signature=ek.TensorSpec([], ek.int32))

    @function
    def f():
        s = ek.constant(0)
        for x in ds:
            s += x
        return s
    with pytest.raises(NotImplementedError, match="running the Python generator"):
        f()


def test_a_function_with_a_dataset_loop_is_saved_and_loaded(tmp_path):
    data = np.arange(12, dtype=np.float32).reshape(6, 2)

    @function
    def f(scale):
        s = ek.constant(0.0)
        for b in Dataset.from_tensor_slices(data).shuffle(6, seed=1).map(lambda r: r * 2.0).batch(4):
            s += ek.reduce_sum(b) * scale
        return s
    expected = float(f(ek.constant(3.0)))
    assert expected == pytest.approx(float(np.sum(data)) * 6.0)
    loaded = tracing.load(tracing.save(f, str(tmp_path / "saved")))
    assert float(loaded(ek.constant(3.0))) == pytest.approx(expected)


def test_datasets_are_values_passed_to_functions():
    @function
    def total(ds):
        s = ek.constant(0, ek.int64)
        for x in ds:
            s += x
        return s
    assert int(total(Dataset.range(4))) == 6
    assert int(total(Dataset.range(5).map(lambda x: x * 2))) == 20


def test_dataset_arguments_share_a_trace_per_element_spec_as_in_tf():
    @function
    def stats(ds):
        n, s = ek.constant(0, ek.int64), ek.constant(0.0)
        for x in ds:
            n += 1
            s += ek.reduce_sum(x)
        return n, s, ds.cardinality()
    one = Dataset.from_tensor_slices(np.arange(6, dtype=np.float32).reshape(3, 2))
    other = Dataset.range(4).map(lambda i: ek.cast(ek.stack([i, i]), ek.float32)).filter(lambda r: r[0] > 0)
    # the second dataset has another pipeline and other values but the same element_spec: no retrace, and
    # its own elements (TF: 3 rows summing to 15; then rows 1..3 twice: 12; cardinalities 3 and UNKNOWN -2)
    assert [x.numpy().tolist() for x in stats(one)] == [3, 15.0, 3]
    assert [x.numpy().tolist() for x in stats(other)] == [3, 12.0, -2]
    assert [x.numpy().tolist() for x in stats(one)] == [3, 15.0, 3]
    assert stats.experimental_get_tracing_count() == 1
    stats(Dataset.from_tensor_slices(np.zeros((2, 3), np.float32)))        # another element_spec: retrace
    assert stats.experimental_get_tracing_count() == 2
    reason = stats.trace_log[-1].reason
    assert "DatasetSpec(TensorSpec(shape=[2], dtype=float32))" in reason
    assert "DatasetSpec(TensorSpec(shape=[3], dtype=float32))" in reason


def test_a_dataset_argument_is_the_dataset_of_each_call():
    @function
    def pairs(ds, k):
        out = ek.TensorArray(ek.int64, size=0, dynamic_size=True)
        for a, b in ds.map(lambda a, b: (a * k, b)):      # k: a Python number (baked into the trace)
            out = out.write(out.size(), a + b)
        return out.stack()
    x = np.array([1, 2, 3], np.int64)
    assert pairs(Dataset.from_tensor_slices((x, x * 10)), 2).numpy().tolist() == [12, 24, 36]
    assert pairs(Dataset.zip(Dataset.range(2), Dataset.range(5, 7)), 2).numpy().tolist() \
        == [5, 8]
    assert pairs.experimental_get_tracing_count() == 1
    concrete = pairs.get_concrete_function(Dataset.range(1).map(lambda i: (i, i)), 2)
    assert concrete(Dataset.range(3).map(lambda i: (i, i)), 2).numpy().tolist() == [0, 3, 6]
    with pytest.raises(TypeError, match="does not fit DatasetSpec"):
        concrete(Dataset.range(3), 2)


def test_iterators_over_a_dataset_argument_resume_and_train():
    @function
    def after_three(ds):
        it = iter(ds)
        for x in it:
            if x >= 3:
                break
        return next(it)
    assert int(after_three(Dataset.range(10))) == 4
    assert int(after_three(Dataset.range(10, 20))) == 11

    w = ek.Variable(0.0)
    opt = ek.optimizers.SGD(0.1)

    @function
    def epoch(ds):
        for x, y in ds:
            with ek.GradientTape() as tape:
                loss = ek.reduce_mean((w * x - y) ** 2)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
        return w.read_value()
    xs = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    epoch(Dataset.from_tensor_slices((xs, 2 * xs)))
    # two SGD steps from w=0 towards w=2: -0.1 * d/dw mean((w x - 2x)^2) = 0.2 * (2 - w) * mean(x^2)
    w1 = 0.0 + 0.2 * 2.0 * 2.5
    assert float(w) == pytest.approx(w1 + 0.2 * (2.0 - w1) * 12.5)


def test_a_function_taking_a_dataset_is_not_saved_silently(tmp_path):
    @function
    def total(ds):
        return ds.reduce(ek.constant(0, ek.int64), lambda s, x: s + x)
    assert int(total(Dataset.range(5))) == 10
    with pytest.raises(ValueError, match="cannot carry"):
        tracing.save(total, str(tmp_path / "saved"))


def test_an_eager_iterator_cannot_be_frozen_into_a_graph():
    it = iter(Dataset.range(5))

    @function
    def f():
        return next(it) * 2
    with pytest.raises(RuntimeError, match="frozen into the graph"):
        f()
    assert int(next(it)) == 0           # the iterator did not move


def test_map_functions_with_variables_and_effects_run_once_per_element_when_staged():
    counter = ek.Variable(ek.constant(0, ek.int64))
    scale = ek.Variable(ek.constant(3, ek.int64))

    def count(x):
        counter.assign_add(1)
        if x > 2:
            x = x * scale
        return x

    ds = Dataset.range(5).map(count).filter(lambda x: x != 1)

    @function
    def f():
        s = ek.constant(0, ek.int64)
        for x in ds:
            s += x
        return s
    assert int(f()) == 0 + 2 + 9 + 12
    assert int(counter) == 5
    scale.assign(10)                  # the staged map reads the variable, not its value at trace time
    assert int(f()) == 0 + 2 + 30 + 40
    assert int(counter) == 10
    assert eager_values(ds) == [0, 2, 30, 40]


def test_a_python_loop_over_a_dataset_in_a_graph_is_stopped_not_unrolled_forever():
    @function(autograph=False)
    def f():
        s = ek.constant(0, ek.int64)
        for x in Dataset.range(3):
            s += x
        return s
    with pytest.raises(RuntimeError, match="Python `for` loop over a dataset"):
        f()


def test_cardinality_of_a_pipeline_over_a_dataset_argument_is_the_call_datasets():
    # TF computes it when the graph runs, from the dataset passed at this call: batch(4) of 10 -> 3,
    # drop_remainder -> 2, take(7).repeat(2) -> 14, skip(12) -> 0, zip with range(5) -> 5,
    # filter -> UNKNOWN (-2), repeat() -> INFINITE (-1)
    @function
    def cards(ds, other):
        return ek.stack([ds.batch(4).cardinality(), ds.batch(4, drop_remainder=True).cardinality(),
                         ds.take(7).repeat(2).cardinality(), ds.skip(12).cardinality(),
                         Dataset.zip(ds, other).cardinality(), ds.filter(lambda x: x > 1).cardinality(),
                         ds.repeat().cardinality(), ds.map(lambda x: x * 2).cardinality()])
    assert cards(Dataset.range(10), Dataset.range(5)).numpy().tolist() == [3, 2, 14, 0, 5, -2, -1, 10]
    # the same trace, other datasets: 3 elements, and zip with an infinite one
    assert cards(Dataset.range(3), Dataset.range(5).repeat()).numpy().tolist() == [1, 0, 6, 0, 3, -2, -1, 3]
    assert cards.experimental_get_tracing_count() == 1


def _scaled_twice(x):
    n = x
    if x > 2:                 # on a tensor: AutoGraph makes it a cond where a staged loop builds the dataset
        n = x * 10
    return Dataset.from_tensors(n).repeat(2)


def test_flat_map_and_interleave_functions_are_converted_by_autograph():
    flat = [0, 0, 1, 1, 2, 2, 30, 30, 40, 40]            # TF's elements
    woven = [0, 1, 0, 1, 2, 30, 2, 30, 40, 40]           # interleave(cycle_length=2, block_length=1)
    assert eager_values(Dataset.range(5).flat_map(_scaled_twice)) == flat
    assert eager_values(Dataset.range(5).interleave(_scaled_twice, cycle_length=2)) == woven

    @function
    def staged():
        total, folded = ek.constant(0, ek.int64), ek.constant(0, ek.int64)
        for v in Dataset.range(5).flat_map(_scaled_twice):
            total += v
        for v in Dataset.range(5).interleave(_scaled_twice, cycle_length=2):
            folded = folded * 3 + v          # order-sensitive
        return total, folded

    @function
    def from_argument(ds):
        total = ek.constant(0, ek.int64)
        for v in ds:
            total = total * 3 + v
        return total

    expected_fold = 0
    for v in woven:
        expected_fold = expected_fold * 3 + v
    total, folded = staged()
    assert (int(total), int(folded)) == (sum(flat), expected_fold)
    assert int(from_argument(Dataset.range(5).interleave(_scaled_twice, cycle_length=2))) == expected_fold
