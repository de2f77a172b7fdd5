"""Retracing made visible: trace_log, explain_retracing, budgets, warnings, cache_stats."""
import enum
import warnings

import pytest

import eager as ek
from tracing import RetraceError, function, no_retrace


def test_trace_log_records_reason_site_and_nodes():
    f = function(lambda x: ek.tanh(x) + ek.tanh(x))
    f(ek.ones((2,)))
    f(ek.ones((3,)))
    log = f.trace_log
    assert len(log) == 2
    assert log[0].reason == "first call"
    assert "shape (2,) -> (3,)" in log[1].reason
    assert "test_retracing.py" in log[1].call_site
    assert log[0].nodes_before >= log[0].nodes_after > 0
    assert log[0].trace_seconds > 0


def test_explain_retracing_names_every_changed_argument_with_fixes():
    @function
    def step(x, lr, cfg):
        return x * lr

    step(ek.ones((2,)), 0.1, {"a": 1})
    step(ek.ones((3,)), 0.2, {"a": 1, "b": 2})
    text = step.explain_retracing()
    assert "x: shape (2,) -> (3,)" in text
    assert "lr: python value Python float 0.1 -> 0.2" in text
    assert "cfg['b']: new argument or key" in text
    assert "input_signature=[TensorSpec([None], float32)]" in text
    assert "pass a tensor instead of a Python number" in text


def test_max_traces_and_no_retrace_raise_with_explanation():
    f = function(lambda x: x + 1, max_traces=1)
    f(ek.ones((1,)))
    with pytest.raises(RetraceError, match=r"x: shape \(1,\) -> \(2,\)"):
        f(ek.ones((2,)))
    g = function(lambda x: x + 1)
    g(ek.ones((1,)))
    with no_retrace():
        g(ek.ones((1,)))
        with pytest.raises(RetraceError, match="no_retrace"):
            g(ek.ones((5,)))
    assert isinstance(RetraceError("m"), RuntimeError)


def test_frequent_retrace_warning_says_what_changed():
    f = function(lambda x, n: x * n)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(6):
            f(ek.constant(1.0), float(i))
    msgs = [str(x.message) for x in w if "retraced" in str(x.message)]
    assert len(msgs) == 1 and "n: python value" in msgs[0]


@pytest.mark.parametrize("hits_between, warns", [(1, True), (2, False)])
def test_frequent_retrace_warning_counts_cache_hits_in_its_window(hits_between, warns):
    # five traces, each but the first after `hits_between` hits: within the last 10 calls (1 hit
    # between them: 9 calls) it warns; spread over 13 calls (2 hits between) it does not
    f = function(lambda x, n: x * n)
    x = ek.constant(1.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(5):
            if i:
                for _ in range(hits_between):
                    f(x, 0.0)
            f(x, float(i))
    assert len([m for m in w if "retraced" in str(m.message)]) == (1 if warns else 0)


def test_frequent_retrace_window_boundary():
    from tracing.retrace_log import RecentCalls
    for calls_between, fires in ((5, True), (6, False)):
        r = RecentCalls(window=10, threshold=5)
        r.add(True)
        for _ in range(calls_between):
            r.add(False)
        assert [r.add(True) for _ in range(4)][-1] is fires     # 5 traces over 10 (or 11) calls


def test_cache_stats_counts_hits_per_signature():
    f = function(lambda x: x * 2)
    for _ in range(3):
        f(ek.ones((2,)))
    f(ek.ones((3,)))
    stats = f.cache_stats()
    assert sorted(stats.values()) == [1, 3]


def test_time_per_phase_is_reported_in_trace_log_cache_stats_and_explain_retracing():
    @function
    def f(x):
        y = ek.tanh(x) * 0.5 + x
        if ek.reduce_sum(y) > 0:
            y = y * 2.0
        return y

    f(ek.ones((3,)))
    f(ek.ones((4,)))
    first, second = f.trace_log
    assert list(first.phases.phases) == ["autograph", "trace", "optimize", "compile"]
    assert all(v >= 0 for v in first.phases.phases.values())
    assert first.phases.phases["autograph"] > 0 and second.phases.phases["autograph"] < \
        first.phases.phases["autograph"]                      # converted once, cached for the retrace
    assert {"constant_folding", "arithmetic", "fusion"} <= set(first.phases.passes)
    assert sum(first.phases.passes.values()) <= first.phases.phases["optimize"]   # passes: part of optimize
    assert first.phases.total <= first.trace_seconds
    stats = f.cache_stats(timing=True)
    assert stats["f(x: f32[3])"]["hits"] == 1
    phases = stats["f(x: f32[3])"]["phases"]
    assert list(phases)[:3] == ["autograph", "trace", "optimize"] and list(phases)[-1] == "compile"
    assert "optimize/fusion" in phases and phases["optimize/fusion"] == first.phases.passes["fusion"]
    assert f.cache_stats() == {"f(x: f32[3])": 1, "f(x: f32[4])": 1}
    text = f.explain_retracing()
    assert "Time per trace:" in text and "#1 f(x: f32[3]):" in text and "#2 f(x: f32[4]):" in text
    assert "autograph" in text and "optimize" in text and "compile" in text
    assert "autograph" in str(first) and "compile" in str(first)


def test_a_single_trace_still_reports_its_time_per_phase():
    f = function(lambda x: ek.tanh(x) * 2.0, autograph=False)
    f(ek.ones((2,)))
    text = f.explain_retracing()
    assert text.startswith("<lambda> traced 1 time(s): nothing to explain.")
    assert "Time per trace:" in text and "trace" in text and "compile" in text


# -- advice by kind of Python value ---------------------------------------------------------------------------------
class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


class Config:
    """A hashable option object: keyed by value."""

    def __init__(self, depth):
        self.depth = depth

    def __eq__(self, other):
        return isinstance(other, Config) and other.depth == self.depth

    def __hash__(self):
        return hash(self.depth)

    def __repr__(self):
        return f"Config(depth={self.depth})"


def _explain_after(first, second):
    f = function(lambda x, opt: x * 2.0)
    f(ek.ones(()), first)
    f(ek.ones(()), second)
    assert f.experimental_get_tracing_count() == 2
    return f.explain_retracing()


def test_retrace_advice_for_a_number_is_a_tensor():
    text = _explain_after(1, 2)
    assert "opt: python value Python int 1 -> 2" in text
    assert "pass a tensor instead of a Python number (e.g. eager.constant(2))" in text


def test_retrace_advice_for_a_string_is_static_option_or_string_tensor():
    text = _explain_after("relu", "tanh")
    assert "opt: python value Python str 'relu' -> 'tanh'" in text
    assert "Python number" not in text
    assert "static option" in text and "this retrace is expected" in text
    assert "pass a string tensor instead (eager.constant('tanh'))" in text


def test_retrace_advice_for_an_enum_is_expected_static_option():
    text = _explain_after(Mode.TRAIN, Mode.EVAL)
    assert "opt: value Mode.TRAIN -> Mode.EVAL" in text
    assert "enum member Mode.EVAL: a static option" in text and "at most 2 traces for Mode" in text
    assert "Python number" not in text and "keyed by identity" not in text and "tensor" not in text


def test_retrace_advice_for_a_custom_hashable_is_keyed_by_value():
    text = _explain_after(Config(1), Config(2))
    assert "opt: value Config Config(depth=1) -> Config Config(depth=2)" in text
    assert "hashable Config, keyed by value" in text and "this retrace is expected" in text
    assert "Python number" not in text and "keyed by identity" not in text
    f = function(lambda x, opt: x * 2.0)
    f(ek.ones(()), Config(1))
    f(ek.ones(()), Config(1))                    # an equal option reuses the trace
    assert f.experimental_get_tracing_count() == 1


def test_retrace_advice_for_a_plain_object_is_identity():
    text = _explain_after(object(), object())
    assert "keyed by identity" in text
