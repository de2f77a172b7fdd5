"""prefetch and map(num_parallel_calls): real overlap, bounded threads, errors at the right next(), cleanup."""
import gc
import threading
import time

import pytest

import eager as ek
import tracing  # noqa: F401 - registers @function with eager.compiler_hook
from eager.data import AUTOTUNE, Dataset, threads


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
    n, delay = 30, 0.02        # 30: prefetch times its first 8 elements unthreaded; 22 overlapped leave a margin
    t0 = time.perf_counter()
    assert _consume(_slow_source(n, delay), delay) == list(range(n))
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert _consume(_slow_source(n, delay).prefetch(2), delay) == list(range(n))
    overlapped = time.perf_counter() - t0
    # serial is about 2*n*delay, overlapped about (n+9)*delay (0.65x): under 0.8x holds on a loaded machine too
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
    it = iter(_slow_source(14, 0.01).prefetch(2))
    out = [int(next(it)) for _ in range(threads.PROBE + 2)]
    assert _data_threads()
    assert out + [int(x) for x in it] == list(range(14))
    assert not _wait_for_no_data_threads()


def test_prefetch_hands_the_source_back_when_its_thread_does_not_pay(monkeypatch):
    # whether a thread pays is measured (wall time per element, with and without it); here no thread may
    # pass the trial, so after it the thread returns the source, the elements already queued come first,
    # the rest of the pass and the next passes pull the source directly
    monkeypatch.setattr(threads, "KEEP_THREAD", 0.0)
    ds = _slow_source(24, 0.002).prefetch(2)
    out = []
    for k, x in enumerate(ds):
        out.append(int(x))
        if k == threads.PROBE:
            assert _data_threads(), "the trial should have started the thread"
        if k == 20:
            assert not _wait_for_no_data_threads(), "the thread was kept though it did not pay"
    assert out == list(range(24))
    out = []
    for x in ds:
        assert not _data_threads()
        out.append(int(x))
    assert out == list(range(24))


def test_prefetch_keeps_a_thread_that_pays_for_the_later_passes():
    assert not _wait_for_no_data_threads()
    ds = _slow_source(40, 0.01).prefetch(2)       # 40: the first pass probes, tries, rechecks, tries again
    assert _consume(ds, 0.01) == list(range(40))
    it = iter(ds)
    assert int(next(it)) == 0
    assert _data_threads(), "the second pass should start its thread at once (the first one measured it)"
    assert [int(x) for x in it] == list(range(1, 40))
    assert not _wait_for_no_data_threads()


def test_a_handed_back_source_still_raises_its_errors_at_the_right_next(monkeypatch):
    monkeypatch.setattr(threads, "KEEP_THREAD", 0.0)

    def gen():
        for i in range(30):
            time.sleep(0.002)
            yield i
        raise ValueError("generator broke at the end")
    ds = Dataset.from_generator(gen, output_signature=ek.TensorSpec([], ek.int32)).prefetch(2)
    out = []
    with pytest.raises(ValueError, match="generator broke at the end") as info:
        for x in ds:
            out.append(int(x))
    assert out == list(range(30))
    assert ("gen", __file__) in [(f.name, str(f.path)) for f in info.traceback]
    assert not _wait_for_no_data_threads()
