"""Shared pytest setup: make tests/<package>/ helper modules importable; hypothesis profiles; one Ray.

`ray_local` is one embedded Ray instance for the whole test session, started by the first test that asks
for it and shut down at the end: the distributed tests and the distributed example (a subprocess that
connects to it) share it, since starting Ray costs seconds (tens of seconds on a loaded machine).  Its task
actors are shared too: a closed session's actors are reset and kept idle for the next session
(`ray_backend.keep_idle_actors`), since starting one costs about a second; a test that checks that actors
end with their session asks for `actors_stop_on_close`.

Under pytest-xdist (`-n 2`, as the README's test command runs), the tests that use Ray run on one worker
(`pytest_xdist_make_scheduler` below), which starts the one Ray, while the other workers run the rest.
"""
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

for sub in ("eager", "graph_runtime", "tracing", "autograph", "end_to_end"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), sub))

# Bytecode: the suite starts dozens of Python processes (xdist workers, fresh-process tests, the examples,
# Ray's task actors) that import the same modules.  Where the environment sets PYTHONDONTWRITEBYTECODE (as
# many CI images do), each of them would compile every module it imports again.  Written here (before
# pytest-xdist starts its workers, which inherit the environment), each module is compiled once, by the first
# process that imports it: about a third of the test extras' files, where compiling all of them at install
# time cost about 35 CPU-s.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

_IDLE_ACTORS = 6          # a session of ps + 2 workers, twice

# Hypothesis: the suite (and so every landing) runs a fixed set of examples, derived from a hash of each test
# (Hypothesis's own "ci" profile: derandomize, no example database), so a run fails only on what the code
# under test does, never on a new random draw that an unrelated change happened to meet.  The random search
# that finds new cases is a run of its own: HYPOTHESIS_PROFILE=wide (README, "Property tests"); a case it
# finds belongs in the test as an @example.
# The other profiles name Hypothesis's "default" as their parent: without one they inherit whatever profile is
# loaded when they are registered, and Hypothesis loads its derandomized "ci" profile by itself where the
# environment says CI (CI=true), so on a CI machine "wide" drew the same examples on every run.
settings.register_profile("ci", settings.get_profile("ci"), deadline=None, max_examples=40)
_RANDOM = settings(settings.get_profile("default"), derandomize=False)
settings.register_profile("dev", _RANDOM, deadline=None, max_examples=20)
settings.register_profile("wide", _RANDOM, deadline=None, max_examples=400,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def ray_local():
    # the optional [distributed] extra: every test that uses Ray skips without it here.  Test modules do not
    # import Ray themselves: collecting them would import it (about a second) on every xdist worker.
    pytest.importorskip("ray")
    from graph_runtime.distributed import ray_backend
    ray = ray_backend.connect("ray://local")
    ray_backend.keep_idle_actors(_IDLE_ACTORS)      # sessions reuse the task actors of closed ones
    yield ray
    ray_backend.keep_idle_actors(0)
    ray.shutdown()


@pytest.fixture
def actors_stop_on_close(ray_local):
    """For a test that checks a session's actors end with it: closed sessions' actors are not kept idle.
    Such tests run after every other test (`pytest_collection_modifyitems`)."""
    from graph_runtime.distributed import ray_backend
    ray_backend.keep_idle_actors(0)
    yield ray_local
    ray_backend.keep_idle_actors(_IDLE_ACTORS)


@pytest.hookimpl(tryfirst=True, optionalhook=True)   # the hook exists only with pytest-xdist installed
def pytest_xdist_make_scheduler(config, log):
    """`-n N` with the default `--dist load`: each test goes to whichever worker is free, except the tests whose
    id says "distributed" (tests/distributed/, the distributed example), which all go to one worker: one Ray
    instance for them (starting one costs seconds), not one per worker; likewise the tests of files named
    `*native.py` (numba's kernels: its import and first compile cost seconds per process)."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class DistributedTestsOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            if "distributed" in nodeid:
                return "distributed"
            if nodeid.split("::")[0].endswith("native.py"):
                return "native"        # the numba tests: numba's start-up (seconds) on one worker, not on each
            return nodeid

    return DistributedTestsOnOneWorker(config, log)


def pytest_collection_modifyitems(items):
    stray = [item.nodeid for item in items if "ray_local" in item.fixturenames and "distributed" not in item.nodeid]
    if stray:      # it would start a second Ray on another xdist worker
        raise pytest.UsageError(f"tests that use Ray must say 'distributed' in their path or name: {stray}")
    # the tests that check actors end with their session run last: they stop the idle actors too, and every
    # Ray test after them would start new ones (about a second each); a stable sort keeps the order otherwise
    items.sort(key=lambda item: "actors_stop_on_close" in item.fixturenames)
