"""Distributed tests share one embedded Ray instance (started once per test session, shut down at the end)."""
import pytest

from graph_runtime.distributed import ray_backend


@pytest.fixture(scope="session")
def ray_local():
    ray = ray_backend.connect("ray://local")
    yield ray
    ray.shutdown()
