"""Run configuration records: `SessionConfig`, `RunOptions`, `OpStats`, `RunMetadata`; the default session.

Plain data shared by the pipeline (pipeline.py), the executors (compiler.py,
executors.py) and `Session`, so none of them imports another for its records.
The default-session stack (`get_default_session`, pushed by `Session`) is
here too, so `Tensor.eval`/`Operation.run` (operation.py) need not import
session.py.
`SessionConfig` declares every field a stage reads (`optimize`,
`disabled_passes`, `inter_op_parallelism_threads`, `device_count`,
`allow_soft_placement`, `log_device_placement`, ...); nothing reads a config
with `getattr` defaults.  Distributed sessions (graph_runtime/distributed) read
`cluster` (a `ClusterSpec`), `task_recovery` (what the next `run` does after a
task died: "raise", "reinitialize" or "restore") and `operation_timeout_in_ms`
(the step deadline when `RunOptions.timeout_in_ms` is 0).

Imports `cluster_spec` and `device_types` only (leaf modules).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Optional

from .cluster_spec import ClusterSpec
from .device_types import device_types


SCHEDULES = ("creation", "alap", "memory")
TRANSFER_COMPRESSIONS = (None, "float16", "truncate16")
TASK_RECOVERIES = ("raise", "reinitialize", "restore")
DEFAULT_SCHEDULE = "alap"    # bench_session: same run time, half the peak on the late-value graph


@dataclass(frozen=True)
class SessionConfig:
    """Session options: graph optimization on/off, passes to skip or add, per-pass options, inter-op
    threads, the op schedule ("creation" | "alap" | "memory", see scheduling.py)."""

    optimize: bool = True
    disabled_passes: tuple = ()
    inter_op_parallelism_threads: int = 1
    schedule: str = DEFAULT_SCHEDULE
    enabled_passes: tuple = ()
    pass_options: Optional[dict] = field(default=None, hash=False)    # e.g. {"signed_zeros": False}
    # devices (placement.py): {"CPU": n} virtual CPUs; None (bodies, traced functions): not placed
    device_count: Optional[dict] = field(default=None, hash=False)
    allow_soft_placement: bool = False
    log_device_placement: bool = False
    transfer_compression: Optional[str] = None    # None | "float16" | "truncate16" (float32 cross-device edges)
    # distributed sessions (Session(target="ray://...")): the jobs and tasks, what to do after a task died,
    # the step deadline used when RunOptions.timeout_in_ms is 0 (finite: no step waits forever)
    cluster: Optional[ClusterSpec] = field(default=None, hash=False)
    task_recovery: str = "raise"
    operation_timeout_in_ms: int = 60_000

    def __post_init__(self):
        object.__setattr__(self, "disabled_passes", tuple(self.disabled_passes))
        object.__setattr__(self, "enabled_passes", tuple(self.enabled_passes))
        if self.schedule not in SCHEDULES:
            raise ValueError(f"SessionConfig: schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.pass_options is not None and not isinstance(self.pass_options, dict):
            raise TypeError(f"SessionConfig: pass_options must be a dict of per-pass options, got "
                            f"{type(self.pass_options).__name__}")
        if self.transfer_compression not in TRANSFER_COMPRESSIONS:
            raise ValueError(f"SessionConfig: transfer_compression must be one of {TRANSFER_COMPRESSIONS}, got "
                             f"{self.transfer_compression!r}")
        dc = self.device_count
        if dc is not None:
            if not isinstance(dc, dict) or any(not isinstance(k, str) or type(v) is not int or v < 0
                                               for k, v in dc.items()):
                raise ValueError(f"SessionConfig: device_count must be a dict of device type -> count >= 0, "
                                 f"e.g. {{'CPU': 2}}, got {dc!r}")
            dc = {k.upper(): v for k, v in dc.items()}
            unknown = {k for k, v in dc.items() if v} - set(device_types())
            if unknown:
                raise ValueError(f"SessionConfig: only virtual {' and '.join(map(repr, device_types()))} devices "
                                 f"exist on this machine, got device_count={self.device_count!r} (another type "
                                 f"exists once registered: graph_runtime.device_types.register_device_type)")
            if dc.get("CPU", 1) < 1:
                raise ValueError(f"SessionConfig: device_count needs at least one CPU, got {self.device_count!r}")
            object.__setattr__(self, "device_count", dc)
        if self.cluster is not None and not isinstance(self.cluster, ClusterSpec):
            object.__setattr__(self, "cluster", ClusterSpec(self.cluster))
        if self.task_recovery not in TASK_RECOVERIES:
            raise ValueError(f"SessionConfig: task_recovery must be one of {TASK_RECOVERIES}, got "
                             f"{self.task_recovery!r}")
        t = self.operation_timeout_in_ms
        if type(t) is not int or t <= 0:
            raise ValueError(f"SessionConfig: operation_timeout_in_ms must be a positive int (milliseconds), "
                             f"got {t!r}")
        n = self.inter_op_parallelism_threads
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"SessionConfig: inter_op_parallelism_threads must be an int >= 1, got {n!r}")


class RunOptions:
    """Per-call options; `trace_level=RunOptions.FULL_TRACE` records per-op timings in RunMetadata."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3

    def __init__(self, trace_level: int = 0, timeout_in_ms: int = 0, output_partition_graphs: bool = False):
        self.trace_level = trace_level
        self.timeout_in_ms = timeout_in_ms
        self.output_partition_graphs = output_partition_graphs  # fill RunMetadata.partition_graphs


@dataclass
class OpStats:
    """Timing of one op in a traced run (microseconds from the start of the run)."""

    name: str
    type: str
    start_us: float
    duration_us: float
    output_shapes: tuple = ()
    device: str = ""         # the device the op ran on (full device string; the Timeline's row)
    bytes_sent: int = 0      # a `_Send`: bytes it put in the rendezvous (after transfer compression)
    bytes_saved: int = 0     # a `_Send`: bytes transfer compression saved (SessionConfig.transfer_compression)
    transfer_key: str = ""   # a `_Send`/`_Recv`: its rendezvous key (the Timeline draws send -> recv flows)


@dataclass
class RunMetadata:
    """Filled by a traced `Session.run`: `step_stats` (one `OpStats` per op run) and `total_us`."""

    step_stats: list = field(default_factory=list)
    total_us: float = 0.0
    partition_graphs: list = field(default_factory=list)   # GraphDef dicts, one per device (RunOptions)

    def summary(self, top: int = 10) -> str:
        rows = sorted(self.step_stats, key=lambda s: -s.duration_us)[:top]
        lines = [f"{len(self.step_stats)} ops, {self.total_us:.1f} us total"]
        lines += [f"  {s.duration_us:10.1f} us  {s.type:<20} {s.name}" for s in rows]
        return "\n".join(lines)


class _SessionStack(threading.local):
    def __init__(self):
        self.stack: list = []


_sessions = _SessionStack()


def get_default_session() -> Optional[object]:
    st = _sessions.stack
    return st[-1] if st else None
