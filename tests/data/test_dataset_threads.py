"""prefetch and map(num_parallel_calls): real overlap, bounded threads, errors at the right next(), cleanup."""
import gc
import threading
import time

import pytest

import eager as ek
import tracing  # noqa: F401 - registers @function with eager.compiler_hook
from eager.data import AUTOTUNE, Dataset


def _data_threads():
    return [t for t in threading.enumerate() if t.name.startswith("eager.data")]


def _wait_for_no_data_threads(timeout=5.0):
    deadline = time.monotonic() + timeout
    while _data_threads() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    return _data_threads()


def _slow_source(n, delay):
    def gen():
        for i in range(n):
            time.sleep(delay)
            yield i
    return Dataset.from_generator(gen, output_signature=ek.TensorSpec([], ek.int32))


def _consume(ds, delay):
    out = []
    for x in ds:
        time.sleep(delay)
        out.append(int(x))
    return out


def test_prefetch_overlaps_producer_and_consumer():
    n, delay = 20, 0.03        # 20: prefetch times its first 3 elements unthreaded; 17 overlapped leave a margin
    t0 = time.perf_counter()
    assert _consume(_slow_source(n, delay), delay) == list(range(n))
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert _consume(_slow_source(n, delay).prefetch(2), delay) == list(range(n))
    overlapped = time.perf_counter() - t0
    # serial is about 2*n*delay, overlapped about (n+4)*delay (0.6x): under 0.8x holds on a loaded machine too
    assert overlapped < 0.8 * serial, (serial, overlapped)
    assert not _wait_for_no_data_threads()


def test_parallel_map_keeps_order_and_bounds_its_threads():
    ds = Dataset.range(50).map(lambda x: x * x, num_parallel_calls=3).prefetch(AUTOTUNE)
    it = iter(ds)
    first = [int(next(it)) for _ in range(5)]
    assert first == [0, 1, 4, 9, 16]
    assert 1 <= len([t for t in _data_threads() if "map" in t.name]) <= 3
    rest = [int(x) for x in it]
    assert first + rest == [i * i for i in range(50)]
    assert not _wait_for_no_data_threads()


def test_dropping_a_half_read_iterator_stops_its_threads():
    ds = Dataset.range(10**6).map(lambda x: x + 1, num_parallel_calls=2).prefetch(4)
    it = iter(ds)
    assert int(next(it)) == 1
    assert _data_threads()
    del it
    assert not _wait_for_no_data_threads()


def _failing_generator():
    yield 1
    yield 2
    raise ValueError("generator broke at element 3")


@pytest.mark.parametrize("prefetch", [0, 2])
def test_errors_surface_at_the_next_that_reaches_them_with_the_users_line(prefetch):
    ds = Dataset.from_generator(_failing_generator, output_signature=ek.TensorSpec([], ek.int32))
    ds = ds.map(lambda x: x * 10, num_parallel_calls=2)
    if prefetch:
        ds = ds.prefetch(prefetch)
    it = iter(ds)
    assert int(next(it)) == 10 and int(next(it)) == 20
    with pytest.raises(ValueError, match="generator broke") as info:
        next(it)
    frames = [(f.name, str(f.path)) for f in info.traceback]
    assert ("_failing_generator", __file__) in frames
    assert not _wait_for_no_data_threads()


def test_map_function_error_names_the_users_line():
    def check(x):
        ek.debugging.Assert(x < 3, ["x too large"])
        return x
    it = iter(Dataset.range(5).map(check, num_parallel_calls=2).prefetch(1))
    assert [int(next(it)) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ek.errors.InvalidArgumentError, match="x too large") as info:
        next(it)
    assert "test_dataset_threads.py" in str(info.value) or any(
        str(f.path) == __file__ for f in info.traceback)
    assert not _wait_for_no_data_threads()


def test_prefetch_of_a_cheap_pipeline_for_a_slow_consumer_starts_no_thread():
    def double(x):
        return x * 2
    out = []
    for x in Dataset.range(40).map(double).prefetch(2):
        time.sleep(0.005)                 # the consumer's work: far more than producing an element
        out.append(int(x))
        assert not _data_threads()        # an overlap could save under a tenth: no thread switches
    assert out == [2 * i for i in range(40)]
    # a producer that waits (here: sleeps) gets its thread after the first elements: the overlap pays
    it = iter(_slow_source(12, 0.01).prefetch(2))
    out = [int(next(it)) for _ in range(6)]
    assert _data_threads()
    assert out + [int(x) for x in it] == list(range(12))
    assert not _wait_for_no_data_threads()
