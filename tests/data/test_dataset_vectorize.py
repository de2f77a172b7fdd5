"""map(fn).batch(n) runs fn once per batch (tf.data's map vectorization) only where that gives the same bits.

Every test compares the batches with the per-row results stacked by NumPy, byte for byte, and counts the
traces of the map function (its Python runs once per trace): two traces (row and batch) when it was
vectorized, one when it kept the per-row path.
"""
import numpy as np
import pytest

import autograph
import eager as ek
import tracing  # noqa: F401 - registers @function with eager.compiler_hook
from eager.data import Dataset
from tracing import function

_RNG = np.random.default_rng(0)
# values that catch a different code path: zeros of both signs, a subnormal, infinities, NaN, large numbers
_SPECIAL = np.array([0.0, -0.0, 1e-40, np.inf, -np.inf, np.nan, 3.4e38, -7.5, 0.1, 1 / 3], np.float32)
FLOATS = np.concatenate([_SPECIAL, _RNG.standard_normal(290).astype(np.float32) * 100]).reshape(50, 6)
IMAGES = _RNG.integers(0, 256, (50, 4, 3)).astype(np.uint8)
LABELS = np.arange(50, dtype=np.int32)
OFFSET = np.array([0.5, -1.25, 3.0, 1e-3, -2.0, 7.0], np.float32)


def _counted(fn):
    traces = []

    @autograph.do_not_convert          # the counting wrapper only: fn is the same either way (no control flow)
    def wrapper(*args):
        traces.append(1)
        return fn(*args)
    wrapper.__name__ = fn.__name__
    return wrapper, traces


def _per_row_stacked(ds, fn, size):
    rows = [[np.asarray(t) for t in (e if isinstance(e, tuple) else (e,))] for e in ds.map(fn).as_numpy_iterator()]
    batches = [rows[i:i + size] for i in range(0, len(rows), size)]
    return [[np.stack(parts) for parts in zip(*b)] for b in batches]


def _batches(ds):
    return [[np.asarray(t) for t in (e if isinstance(e, tuple) else (e,))] for e in ds.as_numpy_iterator()]


def _same_bits(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes()


def normalise(image, label):
    return ek.cast(image, ek.float32) / 255.0, label


def affine(x, label):
    return x * 3.7 + OFFSET - x / 7.0, label


def clamps(x, label):
    y = ek.maximum(ek.minimum(x, 50.0), -50.0)
    return ek.sqrt(ek.abs(y)) + ek.square(y) - ek.floor(y) + ek.round(y) + ek.nn.relu(-y), ek.cast(y, ek.int32)


def selects(x, label):
    return ek.where(ek.logical_and(x > 0.0, x < 100.0), x, -x * 0.5), ek.cast(label, ek.float64) / 3.0


ROWWISE = [(normalise, IMAGES), (affine, FLOATS), (clamps, FLOATS), (selects, FLOATS)]


@pytest.mark.parametrize("fn,data", ROWWISE, ids=[f.__name__ for f, _ in ROWWISE])
@pytest.mark.parametrize("size,drop", [(16, False), (16, True), (50, False), (7, False)])
def test_a_rowwise_map_runs_once_per_batch_with_the_same_bits(fn, data, size, drop):
    counted, traces = _counted(fn)
    ds = Dataset.from_tensor_slices((data, LABELS))
    batched = ds.map(counted).batch(size, drop_remainder=drop)
    assert len(traces) == 2, "the map should have been traced for rows and for batches"
    want = _per_row_stacked(ds, fn, size)
    if drop:
        want = [b for b in want if len(b[0]) == size]
    _same_bits(_batches(batched), want)


def test_vectorized_batches_follow_the_shuffle_and_reach_a_dict_structure():
    def to_dict(image, label):
        return {"image": ek.cast(image, ek.float32) / 16.0, "label": label + 1}
    counted, traces = _counted(to_dict)
    ds = Dataset.from_tensor_slices((IMAGES, LABELS)).shuffle(50, seed=3, reshuffle_each_iteration=False)
    got = list(ds.map(counted).batch(8).as_numpy_iterator())
    assert len(traces) == 2
    rows = list(ds.map(to_dict).as_numpy_iterator())
    for k, batch in enumerate(got):
        for key in ("image", "label"):
            want = np.stack([r[key] for r in rows[8 * k:8 * k + 8]])
            assert batch[key].dtype == want.dtype and batch[key].tobytes() == want.tobytes()


def _reduces(x, label):
    return ek.reduce_sum(x), label                 # over the row: on a batch it would sum everything


def _reshapes(x, label):
    return ek.reshape(x, [3, 2]), label


def _transcendental(x, label):
    return ek.exp(x / 100.0), label                # exp is not declared rowwise_exact


def _higher_rank_constant(x, label):
    return x + np.ones((1, 6), np.float32), label  # per row (1, 6): stacked (B, 1, 6), not (B, 6)


def _shape_dependent(x, label):
    return x * float(len(x.shape)), label          # a batch has another rank: another constant


def _random(x, label):
    return x + ek.random.uniform([6], seed=1), label


def _constant_output(x, label):
    return x, ek.constant(1.0)                     # not stacked per row by a batched run


# (function, traces): the batched trace is made only when the row graph passes, and then compared with it
NOT_ROWWISE = [(_reduces, 1), (_reshapes, 1), (_transcendental, 1), (_higher_rank_constant, 1),
               (_shape_dependent, 2), (_constant_output, 1)]


@pytest.mark.parametrize("fn,traced", NOT_ROWWISE, ids=[f.__name__ for f, _ in NOT_ROWWISE])
def test_a_map_that_is_not_rowwise_keeps_the_per_row_path(fn, traced):
    counted, traces = _counted(fn)
    ds = Dataset.from_tensor_slices((FLOATS, LABELS))
    got = _batches(ds.map(counted).batch(16))
    assert len(traces) == traced
    assert all(a.shape[0] == min(16, 50 - 16 * k) for k, b in enumerate(got) for a in b)
    _same_bits(got, _per_row_stacked(ds, fn, 16))


def test_a_stateful_map_is_called_per_row():
    counted, traces = _counted(_random)
    ds = Dataset.from_tensor_slices((np.zeros_like(FLOATS), LABELS)).map(counted).batch(16)
    assert len(traces) == 1
    first = next(iter(ds))[0].numpy()
    assert not np.array_equal(first[0], first[1]), "each row draws its own numbers"


def test_unknown_row_shapes_keep_the_per_row_path():
    def gen():
        for i in range(6):
            yield np.full(3, i, np.float32)
    counted, traces = _counted(lambda x: x * 2.0)
    ds = Dataset.from_generator(gen, output_signature=ek.TensorSpec([None], ek.float32)).map(counted).batch(4)
    assert len(traces) == 1
    assert [b.tolist() for b in ds.as_numpy_iterator()] == [[[2.0 * i] * 3 for i in range(4)],
                                                           [[2.0 * i] * 3 for i in range(4, 6)]]


def test_vectorized_pipeline_gives_the_same_bits_under_function():
    ds = Dataset.from_tensor_slices((FLOATS, LABELS)).map(affine).batch(16)

    def finite_sum(x):
        return ek.reduce_sum(ek.where(ek.math.is_finite(x), x, ek.zeros_like(x)))

    @function
    def staged():
        total = ek.constant(0.0)
        for x, _ in Dataset.from_tensor_slices((FLOATS, LABELS)).map(affine).batch(16):
            total += finite_sum(x)
        return total

    @function
    def from_argument(d):
        total = ek.constant(0.0)
        for x, _ in d:
            total += finite_sum(x)
        return total

    eager_sum = np.float32(0.0)
    for x, _ in ds:
        eager_sum = eager_sum + finite_sum(x).numpy()
    assert staged().numpy().tobytes() == eager_sum.tobytes()
    assert from_argument(ds).numpy().tobytes() == eager_sum.tobytes()


def test_a_batch_staged_first_does_not_keep_a_later_eager_batch_per_row():
    counted, traces = _counted(affine)
    mapped = Dataset.from_tensor_slices((FLOATS, LABELS)).map(counted)

    @function
    def staged():
        total = ek.constant(0, ek.int32)
        for _, label in mapped.batch(16):
            total += ek.reduce_sum(label)
        return total
    assert int(staged()) == int(LABELS.sum())
    assert len(traces) == 1                    # the staged batch is lowered with the graph: no batched trace
    _same_bits(_batches(mapped.batch(16)), _per_row_stacked(Dataset.from_tensor_slices((FLOATS, LABELS)),
                                                            affine, 16))
    assert len(traces) == 2, "the eager batch should still run the map once per batch"
