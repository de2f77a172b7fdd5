"""Behaviours TensorFlow 2's guides (tf.function, autodiff, training loops) rely on, checked eagerly
and under @function where both apply."""
import warnings

import numpy as np
import pytest

import eager as ek
from tracing import TensorSpec, function


# ---------------------------------------------------------------- concrete functions and Python values
def _power_concrete():
    @function
    def pw(a, b):
        return a ** b
    return pw.get_concrete_function(a=TensorSpec(None, ek.float32), b=2)


def test_concrete_function_refuses_a_changed_python_argument():
    sq = _power_concrete()
    assert float(sq(ek.constant(10.0))) == 100.0            # an omitted Python argument takes its traced value
    assert float(sq(ek.constant(10.0), b=2)) == 100.0
    assert float(sq(ek.constant(10.0), 2)) == 100.0
    with pytest.raises(TypeError, match=r"Can not cast 3 to Literal\[2\]"):
        sq(ek.constant(10.0), b=3)
    with pytest.raises(TypeError, match=r"Can not cast 3 to Literal\[2\]"):
        sq(ek.constant(10.0), 3)
    with pytest.raises(TypeError, match=r"Can not cast 2.0 to Literal\[2\]"):
        sq(ek.constant(10.0), 2.0)


def test_concrete_function_type_names_each_parameter():
    sq = _power_concrete()
    params = sq.function_type.parameters
    assert list(params) == ["a", "b"]
    assert params["a"].annotation == TensorSpec(None, ek.float32)
    assert repr(params["b"].annotation) == "Literal[2]"
    assert str(sq.function_type) == "(a: TensorSpec(shape=None, dtype=float32), b: Literal[2])"
    with pytest.raises(TypeError, match="unexpected"):
        sq(ek.constant(1.0), c=1)


# ---------------------------------------------------------------- tapes
def test_gradient_of_a_variable_with_respect_to_itself_is_one():
    v = ek.Variable(3.0)
    with ek.GradientTape() as tape:
        pass
    assert float(tape.gradient(v, v)) == 1.0

    @function
    def inside():
        with ek.GradientTape() as t:
            pass
        return t.gradient(v, v)
    assert float(inside()) == 1.0


def test_watched_variables_survive_gradient():
    v = ek.Variable(2.0)
    with ek.GradientTape() as tape:
        y = v * v
    assert float(tape.gradient(y, v)) == 4.0
    assert tape.watched_variables() == (v,)


def test_gradient_for_an_integer_source_warns():
    x = ek.constant(3)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = x * 2
    with pytest.warns(UserWarning, match="must be floating.*int32"):
        assert tape.gradient(y, x) is None
    f = ek.constant(3.0)
    with ek.GradientTape() as tape:
        tape.watch(f)
        y = f * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(tape.gradient(y, f)) == 2.0


# ---------------------------------------------------------------- cache keys bind defaults first
def test_a_default_passed_explicitly_reuses_the_trace():
    @function
    def f(x, activation="relu", *, scale=1.0):
        return ek.nn.relu(x) * scale if activation == "relu" else x * scale
    x = ek.constant([-1.0, 2.0])
    eager_result = f.python_function(x).numpy()
    for call in (lambda: f(x), lambda: f(x, activation="relu"), lambda: f(x, "relu"), lambda: f(x=x),
                 lambda: f(x, scale=1.0)):
        np.testing.assert_array_equal(call().numpy(), eager_result)
    assert f.experimental_get_tracing_count() == 1
    f(x, activation="linear")
    assert f.experimental_get_tracing_count() == 2
    text = f.explain_retracing()
    assert "activation: python value Python str 'relu' -> 'linear'" in text
    assert "static option" in text and "new argument" not in text


def test_extra_keyword_retrace_advice_names_the_keyword():
    @function
    def g(x, **options):
        return x * len(options)
    g(ek.constant(1.0))
    g(ek.constant(1.0), verbose=True)
    text = g.explain_retracing()
    assert "verbose was passed in one call and not in the other" in text
    assert "argument kinds" not in text


def test_get_concrete_function_keys_on_python_values_too():
    @function
    def pw(a, b):
        return a ** b
    spec = TensorSpec(None, ek.float32)
    c2 = pw.get_concrete_function(spec, 2)
    c3 = pw.get_concrete_function(spec, 3)
    assert c3 is not c2 and float(c3(ek.constant(2.0))) == 8.0
    assert pw.get_concrete_function(a=spec, b=2) is c2
