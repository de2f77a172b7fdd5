"""`ClusterSpec`: the jobs and tasks of a distributed Session, and the devices they make.

A cluster is a dict of job name -> task count (`{"ps": 1, "worker": 2}`) or
job name -> list of addresses (`{"worker": ["10.0.0.5:2222", ...]}`, one task
per address; with Ray the host pins the task's actor to that node and the
port is not used).  Every task has `SessionConfig.device_count` CPU devices
(one by default), `/job:NAME/replica:0/task:T/device:CPU:i`
(placement.local_devices); `Task.device` is its first.

Device order (what placement's cost model breaks ties with, so the device an
unconstrained op goes to): the "worker" job first (its task 0 plays TF's
"chief" role for ops nobody placed), then the other jobs in the order given.

Imports nothing from the project.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

_JOB_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Task:
    """One task of a cluster: its job, index, address (None when only a count was given) and device."""

    job: str
    index: int
    address: Optional[str] = None

    @property
    def name(self) -> str:
        """`/job:NAME/replica:0/task:T`: the prefix of the task's device names."""
        return f"/job:{self.job}/replica:0/task:{self.index}"

    @property
    def device(self) -> str:
        return f"{self.name}/device:CPU:0"

    @property
    def host(self) -> Optional[str]:
        return None if self.address is None else self.address.rpartition(":")[0] or self.address


class ClusterSpec:
    """Jobs and their tasks (see the module docstring); `ClusterSpec({"ps": 1, "worker": 2})`."""

    def __init__(self, jobs):
        if isinstance(jobs, ClusterSpec):
            jobs = jobs.as_dict()
        if not isinstance(jobs, dict) or not jobs:
            raise ValueError(f"ClusterSpec: expected a non-empty dict of job name -> task count or list of "
                             f"'host:port' addresses, e.g. {{'ps': 1, 'worker': 2}}, got {jobs!r}")
        spec: dict = {}
        for job, tasks in jobs.items():
            if not isinstance(job, str) or not _JOB_NAME.match(job):
                raise ValueError(f"ClusterSpec: job names are identifiers such as 'worker', got {job!r}")
            if type(tasks) is int:
                if tasks < 1:
                    raise ValueError(f"ClusterSpec: job {job!r} needs at least one task, got {tasks}")
                spec[job] = tasks
            elif isinstance(tasks, (list, tuple)) and tasks and all(isinstance(a, str) and a for a in tasks):
                spec[job] = tuple(tasks)
            else:
                raise ValueError(f"ClusterSpec: job {job!r} must map to a task count (int >= 1) or a non-empty "
                                 f"list of 'host:port' strings, got {tasks!r}")
        self._spec = spec

    def as_dict(self) -> dict:
        return {j: (list(t) if isinstance(t, tuple) else t) for j, t in self._spec.items()}

    @property
    def jobs(self) -> list:
        return list(self._spec)

    def num_tasks(self, job: str) -> int:
        t = self._spec[job]
        return t if type(t) is int else len(t)

    def tasks(self) -> list:
        """Every task, in device order (module docstring)."""
        jobs = sorted(self._spec, key=lambda j: j != "worker")      # stable: "worker" first, then as given
        out = []
        for job in jobs:
            t = self._spec[job]
            addresses = [None] * t if type(t) is int else list(t)
            out.extend(Task(job, i, a) for i, a in enumerate(addresses))
        return out

    def task_of_device(self, device: str) -> Optional[Task]:
        """The task whose device `device` (a full device name) is, or None."""
        for task in self.tasks():
            if device.startswith(task.name + "/"):
                return task
        return None

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    def __hash__(self):
        return hash(tuple(self._spec.items()))

    def __repr__(self):
        return f"ClusterSpec({self.as_dict()!r})"
