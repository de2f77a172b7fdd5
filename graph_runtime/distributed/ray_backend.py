"""Ray as the substrate of a distributed session: connect to a target, start and stop task actors.

Targets:
- `ray://local`: an embedded Ray instance on this machine, started on first
  use and shared by every later session of the process (start-up costs a few
  seconds; `Session.close` releases the session's actors, not Ray);
- `ray://auto`: the Ray cluster this machine belongs to (`ray.init("auto")`);
- `ray://HOST:PORT`: a remote cluster through the Ray Client
  (`ray.init("ray://HOST:PORT")`).

Each task is one actor running `worker.TaskServer`, threaded
(`max_concurrency`) so that `deliver`/`abort` calls reach it while a step
waits in a `_Recv`.  Actors ask for no CPU (`num_cpus=0`): the tasks of a
small cluster all fit on a laptop.  A task given with an address
(`ClusterSpec({"worker": ["10.0.0.5:2222"]})`) is pinned to the Ray node with
that IP (Ray's `node:IP` resource).

Imports `ray` (only here and only when a distributed session is made: the
`[distributed]` extra) and sibling modules.
"""
from __future__ import annotations

import os

from eager.errors import UnavailableError

from .worker import TaskServer

TARGET_PREFIX = "ray://"
_ACTOR_CONCURRENCY = 32


def ray_module():
    try:
        import ray
    except ImportError:
        raise ImportError("Session(target='ray://...') needs Ray: pip install 'graphjit[distributed]' "
                          "(or pip install ray)") from None
    return ray


def connect(target: str):
    """Initialize Ray for `target` (module docstring) unless it is already; returns the `ray` module."""
    ray = ray_module()
    where = target[len(TARGET_PREFIX):]
    if ray.is_initialized():
        return ray
    if where == "local":
        # the workers import graphjit as this process does (a source checkout on PYTHONPATH included)
        path = os.pathsep.join(p for p in [os.environ.get("PYTHONPATH", ""), _project_root()] if p)
        ray.init(num_cpus=max(2, os.cpu_count() or 2), include_dashboard=False, log_to_driver=False,
                 configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    elif where == "auto":
        ray.init(address="auto", log_to_driver=False)
    else:
        ray.init(address=target, log_to_driver=False)
    return ray


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check_target(target: str) -> None:
    where = target[len(TARGET_PREFIX):] if isinstance(target, str) and target.startswith(TARGET_PREFIX) else None
    if not where or (where not in ("local", "auto") and ":" not in where):
        raise ValueError(f"Session: a distributed target is 'ray://local', 'ray://auto' or 'ray://HOST:PORT', "
                         f"got {target!r}")


def start_tasks(ray, tasks) -> list:
    """New actors for cluster tasks `tasks` (cluster_spec.Task), started together; waits until all answer."""
    actors = []
    for task in tasks:
        options = {"num_cpus": 0, "max_concurrency": _ACTOR_CONCURRENCY}
        if task.host:
            options["resources"] = {f"node:{task.host}": 0.001}
        actors.append(ray.remote(TaskServer).options(**options).remote(task.name))
    pings = [a.ping.remote() for a in actors]      # the actors start concurrently: one wait for all
    for task, ping in zip(tasks, pings):
        try:
            ray.get(ping, timeout=120)
        except Exception as e:      # noqa: BLE001 - any start failure names the task
            stop_tasks(ray, actors)
            raise UnavailableError(f"could not start task {task.name} as a Ray actor: {e}") from None
    return actors


def stop_tasks(ray, actors, wait_s: float = 10.0) -> None:
    """Kill `actors` and wait (up to `wait_s`) until they are gone: `ray.kill` only starts the kill."""
    probes = []
    for actor in actors:
        try:
            ray.kill(actor, no_restart=True)
            probes.append(actor.ping.remote())
        except Exception:       # noqa: BLE001 - already gone
            pass
    if probes:
        ray.wait(probes, num_returns=len(probes), timeout=wait_s)


def stop_all(ray, actors: dict) -> None:
    """Stop every actor of `actors` (task name -> handle) and empty it: a session's close and finalizer."""
    handles = list(actors.values())
    actors.clear()
    try:
        stop_tasks(ray, handles)
    except Exception:       # noqa: BLE001 - Ray itself is shutting down: it ends the actors
        pass


def is_actor_death(ray, e: BaseException) -> bool:
    return isinstance(e, (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError))
