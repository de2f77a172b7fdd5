"""Retracing made visible: trace_log, explain_retracing, budgets, warnings, cache_stats."""
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


def test_cache_stats_counts_hits_per_signature():
    f = function(lambda x: x * 2)
    for _ in range(3):
        f(ek.ones((2,)))
    f(ek.ones((3,)))
    stats = f.cache_stats()
    assert sorted(stats.values()) == [1, 3]
