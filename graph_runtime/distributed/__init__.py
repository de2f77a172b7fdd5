"""Distributed sessions: a graph partitioned across tasks that run as Ray actors.

`Session(target="ray://local" | "ray://auto" | "ray://HOST:PORT",
config=SessionConfig(cluster=ClusterSpec({"ps": 1, "worker": 2})))` runs on a
`RayRuntime` (master.py, registered for "ray://"): the master on the driver places the graph on
the cluster's task devices and partitions it per task (the pipeline's own
stages); each task (worker.py, one Ray actor) imports its partitions from
GraphDefs, compiles them, keeps its variables, and exchanges tensors with its
peers directly (transport.py).  Ray is reached only through ray_backend.py
(the optional `[distributed]` extra); nothing here is imported unless such a
session is made.

Imports `eager`, `graph_runtime` modules, and `ray` (lazily).
"""

from .master import RayRuntime

__all__ = ["RayRuntime"]
