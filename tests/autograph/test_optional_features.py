"""AutoGraph's optional features (autograph.experimental.Feature), honoured as TensorFlow honours them."""
import pytest

import autograph
import eager as ek
from autograph.experimental import Feature
from tracing import function


def report(x):
    print("x is", x)
    return x + 1.0


def calls_report(x):
    return report(x) * 2.0


def test_builtin_functions_print_a_tensor_at_every_call(capsys):
    f = function(calls_report, experimental_autograph_options=Feature.BUILTIN_FUNCTIONS)
    assert float(f(ek.constant(1.0))) == 4.0
    assert float(f(ek.constant(2.0))) == 6.0               # a cached trace: the print is a graph op
    assert capsys.readouterr().out == "x is 1.0\nx is 2.0\n"
    assert f.experimental_get_tracing_count() == 1


def test_by_default_print_runs_at_trace_time(capsys):
    f = function(calls_report)
    f(ek.constant(1.0))
    f(ek.constant(2.0))
    out = capsys.readouterr().out
    assert out.count("x is") == 1 and "x:0" in out


def checked_sum(x):
    assert ek.reduce_sum(x) > 0, "sum must be positive"
    items = []
    for i in ek.range(ek.size(x)):
        items.append(x[i] * 2.0)
    return autograph.stack(items)


def test_assert_statements_and_lists_follow_the_options():
    x = ek.constant([1.0, 2.0])
    everything = function(checked_sum, experimental_autograph_options=(Feature.ASSERT_STATEMENTS, Feature.LISTS))
    assert everything(x).numpy().tolist() == [2.0, 4.0]
    with pytest.raises(ek.errors.InvalidArgumentError, match="sum must be positive"):
        everything(ek.constant([-1.0, -2.0]))
    assert function(checked_sum)(x).numpy().tolist() == [2.0, 4.0]       # both are on by default
    only_builtins = function(checked_sum, experimental_autograph_options=Feature.BUILTIN_FUNCTIONS)
    with pytest.raises(ek.errors.OperatorNotAllowedInGraphError):   # the assert stays Python, as in TF
        only_builtins(x)
    code = autograph.to_code(checked_sum, experimental_optional_features=[Feature.BUILTIN_FUNCTIONS])
    assert "assert_stmt" not in code and "list_append" not in code
    assert "assert_stmt" in autograph.to_code(checked_sum, experimental_optional_features=Feature.ALL)


def same(a, b):
    return a == b


def test_equality_operators():
    code = autograph.to_code(same, experimental_optional_features=Feature.EQUALITY_OPERATORS)
    assert "ag__.eq(a, b)" in code
    converted = autograph.to_graph(same, experimental_optional_features=Feature.EQUALITY_OPERATORS)
    assert converted(1, 1) is True
    traced = function(same, experimental_autograph_options=Feature.EQUALITY_OPERATORS)
    assert traced(ek.constant([1, 2]), ek.constant([1, 3])).numpy().tolist() == [True, False]


def test_options_must_be_features():
    with pytest.raises(TypeError, match="Feature"):
        function(same, experimental_autograph_options="BUILTIN_FUNCTIONS")
