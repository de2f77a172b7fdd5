"""The retrace cache is bounded: past `max_cache_size` the least recently used trace is dropped, with a log."""
import logging

import pytest

import eager as ek
from tracing import function
from tracing.function import DEFAULT_MAX_CACHE_SIZE

pytestmark = pytest.mark.filterwarnings("ignore::tracing.RetraceWarning")   # these tests retrace on purpose


def _sizes(f):
    return sorted(int(sig.split("[")[1].split("]")[0]) for sig in f.cache_stats())


def test_least_recently_used_trace_is_dropped_with_a_log_line(caplog):
    f = function(lambda x: x * 2.0, max_cache_size=3)
    for n in (1, 2, 3):
        f(ek.ones((n,)))
    f(ek.ones((1,)))                                  # (1,) is used again: (2,) is now the oldest
    with caplog.at_level(logging.WARNING, logger="graphjit.tracing"):
        out = f(ek.ones((4,)))
    assert out.numpy().tolist() == [2.0] * 4
    assert _sizes(f) == [1, 3, 4]
    assert "max_cache_size=3" in caplog.text and "f32[2]" in caplog.text and "trace again" in caplog.text
    assert f.experimental_get_tracing_count() == 4    # traces made, not traces kept
    f(ek.ones((2,)))                                  # dropped: traces again, and the result is right
    assert f.experimental_get_tracing_count() == 5 and _sizes(f) == [1, 2, 4]   # (3,) was least recent
    assert float(ek.reduce_sum(f(ek.ones((2,))))) == 4.0
    assert len(f.trace_log) == 5 and [r.index for r in f.trace_log] == [1, 2, 3, 4, 5]


def test_cache_hits_keep_a_trace_alive():
    f = function(lambda x: x + 1.0, max_cache_size=2)
    f(ek.ones((1,)))
    for n in range(2, 8):                             # (1,) is called between every new shape
        f(ek.ones((n,)))
        f(ek.ones((1,)))
    assert 1 in _sizes(f) and len(f.cache_stats()) == 2
    assert f.experimental_get_tracing_count() == 7


def test_python_values_that_change_every_call_do_not_grow_the_cache():
    f = function(lambda x, k: x * k, max_cache_size=5)
    for k in range(40):
        assert float(f(ek.constant(1.0), k)) == float(k)
    assert len(f.cache_stats()) == 5 and f.experimental_get_tracing_count() == 40


def test_methods_get_the_same_bound_and_the_default_is_documented():
    class M:
        @function(max_cache_size=2)
        def g(self, x):
            return x - 1.0
    m = M()
    for n in (1, 2, 3):
        m.g(ek.ones((n,)))
    assert len(m.g.cache_stats()) == 2
    assert function(lambda x: x)._max_cache_size == DEFAULT_MAX_CACHE_SIZE == 128


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3"])
def test_bad_max_cache_size_is_refused(bad):
    with pytest.raises(ValueError, match="max_cache_size must be a positive int"):
        function(lambda x: x, max_cache_size=bad)
