"""Strict conversion (TF's AUTOGRAPH_STRICT_CONVERSION=1): what AutoGraph cannot convert raises instead
of running unconverted."""
import warnings

import pytest

import autograph
import eager as ek
from tracing import function


def counting_generator():
    yield 1


def _sourceless():
    namespace = {}
    exec("def no_source(x):\n    return x + 1.0\n", namespace)     # defined from a string: no source file
    return namespace["no_source"]


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_STRICT_CONVERSION", "1")


def test_generator_raises_not_implemented_in_strict_mode(strict):
    with pytest.raises(NotImplementedError, match="generators"):
        function(counting_generator)()
    with pytest.raises(autograph.ConversionError, match="generators"):
        autograph.convert(counting_generator)


def test_unconvertible_function_raises_in_strict_mode(strict):
    no_source = _sourceless()
    with pytest.raises(autograph.ConversionError, match="no_source"):
        function(no_source)(ek.constant(1.0))

    def calls_it(x):
        return no_source(x) * 2.0
    with pytest.raises(autograph.ConversionError, match="no_source"):
        function(calls_it)(ek.constant(1.0))


def test_default_mode_runs_unconverted_with_a_warning(monkeypatch):
    monkeypatch.delenv("AUTOGRAPH_STRICT_CONVERSION", raising=False)
    no_source = _sourceless()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert float(function(no_source)(ek.constant(1.0))) == 2.0
    assert any(issubclass(w.category, autograph.AutoGraphWarning) for w in caught)
