"""Background work of eager iteration: `prefetch(n)` and `map(num_parallel_calls=n)`.

* `PrefetchIterator(source, n, tuning)`: one producer thread pulls from the
  source iterator into a queue of at most `n` elements, so producing element
  k+1 overlaps with the consumer's work on element k.  Producer and consumer
  share the GIL: a producer running Python cannot overlap a consumer running
  Python, and every hand-over costs thread switches (on a busy 2-core machine
  they doubled a small training epoch).  So a thread is kept only where it
  measurably pays.  The first `PROBE` elements are pulled directly and timed
  (production, and the whole cycle from one element to the next): if
  producing one (the fastest) takes under `NOT_WORTH` of a cycle, or under
  `MIN_WORK` seconds, an overlap could save at most that much, no more than
  the hand-overs cost, and no thread is started.  Otherwise the thread takes
  over and its cycles are timed; after `THREAD_TRIAL` of them it is kept only
  if its cycle is under `KEEP_THREAD` of the direct one, else it hands the
  source back (after the elements already queued) and the pass goes on
  directly.  A thread that wins its first trial narrowly (its cycle over
  `CLEAR_WIN` of the direct one) hands back once anyway: the direct cycles
  are timed again (the first ones may include the consumer's warm-up, which
  favoured the thread), then a second trial decides.  The decision is kept in the dataset's `PrefetchTuning`, so later
  passes start their thread at once or never, without probing again
  (tf.data's AUTOTUNE also keeps what it learned for the iterator's life);
  a pass that runs the thread times it again against the direct cycle and
  hands back when it no longer pays (a first trial won by noise on a busy
  machine is undone; the direct way, the safe one under the GIL, stays).
  A producer that waits (I/O, sleeps, NumPy without the GIL) keeps its thread.
* `ParallelMapIterator(source, fn, n)`: a pool of `n` threads applies `fn`;
  at most `2 * n` calls are in flight; results come out in input order.

Errors (from the source or from `fn`) are stored at their position and raised
by the `next()` that reaches them, with their original traceback (the user's
line in the map function or generator).  No thread outlives its iterator:
dropping the iterator (garbage collection) or exhausting it stops the
producer and the pool and joins their threads (`weakref.finalize`; the threads
never hold a reference to the iterator object itself).  Imports the standard
library only.
"""
from __future__ import annotations

import collections
import os
import queue
import statistics
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

AUTOTUNE = -1
_POLL = 0.05   # seconds a blocked producer waits before checking whether it must stop
_JOIN_TIMEOUT = 10.0
PROBE = 8           # elements pulled directly and timed before the prefetch thread is started, or not
NOT_WORTH = 0.1     # producing under this share of the consumer's time per element: no thread
MIN_WORK = 0.0005   # nor under this many seconds per element (hand-overs cost 0.1-0.5 ms here under load)
THREAD_WARMUP = 2   # threaded cycles not timed (the producer's first laps fill the queue)
THREAD_TRIAL = 6    # threaded cycles timed before the thread is kept or hands the source back
KEEP_THREAD = 0.9   # the thread is kept when its cycle is under this share of the direct one
CLEAR_WIN = 0.6     # ... and without a second trial when under this share


def autotuned(n) -> int:
    """A thread count for `AUTOTUNE` (the machine's cores, at most 8) or the user's `n`."""
    n = int(n)
    if n == AUTOTUNE:
        return max(1, min(os.cpu_count() or 1, 8))
    if n < 1:
        raise ValueError(f"num_parallel_calls must be positive or AUTOTUNE (-1), got {n}")
    return n


def _put(q: queue.Queue, item, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL)
            return True
        except queue.Full:
            continue
    return False


def _produce(source, q: queue.Queue, stop: threading.Event, handback: threading.Event) -> None:
    """Pull `source` into `q` until it ends, fails, `stop` is set, or `handback` asks for the source back
    (then a ("handback", None) marker follows the last element, and the source stays open)."""
    keep_open = False
    try:
        while not handback.is_set():
            try:
                x = next(source)
            except StopIteration:
                _put(q, ("end", None), stop)
                return
            if not _put(q, ("value", x), stop):
                return
        keep_open = _put(q, ("handback", None), stop)
    except BaseException as e:     # delivered to the consumer's next()
        _put(q, ("error", e), stop)
    finally:
        close = getattr(source, "close", None)
        if close is not None and not keep_open:
            close()


def _stop_producer(stop: threading.Event, q: queue.Queue, thread: threading.Thread) -> None:
    stop.set()
    try:
        while True:
            q.get_nowait()
    except queue.Empty:
        pass
    if thread is not threading.current_thread():
        thread.join(_JOIN_TIMEOUT)


class PrefetchTuning:
    """A prefetch dataset's decision, shared by its iterators: None (not measured yet), DIRECT or THREAD, and
    the direct cycle it was measured against (every threaded pass is checked against it again)."""

    DIRECT, THREAD = "direct", "thread"

    def __init__(self):
        self.decision, self.direct_cycle = None, None


def _typical(cycles):
    """The median cycle (a preemption by another process on a busy machine is not the pipeline's)."""
    return statistics.median(cycles) if cycles else 0.0


class PrefetchIterator:
    """Elements of `source`, produced ahead by one background thread when that measurably pays (module doc).

    Phases of a pass: "probe" (direct, timed) -> "trial" (threaded, timed) -> after a narrow win "recheck" (direct
    again, timed: the first direct cycles may still include the consumer's warm-up) -> "trial" -> decided; "direct" and
    "thread" are decided passes, and a "thread" pass is timed like a trial."""

    def __init__(self, source, buffer_size: int, tuning: PrefetchTuning | None = None):
        self._source, self._buffer_size = iter(source), buffer_size
        self._tuning = tuning if tuning is not None else PrefetchTuning()
        self._queue, self._done, self._handback = None, False, None
        self._pulled, self._fastest, self._returned_at = 0, float("inf"), None
        self._cycles, self._confirmed, self._warmup = [], False, 0
        self._phase = "probe" if self._tuning.decision is None else self._tuning.decision
        if self._phase == PrefetchTuning.THREAD:
            self._confirmed = True
            self._begin_trial(THREAD_WARMUP + 1)  # the first cycle may include the consumer's one-time work

    def __iter__(self):
        return self

    def __next__(self):
        phase = self._phase
        if phase == PrefetchTuning.DIRECT and self._queue is None:
            return next(self._source)
        x = self._from_thread() if self._queue is not None else self._pull_direct()
        gap = self._cycle()
        if gap is None or phase in (PrefetchTuning.DIRECT, PrefetchTuning.THREAD):
            return x
        if self._warmup:               # cycles not timed: the consumer's first call, the thread's first laps
            self._warmup -= 1
            return x
        self._cycles.append(gap)
        if phase == "probe" and len(self._cycles) == PROBE - 2:
            self._after_probe()
        elif len(self._cycles) == THREAD_TRIAL:
            self._after_trial() if phase == "trial" else self._after_recheck()
        return x

    def _cycle(self):
        """Seconds since the previous element was returned (the consumer's work on it plus this next())."""
        now = time.perf_counter()
        gap = None if self._returned_at is None else now - self._returned_at
        self._returned_at = now
        if self._pulled == 1 and self._phase == "probe":
            self._warmup = 1           # the consumer's work on the first element may include tracing
        return gap

    def _pull_direct(self):
        t0 = time.perf_counter()
        x = next(self._source)
        self._fastest = min(self._fastest, time.perf_counter() - t0)
        self._pulled += 1
        return x

    def _after_probe(self):
        self._tuning.direct_cycle = _typical(self._cycles)
        if self._fastest < max(MIN_WORK, NOT_WORTH * self._tuning.direct_cycle):
            self._decide(PrefetchTuning.DIRECT)
        else:
            self._begin_trial(THREAD_WARMUP)

    def _after_trial(self):
        share = _typical(self._cycles) / self._tuning.direct_cycle if self._tuning.direct_cycle else 0.0
        if share >= KEEP_THREAD:
            self._decide(PrefetchTuning.DIRECT)
            self._handback.set()
        elif self._confirmed or share < CLEAR_WIN:
            self._decide(PrefetchTuning.THREAD)
        else:                          # a narrow win: measure the direct way again, warm, before keeping it
            # (the elements already queued, and the one in the making, come first: not timed)
            self._phase, self._cycles, self._warmup = "recheck", [], self._buffer_size + 2
            self._handback.set()

    def _after_recheck(self):
        self._tuning.direct_cycle, self._confirmed = _typical(self._cycles), True
        self._begin_trial(THREAD_WARMUP)

    def _begin_trial(self, warmup):
        self._phase, self._cycles, self._warmup = "trial", [], warmup
        self._start()

    def _decide(self, decision):
        self._tuning.decision = self._phase = decision

    def _start(self):
        q: queue.Queue = queue.Queue(maxsize=max(1, self._buffer_size))
        stop, self._handback = threading.Event(), threading.Event()
        thread = threading.Thread(target=_produce, args=(self._source, q, stop, self._handback),
                                  name="eager.data prefetch", daemon=True)
        self._queue, self._thread = q, thread
        self._finalizer = weakref.finalize(self, _stop_producer, stop, q, thread)
        thread.start()

    def _from_thread(self):
        if self._done:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "value":
            return value
        if kind == "handback":     # the source is ours again, pulled directly from here on
            self._thread.join(_JOIN_TIMEOUT)
            self._finalizer.detach()
            self._queue = self._thread = None
            return self._pull_direct()
        self.close()
        if kind == "end":
            raise StopIteration
        raise value

    def close(self) -> None:
        self._done = True
        if self._queue is not None:
            self._finalizer()


def _shutdown_pool(pool: ThreadPoolExecutor, source) -> None:
    pool.shutdown(wait=True, cancel_futures=True)
    close = getattr(source, "close", None)
    if close is not None:
        close()


class ParallelMapIterator:
    """`fn(element)` for the elements of `source`, computed by `n` pool threads, in order."""

    def __init__(self, source, fn, num_threads: int):
        self._source = iter(source)
        self._fn = fn
        self._pool = ThreadPoolExecutor(num_threads, thread_name_prefix="eager.data map")
        self._window = 2 * num_threads
        self._pending: collections.deque = collections.deque()
        self._exhausted = False
        self._finalizer = weakref.finalize(self, _shutdown_pool, self._pool, self._source)

    def __iter__(self):
        return self

    def _fill(self) -> None:
        while not self._exhausted and len(self._pending) < self._window:
            try:
                x = next(self._source)
            except StopIteration:
                self._exhausted = True
                return
            except BaseException as e:    # the source failed: raised when next() reaches this position
                failed: Future = Future()
                failed.set_exception(e)
                self._pending.append(failed)
                self._exhausted = True
                return
            self._pending.append(self._pool.submit(self._fn, x))

    def __next__(self):
        self._fill()
        if not self._pending:
            self.close()
            raise StopIteration
        fut = self._pending.popleft()
        try:
            value = fut.result()
        except BaseException:
            self.close()
            raise
        self._fill()
        return value

    def close(self) -> None:
        self._exhausted = True
        self._pending.clear()
        self._finalizer()
