"""Summary writers: `create_file_writer(logdir)`, the default writer and the default step.

A `SummaryWriter` owns one TensorBoard event file (written with the
`tensorboard` package's `EventFileWriter`: no TensorFlow needed).  The
`tensorboard` package is an optional extra: `create_file_writer` raises
`ImportError` naming `pip install "graphjit[tensorboard]"` when it is missing.

State, as in TensorFlow 2 (thread-local): the default writer (`with
writer.as_default():` or `writer.set_as_default()`) and the default step
(`experimental.set_step`, or `as_default(step=...)`).  Summary ops capture the
default writer when they are created (eagerly: when they run; in a traced
function: at trace time, like TensorFlow's resource capture) and hold it as
an attr: generated code binds attr values by reference, never as text.

Imports the standard library, numpy and `tensorboard` (both lazily) and
`eager.errors`.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time

import numpy as np

from ..errors import InvalidArgumentError

EXTRA_HINT = 'pip install "graphjit[tensorboard]" (or pip install tensorboard)'


class _State(threading.local):
    def __init__(self):
        self.writer = None
        self.step = None


_state = _State()


def _event_modules():
    """(EventFileWriter, event_pb2, summary_pb2), or ImportError saying which extra to install."""
    try:     # tensorboard is an optional extra: imported by the first writer, never by `import eager`
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError(f"eager.summary needs the 'tensorboard' package, which is not installed ({e}); "
                          f"install the extra: {EXTRA_HINT}") from None
    return EventFileWriter, event_pb2, summary_pb2


class SummaryWriter:
    """Writes events into one file under `logdir` (create with `create_file_writer`)."""

    def __init__(self, logdir: str, max_queue: int = 10, flush_millis: int = 120000, filename_suffix: str = ""):
        EventFileWriter, self._event_pb2, self._summary_pb2 = _event_modules()
        self.logdir = os.fspath(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        self._writer = EventFileWriter(self.logdir, max_queue_size=max(1, int(max_queue)),
                                       flush_secs=max(1, int(flush_millis) // 1000),
                                       filename_suffix=filename_suffix)
        self._closed = False
        self._lock = threading.Lock()

    # -------------------------------------------------------------- TF 2 API
    @contextlib.contextmanager
    def as_default(self, step=None):
        """Make this the default writer (and `step` the default step, when given) inside the block."""
        self._check_open()
        prev_writer, prev_step = _state.writer, _state.step
        _state.writer = self
        if step is not None:
            _state.step = step
        try:
            yield self
        finally:
            _state.writer = prev_writer
            if step is not None:
                _state.step = prev_step
            if not self._closed:
                self.flush()

    def set_as_default(self, step=None):
        """Make this the default writer until another is set (TensorFlow's `set_as_default`)."""
        self._check_open()
        _state.writer = self
        if step is not None:
            _state.step = step

    def flush(self):
        if not self._closed:
            self._writer.flush()

    def close(self):
        """Flush and close the file; later writes through this writer raise RuntimeError."""
        if not self._closed:
            self._writer.close()
            self._closed = True
        if _state.writer is self:
            _state.writer = None

    def __repr__(self):
        return f"<SummaryWriter logdir={self.logdir!r}{' closed' if self._closed else ''}>"

    # -------------------------------------------------------------- events
    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"the summary writer for logdir {self.logdir!r} is closed")

    def _add(self, step: int, **fields):
        self._check_open()
        event = self._event_pb2.Event(wall_time=time.time(), step=int(step), **fields)
        with self._lock:
            self._writer.add_event(event)

    def write_summary(self, step: int, value) -> None:
        """Append one `Summary.Value` at `step`."""
        self._add(step, summary=self._summary_pb2.Summary(value=[value]))

    def write_scalar(self, tag: str, step: int, value: float) -> None:
        self.write_summary(step, self._summary_pb2.Summary.Value(tag=tag, simple_value=value))

    def write_histogram(self, tag: str, step: int, data, buckets: int) -> None:
        """A histogram of `data` (float64 array) in `buckets` equal-width buckets (TensorBoard's HistogramProto).

        NaN or inf in `data` raise InvalidArgumentError naming the tag (TensorFlow's HistogramSummary does).
        """
        flat = data.reshape(-1)
        if not np.all(np.isfinite(flat)):
            raise InvalidArgumentError(f"Nan or Inf in summary histogram for: {tag}", op_name="WriteHistogramSummary")
        if flat.size:
            lo, hi = float(flat.min()), float(flat.max())
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            counts, edges = np.histogram(flat, bins=buckets, range=(lo, hi))
            limits, counts = edges[1:].tolist(), counts.astype(np.float64).tolist()
        else:
            limits, counts = [], []
        histo = self._summary_pb2.HistogramProto(
            min=float(flat.min()) if flat.size else 0.0, max=float(flat.max()) if flat.size else 0.0,
            num=float(flat.size), sum=float(flat.sum()), sum_squares=float(np.dot(flat, flat)),
            bucket_limit=limits, bucket=counts)
        self.write_summary(step, self._summary_pb2.Summary.Value(tag=tag, histo=histo))

    def write_graph(self, graph_def_bytes: bytes, step: int = 0) -> None:
        self._add(step, graph_def=graph_def_bytes)


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None):
    """A `SummaryWriter` for `logdir` (created if needed). ImportError when `tensorboard` is missing."""
    if logdir is None:
        raise ValueError("create_file_writer: logdir must be a directory path, got None")
    return SummaryWriter(logdir, 10 if max_queue is None else max_queue,
                         120000 if flush_millis is None else flush_millis, filename_suffix or "")


def default_writer():
    """The writer summary ops write to now, or None."""
    return _state.writer


def set_step(step) -> None:
    """Set the default step for summaries (an int, a scalar int tensor or a Variable; None clears it)."""
    _state.step = step


def get_step():
    """The default step, or None."""
    return _state.step
