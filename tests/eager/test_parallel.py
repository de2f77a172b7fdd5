"""eager.parallel: batch-split kernels on the core pool give the serial bits; the pool's limits hold."""
import threading
import time

import numpy as np
import pytest

import eager as ek
from eager import parallel
from eager.dispatch import execute
from eager.ops import nn_conv, nn_pool

RNG = np.random.default_rng(7)


@pytest.fixture
def split_everything(monkeypatch):
    """Two threads, and every kernel big enough to split."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    old = parallel.set_threads(2)
    yield
    parallel.set_threads(old)


def _serial(fn):
    old = parallel.set_threads(1)
    try:
        return fn()
    finally:
        parallel.set_threads(old)


def _covered(ranges, n):
    return sorted(ranges) == [(i, i + 1) for i in range(n)] or \
        [x for lo, hi in sorted(ranges) for x in range(lo, hi)] == list(range(n))


def _both_threads_meet():
    """A hook for a body's first chunk on each thread: it waits until the other thread has one too."""
    barrier, met = threading.Barrier(2, timeout=10), set()

    def meet():
        name = threading.current_thread().name
        if name not in met:
            met.add(name)
            barrier.wait()
    return meet


def test_for_range_covers_the_range_once_on_two_threads(split_everything):
    seen, names = [], set()
    meet = _both_threads_meet()

    def body(lo, hi):
        meet()
        seen.append((lo, hi))
        names.add(threading.current_thread().name)
    parallel.for_range(body, 7, 1 << 30)
    assert _covered(seen, 7) and len(seen) == parallel.chunks(7, 1 << 30) == 7
    assert len(names) == 2 and any(n.startswith("graphjit-kernel") for n in names)


def test_small_work_runs_on_the_caller():
    seen = []
    parallel.for_range(lambda lo, hi: seen.append((lo, hi, threading.current_thread().name)), 64, 1024)
    assert seen == [(0, 64, threading.current_thread().name)]


def test_chunks_are_bounded_and_follow_the_traffic(split_everything):
    assert parallel.chunks(1000, 1 << 40) == parallel.MAX_CHUNKS_PER_THREAD * 2
    assert parallel.chunks(1000, 5 * parallel.CHUNK_BYTES) == 5
    assert parallel.chunks(3, 1 << 40) == 3


def test_a_chunk_on_a_worker_never_splits_again(split_everything):
    inner = []
    meet = _both_threads_meet()

    def body(lo, hi):
        meet()
        # keyed by the thread that issued the inner call: a worker that finished its own chunks may help with
        # the caller's inner chunks, which are split (that is allowed, and happens under load)
        issuer = threading.current_thread().name
        parallel.for_range(lambda a, b: inner.append((issuer, a, b)), 8, 1 << 30)
    parallel.for_range(body, 4, 1 << 30)
    on_workers = [x for x in inner if x[0].startswith("graphjit-kernel")]
    by_caller = [x for x in inner if not x[0].startswith("graphjit-kernel")]
    assert on_workers and all(x[1:] == (0, 8) for x in on_workers)     # whole, on the worker
    assert by_caller and all(x[1:] != (0, 8) for x in by_caller)       # the caller's calls are chunked


def test_an_error_in_a_chunk_reaches_the_caller_and_stops_the_others(split_everything):
    started = []

    def body(lo, hi):
        started.append(lo)
        time.sleep(0.002)
        if lo:
            raise ValueError(f"chunk at {lo}")
    k = parallel.chunks(16, 1 << 30)
    with pytest.raises(ValueError, match="chunk at [1-9]"):
        parallel.for_range(body, 16, 1 << 30)
    assert k > 3 and len(started) < k


def test_a_busy_pool_makes_kernels_run_on_the_caller(split_everything):
    parallel.for_range(lambda lo, hi: None, 2, 1 << 30)       # starts the pool
    _, idle = parallel._pool(1)
    assert idle.acquire(blocking=False)                        # another caller holds the one worker
    try:
        seen = []
        parallel.for_range(lambda lo, hi: seen.append((lo, hi, threading.current_thread().name)), 8, 1 << 30)
        assert _covered([(lo, hi) for lo, hi, _ in seen], 8)
        assert {name for _, _, name in seen} == {threading.current_thread().name}
    finally:
        idle.release()


def test_convolution_and_pooling_kernels_split_only_when_asked(monkeypatch):
    monkeypatch.delenv("GRAPHJIT_KERNEL_THREADS", raising=False)
    old = parallel.set_threads(None)
    try:
        assert parallel.threads() == 1 and parallel.chunks(64, 1 << 30) == 1
        seen = []
        parallel.for_range(lambda lo, hi: seen.append((lo, hi)), 64, 1 << 30)
        assert seen == [(0, 64)]
        assert parallel.chunks(64, 1 << 30, threads_=2) > 1        # the fused kernels pass their own count
    finally:
        parallel.set_threads(old)


def test_thread_count_settings_are_checked(monkeypatch):
    with pytest.raises(ValueError, match="int >= 1"):
        parallel.set_threads(0)
    monkeypatch.setenv("GRAPHJIT_KERNEL_THREADS", "two")
    with pytest.raises(ValueError, match="GRAPHJIT_KERNEL_THREADS"):
        parallel.set_threads(None)
    monkeypatch.setenv("GRAPHJIT_KERNEL_THREADS", "3")
    old = parallel.set_threads(None)
    try:
        assert parallel.threads() == 3
    finally:
        parallel.set_threads(old)


CONV_ATTRS = {"strides": (1, 1), "padding": "SAME", "dilations": (1, 1)}


@pytest.mark.parametrize("c", [1, 3])
def test_convolutions_split_over_the_batch_give_the_serial_bits(split_everything, c):
    x = RNG.standard_normal((5, 9, 9, c)).astype(np.float32)
    f = RNG.standard_normal((3, 3, c, 4)).astype(np.float32)
    dy = RNG.standard_normal((5, 9, 9, 4)).astype(np.float32)
    xs, fs = np.array(x.shape, np.int32), np.array(f.shape, np.int32)
    for opdef, args in ((nn_conv.CONV2D, (x, f)), (nn_conv.CONV2D_INPUT, (xs, f, dy)),
                        (nn_conv.CONV2D_FILTER, (x, fs, dy))):
        def run():
            return execute(opdef, tuple(ek.constant(a) for a in args), CONV_ATTRS).numpy()
        assert np.array_equal(run(), _serial(run)), opdef.name


def test_max_pool_and_its_gradient_split_over_the_batch_give_the_serial_bits(split_everything):
    x = RNG.standard_normal((5, 8, 9, 3)).astype(np.float32)
    x[2, :2, :2, 1] = 1.5                                     # a tie: the first maximum takes the gradient
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    y = execute(nn_pool.MAX_POOL, (ek.constant(x),), attrs)
    dy = RNG.standard_normal(y.shape).astype(np.float32)

    def grad():
        return execute(nn_pool.MAX_POOL_GRAD, (ek.constant(x), y, ek.constant(dy)), attrs).numpy()
    assert np.array_equal(y.numpy(), _serial(lambda: execute(nn_pool.MAX_POOL, (ek.constant(x),), attrs).numpy()))
    got = grad()
    assert np.array_equal(got, _serial(grad))
    assert got[2, 0, 0, 1] == dy[2, 0, 0, 1] and got[2, 0, 1, 1] == got[2, 1, 0, 1] == got[2, 1, 1, 1] == 0


def test_a_nan_in_one_part_sends_the_whole_max_pool_gradient_down_the_argmax_path(split_everything):
    x = RNG.standard_normal((4, 4, 4, 2)).astype(np.float32)
    x[3, 0, 1, 0] = np.nan                                    # only the second part sees it
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    y = execute(nn_pool.MAX_POOL, (ek.constant(x),), attrs)
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    assert nn_pool._route_to_first_max(x, dy, nn_pool._non_overlapping(x, attrs)) is None
    got = execute(nn_pool.MAX_POOL_GRAD, (ek.constant(x), y, ek.constant(dy)), attrs).numpy()
    assert np.array_equal(got, _serial(lambda: execute(nn_pool.MAX_POOL_GRAD, (ek.constant(x), y, ek.constant(dy)),
                                                       attrs).numpy()))
    assert np.count_nonzero(got) == dy.size
