"""Ray as the substrate of a distributed session: connect to a target, start and stop task actors.

Targets:
- `ray://local`: an embedded Ray instance on this machine, started on first
  use and shared by every later session of the process (start-up costs a few
  seconds; `Session.close` releases the session's actors, not Ray);
- `ray://auto`: the Ray cluster this machine belongs to (`ray.init("auto")`);
- `ray://HOST:PORT`: a remote cluster through the Ray Client
  (`ray.init("ray://HOST:PORT")`).

Starting an actor costs a process and imports (about a second, more on a
loaded machine).  `keep_idle_actors(n)` lets a closed session's actors go
back to an idle pool of this process instead of stopping (each is reset
first: its variables, partitions and peers are dropped; one still running a
step is stopped), and later sessions take their tasks from it: a program or
test suite that makes many short sessions pays the start-up once.  The
default, 0, stops them with their session.

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
import subprocess
import sys
import tempfile
import threading
import time

from eager.errors import UnavailableError

from .worker import TaskServer

TARGET_PREFIX = "ray://"
_ACTOR_CONCURRENCY = 32
_RETIRE_S = 2.0              # how long a closing session waits for a step still running on a task it would keep
_pool_lock = threading.Lock()
_idle: list = []             # reset actors of closed sessions, for the next session of this process
_keep_idle = 0               # keep_idle_actors


def ray_module():
    try:      # Ray is the optional [distributed] extra: imported by ray:// sessions only
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
    with _pool_lock:
        _idle.clear()            # actors of an earlier Ray instance of this process ended with it
    if where == "local":
        ray.init(num_cpus=max(2, os.cpu_count() or 2), include_dashboard=False, log_to_driver=False,
                 configure_logging=False, **_worker_path())
    elif where == "auto":
        ray.init(address="auto", log_to_driver=False)
    else:
        ray.init(address=target, log_to_driver=False)
    return ray


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _worker_path() -> dict:
    """`ray.init` arguments that make the workers import graphjit from where this process does.

    Ray's workers are fresh interpreters of this environment (this process's environment variables,
    PYTHONPATH included).  Where one of them finds this very graphjit (an installed or editable-installed
    project, a checkout on PYTHONPATH), nothing is added: a `runtime_env` makes Ray start every worker
    through an extra process (an actor then took 1.7-3.5x as long to start on a 2-core machine).
    Otherwise (a checkout imported through this process's working directory or `sys.path`) PYTHONPATH
    names the checkout for them."""
    ours = os.path.join(_project_root(), "graph_runtime", "__init__.py")
    probe = "import importlib.util as u; s = u.find_spec('graph_runtime'); print(s.origin if s else '')"
    with tempfile.TemporaryDirectory() as neutral:      # not our directory at the head of its sys.path
        try:
            found = subprocess.run([sys.executable, "-c", probe], cwd=neutral, capture_output=True, text=True,
                                   timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            found = ""
    if found and os.path.realpath(found) == os.path.realpath(ours):
        return {}
    path = os.pathsep.join(p for p in [os.environ.get("PYTHONPATH", ""), _project_root()] if p)
    return {"runtime_env": {"env_vars": {"PYTHONPATH": path}}}


def check_target(target: str) -> None:
    where = target[len(TARGET_PREFIX):] if isinstance(target, str) and target.startswith(TARGET_PREFIX) else None
    if not where or (where not in ("local", "auto") and ":" not in where):
        raise ValueError(f"Session: a distributed target is 'ray://local', 'ray://auto' or 'ray://HOST:PORT', "
                         f"got {target!r}")


def keep_idle_actors(n: int) -> None:
    """Keep up to `n` actors of closed sessions alive for later sessions of this process (module docstring);
    0, the default, stops them with their session.  Idle actors beyond `n` are stopped now."""
    global _keep_idle
    if type(n) is not int or n < 0:
        raise ValueError(f"keep_idle_actors: expected a count >= 0, got {n!r}")
    with _pool_lock:
        _keep_idle = n
        extra = _idle[n:]
        del _idle[n:]
    if extra:
        stop_tasks(ray_module(), extra)


def _new_actor(ray, task):
    options = {"num_cpus": 0, "max_concurrency": _ACTOR_CONCURRENCY}
    if task.host:
        options["resources"] = {f"node:{task.host}": 0.001}
    return ray.remote(TaskServer).options(**options).remote(task.name)


def _idle_actor():
    with _pool_lock:
        return _idle.pop() if _idle else None


def start_tasks(ray, tasks) -> list:
    """Actors for cluster tasks `tasks` (cluster_spec.Task): idle ones of closed sessions first (for tasks
    pinned to no host), new ones started together otherwise; waits until all answer."""
    actors = [(task.host is None and _idle_actor()) or _new_actor(ray, task) for task in tasks]
    pings = [a.adopt.remote(task.name) for a, task in zip(actors, tasks)]    # the actors start concurrently
    for i, (task, ping) in enumerate(zip(tasks, pings)):
        try:
            ray.get(ping, timeout=120)
            continue
        except Exception as e:      # noqa: BLE001 - an idle actor may have died: one new try, then give up
            error = e
        try:
            actors[i] = _new_actor(ray, task)
            ray.get(actors[i].adopt.remote(task.name), timeout=120)
        except Exception:       # noqa: BLE001 - any start failure names the task
            stop_tasks(ray, actors)
            raise UnavailableError(f"could not start task {task.name} as a Ray actor: {error}") from None
    return actors


def stop_tasks(ray, actors, wait_s: float = 10.0) -> None:
    """Kill `actors` and wait (up to `wait_s`) until they are gone: `ray.kill` only starts the kill.

    Gone means a ping fails: a ping sent just after the kill can still be answered by the actor (the kill
    travels through Ray's control store, the ping straight to the actor), so an answered ping is sent again.
    """
    alive = []
    for actor in actors:
        try:
            ray.kill(actor, no_restart=True)
            alive.append(actor)
        except Exception:       # noqa: BLE001 - already gone
            pass
    deadline = time.monotonic() + wait_s
    while alive and time.monotonic() < deadline:
        probes = {}
        for actor in alive:
            try:
                probes[actor.ping.remote()] = actor
            except Exception:       # noqa: BLE001 - a handle Ray no longer serves: gone
                pass
        if not probes:
            break
        done, pending = ray.wait(list(probes), num_returns=len(probes), timeout=max(0.0, deadline - time.monotonic()))
        alive = [probes[r] for r in pending]
        for r in done:
            try:
                ray.get(r)
            except Exception:       # noqa: BLE001 - the ping failed: the actor is gone
                continue
            alive.append(probes[r])     # answered before the kill landed
        if alive:
            time.sleep(0.02)


def stop_all(ray, actors: dict) -> None:
    """Release every actor of `actors` (task name -> handle) and empty it: a session's close and finalizer.
    Up to `keep_idle_actors` of them are reset and kept idle; the others (and any still busy) are stopped."""
    handles = list(actors.values())
    actors.clear()
    try:
        with _pool_lock:
            room = max(0, _keep_idle - len(_idle))
        kept, stopped = handles[:room], handles[room:]
        retiring = [a.retire.remote(_RETIRE_S) for a in kept]
        for actor, ref in zip(kept, retiring):
            try:
                idle = ray.get(ref, timeout=_RETIRE_S + 5.0)
            except Exception:       # noqa: BLE001 - dead or unreachable: stopped below
                idle = False
            if idle:
                with _pool_lock:
                    _idle.append(actor)
            else:
                stopped.append(actor)
        stop_tasks(ray, stopped)
    except Exception:       # noqa: BLE001 - Ray itself is shutting down: it ends the actors
        pass


def is_actor_death(ray, e: BaseException) -> bool:
    return isinstance(e, (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError))
