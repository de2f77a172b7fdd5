"""Background work of eager iteration: `prefetch(n)` and `map(num_parallel_calls=n)`.

* `PrefetchIterator(source, n)`: one producer thread pulls from the source
  iterator into a queue of at most `n` elements, so producing element k+1
  overlaps with the consumer's work on element k.  Producer and consumer
  share the GIL, so every hand-over costs thread switches (on a busy 2-core
  machine they doubled a small training epoch).  So the first `PROBE`
  elements are pulled directly and timed: if producing one (the fastest)
  takes under `NOT_WORTH` of the consumer's time per element, or under
  `MIN_WORK` seconds, an overlap could save at most that much per element,
  no more than the hand-overs cost, and no thread is started; otherwise the
  thread takes over the source (tf.data's AUTOTUNE sizes its buffers for the
  same reason).  A producer that waits (I/O, sleeps, NumPy without the GIL)
  gets its thread.
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
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

AUTOTUNE = -1
_POLL = 0.05   # seconds a blocked producer waits before checking whether it must stop
_JOIN_TIMEOUT = 10.0
PROBE = 3           # elements pulled directly and timed before the prefetch thread is started, or not
NOT_WORTH = 0.1     # producing under this share of the consumer's time per element: no thread
MIN_WORK = 0.0005   # nor under this many seconds per element (hand-overs cost 0.1-0.5 ms here under load)


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


def _produce(source, q: queue.Queue, stop: threading.Event) -> None:
    try:
        for x in source:
            if not _put(q, ("value", x), stop):
                return
        _put(q, ("end", None), stop)
    except BaseException as e:     # delivered to the consumer's next()
        _put(q, ("error", e), stop)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
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


class PrefetchIterator:
    """Elements of `source`, produced ahead by one background thread (see module doc)."""

    def __init__(self, source, buffer_size: int):
        self._source, self._buffer_size = iter(source), buffer_size
        self._queue, self._done, self._direct = None, False, False
        self._pulled, self._fastest, self._consumed, self._gaps, self._returned_at = 0, float("inf"), 0.0, 0, None

    def __iter__(self):
        return self

    def __next__(self):
        if self._queue is not None:
            return self._from_thread()
        if self._direct:
            return next(self._source)
        if self._pulled == PROBE:
            if self._fastest < max(MIN_WORK, NOT_WORTH * self._consumed / max(1, self._gaps)):
                self._direct = True
                return next(self._source)
            self._start()
            return self._from_thread()
        return self._probe()

    def _probe(self):
        """Pull one element directly, timing its production and the consumer's work on the one before."""
        now = time.perf_counter()
        if self._returned_at is not None:
            self._consumed += now - self._returned_at
            self._gaps += 1
        x = next(self._source)
        self._fastest = min(self._fastest, time.perf_counter() - now)
        self._pulled += 1
        # the consumer's work on the first element may include one-time work (tracing): not counted
        self._returned_at = time.perf_counter() if self._pulled > 1 else None
        return x

    def _start(self):
        q: queue.Queue = queue.Queue(maxsize=max(1, self._buffer_size))
        stop = threading.Event()
        thread = threading.Thread(target=_produce, args=(self._source, q, stop), name="eager.data prefetch",
                                  daemon=True)
        self._queue, self._source = q, None
        self._finalizer = weakref.finalize(self, _stop_producer, stop, q, thread)
        thread.start()

    def _from_thread(self):
        if self._done:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "value":
            return value
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
