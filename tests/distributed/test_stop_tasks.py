"""`ray_backend.stop_tasks` returns only once the actors are gone, although `ray.kill` only starts a kill:
a ping sent right after it may still be answered.  A fake Ray plays that race (no Ray needed)."""
from graph_runtime.distributed import ray_backend


class _Ref:
    def __init__(self, ok: bool):
        self.ok = ok


class _Actor:
    """Answers `answers_after_kill` more pings once killed, then is dead."""

    def __init__(self, answers_after_kill: int):
        self.killed = False
        self.left = answers_after_kill
        self.ping = self

    def remote(self):
        if not self.killed:
            return _Ref(True)
        self.left -= 1
        return _Ref(self.left >= 0)

    @property
    def dead(self) -> bool:
        return self.killed and self.left < 0


class _FakeRay:
    def kill(self, actor, no_restart=True):
        actor.killed = True

    def wait(self, refs, num_returns, timeout):
        return list(refs), []

    def get(self, ref, timeout=None):
        if not ref.ok:
            raise RuntimeError("actor died")
        return "pong"


def test_stop_tasks_waits_until_a_ping_fails():
    actors = [_Actor(0), _Actor(3), _Actor(1)]
    ray_backend.stop_tasks(_FakeRay(), actors, wait_s=5.0)
    assert all(a.dead for a in actors)


def test_stop_tasks_gives_up_after_its_wait():
    actor = _Actor(10 ** 9)            # never dies
    ray_backend.stop_tasks(_FakeRay(), [actor], wait_s=0.1)
    assert actor.killed and not actor.dead
