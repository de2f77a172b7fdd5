"""Cross-task `_Send`/`_Recv`: a task's mailbox, and the per-step rendezvous its partitions run with.

Every task (a Ray actor, worker.py) has one `Mailbox`, keyed by (step id,
rendezvous key).  While a task runs its partition of step s, the thread's
current rendezvous (rendezvous.set_current) is a `StepRendezvous(s)`:

- `send(key, value)`: the key names the destination device
  (`"tensor;src;dst"`, partition.py); a value for a device of this task goes
  into the local mailbox, any other into an outbox per destination task;
- `flush()` delivers each destination's outbox straight to that task's actor
  in one one-way actor call (`deliver(step, [(key, value), ...])`: the
  driver is not in the data path).  The task flushes before every `_Recv`
  that has to wait and at the end of its partition, so nothing it sent is
  held while it waits (no deadlock), and the sends made between two waits
  travel together: an actor call costs far more than a small op (the ps of
  a data-parallel step sends every parameter to every worker in one call
  per worker instead of one per parameter);
- `recv(key)`: waits for (s, key) in the local mailbox until the step's
  deadline (`DeadlineExceededError` naming the key and the sender) or until
  the step is aborted (`AbortedError`, raised when the driver calls
  `abort(s, why)` because another task failed or died).  The abort also
  sets the step's `signal(s)` (deadline.StepAbort), which the task's
  partitions run under: their While loops end at the next iteration
  instead of running on for an answer nobody will take.

Values that arrive for a step before the task starts running it wait in the
mailbox; `finish(s)` drops what a step left behind, and late arrivals for a
finished step are dropped too (bounded memory).

Imports `eager.errors` and `graph_runtime.deadline`.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Optional

from eager.errors import AbortedError, DeadlineExceededError

from ..deadline import StepAbort

_FINISHED_KEPT = 4096       # ids of finished steps remembered, to drop late arrivals


class Mailbox:
    """(step, key) -> value, with per-step abort reasons; thread-safe."""

    def __init__(self):
        self._values: dict = {}
        self._aborted: dict = {}
        self._signals: dict = {}            # step -> deadline.StepAbort of a running step
        self._finished: OrderedDict = OrderedDict()
        self._cond = threading.Condition()

    def put(self, step: int, key: str, value: Any) -> None:
        with self._cond:
            if step in self._finished:
                return                          # the step ended (aborted): nobody will receive it
            if (step, key) in self._values:
                raise RuntimeError(f"rendezvous: key {key!r} was sent twice in step {step}")
            self._values[(step, key)] = value
            self._cond.notify_all()

    def get(self, step: int, key: str, deadline: float, sender: str) -> Any:
        with self._cond:
            while (step, key) not in self._values:
                why = self._aborted.get(step)
                if why is not None:
                    raise AbortedError(f"step {step} was aborted while waiting for {key!r} from {sender}: {why}",
                                       op_name="_Recv")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DeadlineExceededError(
                        f"step {step}: timed out waiting for {key!r} from {sender} (RunOptions.timeout_in_ms / "
                        f"SessionConfig.operation_timeout_in_ms)", op_name="_Recv")
                self._cond.wait(left)
            return self._values.pop((step, key))

    def has(self, step: int, key: str) -> bool:
        with self._cond:
            return (step, key) in self._values

    def put_many(self, step: int, items) -> None:
        for key, value in items:
            self.put(step, key, value)

    def abort(self, step: int, why: str) -> None:
        with self._cond:
            self._aborted.setdefault(step, why)
            signal = self._signals.get(step)
            if signal is not None:
                signal.set(self._aborted[step])
            self._cond.notify_all()

    def signal(self, step: int) -> StepAbort:
        """The abort signal a partition of `step` runs under (already set if the step was aborted before it
        started here)."""
        with self._cond:
            signal = self._signals.get(step)
            if signal is None:
                signal = self._signals[step] = StepAbort()
                why = self._aborted.get(step)
                if why is not None:
                    signal.set(why)
            return signal

    def aborted(self, step: int) -> Optional[str]:
        with self._cond:
            return self._aborted.get(step)

    def finish(self, step: int) -> None:
        with self._cond:
            for k in [k for k in self._values if k[0] == step]:
                del self._values[k]
            self._aborted.pop(step, None)
            self._signals.pop(step, None)
            self._finished[step] = True
            while len(self._finished) > _FINISHED_KEPT:
                self._finished.popitem(last=False)


def destination_task(key: str) -> str:
    """The task prefix (`/job:J/replica:R/task:T`) of a rendezvous key's destination device."""
    dst = key.rsplit(";", 1)[-1]
    return dst.rsplit("/device:", 1)[0]


def source_task(key: str) -> str:
    parts = key.split(";")
    return parts[-2].rsplit("/device:", 1)[0] if len(parts) >= 3 else "another task"


class StepRendezvous:
    """The rendezvous of one step on one task (module docstring); made by the task for each run."""

    __slots__ = ("step", "task", "mailbox", "deliver", "deadline", "outbox")

    def __init__(self, step: int, task: str, mailbox: Mailbox, deliver: Callable, deadline: float):
        self.step = step
        self.task = task
        self.mailbox = mailbox
        self.deliver = deliver          # deliver(task name, step, [(key, value), ...]): to another task
        self.deadline = deadline
        self.outbox: dict = {}

    def send(self, key: str, value: Any) -> None:
        dst = destination_task(key)
        if dst == self.task:
            self.mailbox.put(self.step, key, value)
        else:
            self.outbox.setdefault(dst, []).append((key, value))

    def flush(self) -> None:
        if self.outbox:
            out, self.outbox = self.outbox, {}
            for dst, items in out.items():
                self.deliver(dst, self.step, items)

    def recv(self, key: str) -> Any:
        if self.outbox and not self.mailbox.has(self.step, key):
            self.flush()
        return self.mailbox.get(self.step, key, self.deadline, source_task(key))
