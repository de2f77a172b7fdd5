"""Shared pytest setup: make tests/<package>/ helper modules importable; hypothesis profile; one Ray.

`ray_local` is one embedded Ray instance for the whole test session, started by the first test that asks
for it and shut down at the end: the distributed tests and the distributed example (a subprocess that
connects to it) share it, since starting Ray costs seconds (tens of seconds on a loaded machine).  Its task
actors are shared too: a closed session's actors are reset and kept idle for the next session
(`ray_backend.keep_idle_actors`), since starting one costs about a second; a test that checks that actors
end with their session asks for `actors_stop_on_close`.
"""
import os
import sys

import pytest
from hypothesis import settings

for sub in ("eager", "graph_runtime", "tracing", "autograph", "end_to_end"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), sub))

_IDLE_ACTORS = 6          # a session of ps + 2 workers, twice

settings.register_profile("ci", deadline=None, max_examples=40)
settings.register_profile("dev", deadline=None, max_examples=20)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def ray_local():
    pytest.importorskip("ray")     # the optional [distributed] extra
    from graph_runtime.distributed import ray_backend
    ray = ray_backend.connect("ray://local")
    ray_backend.keep_idle_actors(_IDLE_ACTORS)      # sessions reuse the task actors of closed ones
    yield ray
    ray_backend.keep_idle_actors(0)
    ray.shutdown()


@pytest.fixture
def actors_stop_on_close(ray_local):
    """For a test that checks a session's actors end with it: closed sessions' actors are not kept idle."""
    from graph_runtime.distributed import ray_backend
    ray_backend.keep_idle_actors(0)
    yield ray_local
    ray_backend.keep_idle_actors(_IDLE_ACTORS)
