"""Recursive conversion of calls, caching, do_not_convert, unsupported
constructs, error locations, to_code; staged runs under tracing.function."""
import functools
import os
import traceback
import warnings

import pytest

import autograph
import ag_cases as cases


def test_to_code_is_readable_and_uses_runtime():
    code = autograph.to_code(cases.while_break_continue)
    assert "def while_break_continue(n):" in code
    assert ("ag__.while_stmt(loop_test, loop_body, (break_, i, s), ('break_', 'i', 's'), "
            "{'jump_flags': ('break_',)})") in code
    assert "break\n" not in code and "continue\n" not in code


def test_conversion_is_cached_per_code_object():
    def make(k):
        def inner(x):
            return x + k if x > 0 else x - k
        return inner
    a, b = make(1), make(2)
    assert autograph.to_graph(a).__code__ is autograph.to_graph(b).__code__
    assert autograph.to_graph(a)(3) == 4 and autograph.to_graph(b)(3) == 5


def test_callable_kinds():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k if x > 0 else 0

        def method(self, x):
            total = 0
            for i in range(x):
                total += self(i)
            return total
    s = Scale(3)
    part = functools.partial(cases._helper, k=1)
    assert autograph.to_graph(s)(2) == 6
    assert autograph.to_graph(s.method)(4) == s.method(4)
    assert autograph.to_graph(part)(5) == part(5)
    assert autograph.to_graph(lambda v: v if v > 0 else -v)(-4) == 4


def test_called_user_functions_are_converted_library_not():
    from autograph.impl import conversion

    def user(x):
        return x if x > 0 else -x

    def f(x):
        return user(x) + len(os.path.join("a", "b"))
    assert autograph.to_graph(f)(-1) == 4
    assert conversion.CACHE.get(user.__code__).code is not None
    assert conversion.CACHE.get(os.path.join.__code__) is None


def test_do_not_convert():
    calls = []

    @autograph.do_not_convert
    def raw(x):
        calls.append(x)
        return x

    def f(x):
        return raw(x)
    assert autograph.to_graph(f)(3) == 3 and calls == [3]
    assert autograph.convert(raw) is raw


def test_generators_run_unconverted_with_warning():
    def gen(n):
        for i in range(n):
            yield i

    def f(n):
        return sum(gen(n))
    with pytest.warns(autograph.AutoGraphWarning, match="generators"):
        assert autograph.to_graph(f)(4) == 6
    with pytest.raises(autograph.ConversionError, match="generators"):
        autograph.to_graph(gen)


def test_no_source_warns_and_runs():
    ns = {}
    exec("def h(x):\n    return x + 1\n", ns)
    with pytest.warns(autograph.AutoGraphWarning, match="h"):
        assert autograph.convert(ns["h"])(1) == 2
    with pytest.raises(autograph.ConversionError):
        autograph.to_graph(ns["h"])


def test_misplaced_directive_is_an_error():
    def f(n):
        i = 0
        while i < n:
            i += 1
            autograph.set_loop_options(maximum_iterations=3)
        return i
    with pytest.raises(autograph.ConversionError, match="first statement"):
        autograph.to_graph(f)


def test_errors_point_at_user_file_and_line():
    def f(x):
        total = 0
        for i in range(x):
            if i == 2:
                total += {}["missing"]  # the failing line
        return total
    with pytest.raises(KeyError) as info:
        autograph.to_graph(f)(5)
    frames = traceback.extract_tb(info.value.__traceback__)
    user = [fr for fr in frames if fr.filename == __file__]
    assert user and user[-1].line.endswith("# the failing line")


def test_try_around_control_flow_warns():
    def f(x):
        try:
            if x > 0:
                x = x + 1
        except ValueError:
            x = 0
        return x
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert autograph.convert(f)(1) == 2
    assert any("try/except around control flow" in str(m.message) for m in w)


# --- under tracing.function
def _traced():
    import eager as ek
    from tracing import function
    return ek, function


@pytest.mark.parametrize("fn", [cases.if_else, cases.early_return, cases.while_loop_sum,
                                cases.while_break_continue, cases.while_return,
                                cases.for_range, cases.for_return, cases.nested_return],
                         ids=lambda f: f.__name__)
def test_under_function_matches_python(fn):
    ek, function = _traced()
    traced = function(fn)
    for x in (-3, 0, 4, 11):
        assert traced(ek.constant(x)).numpy().tolist() == fn(x)


def test_conversion_cache_is_bounded_least_recently_used_first(tmp_path):
    import importlib.util
    from autograph.impl import conversion
    cache = conversion.CACHE
    saved = cache.max_entries
    path = tmp_path / "six_functions.py"       # six distinct code objects, with source on disk
    path.write_text("".join(f"def fn{k}(x):\n    if x > 0:\n        return x\n    return -x\n\n"
                            for k in range(6)))
    spec = importlib.util.spec_from_file_location("six_functions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fns = [getattr(module, f"fn{k}") for k in range(6)]
    try:
        cache.clear()
        cache.max_entries = 3
        for fn in fns[:3]:
            assert conversion.convert_code(fn).code is not None
        conversion.convert_code(fns[0])          # a hit makes fn0 the most recently used
        conversion.convert_code(fns[3])          # evicts fn1, the least recently used
        assert len(cache) == 3
        assert cache.get(fns[1].__code__) is None
        assert all(cache.get(f.__code__) is not None for f in (fns[0], fns[2], fns[3]))
        for fn in fns:
            conversion.convert_code(fn)
        assert len(cache) == 3
        assert autograph.convert(fns[1])(-4) == 4          # an evicted function converts again, correctly
    finally:
        cache.max_entries = saved
        cache.clear()
