"""Shared pytest setup: make tests/<package>/ helper modules importable; hypothesis profile; one Ray.

`ray_local` is one embedded Ray instance for the whole test session, started by the first test that asks
for it and shut down at the end: the distributed tests and the distributed example (a subprocess that
connects to it) share it, since starting Ray costs seconds (tens of seconds on a loaded machine).
"""
import os
import sys

import pytest
from hypothesis import settings

for sub in ("eager", "graph_runtime", "tracing", "autograph", "end_to_end"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), sub))

settings.register_profile("ci", deadline=None, max_examples=40)
settings.register_profile("dev", deadline=None, max_examples=20)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def ray_local():
    pytest.importorskip("ray")     # the optional [distributed] extra
    from graph_runtime.distributed import ray_backend
    ray = ray_backend.connect("ray://local")
    yield ray
    ray.shutdown()
