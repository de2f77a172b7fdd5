"""Staged control-flow ops and errors name the line of their statement: an If/While op built from `if`, `while`, `for`, a
ternary, `and`/`or` records the statement's first line (the user's file), not
the last line of its body, and errors raised while staging or running a loop
point there too."""
import inspect
import re

import numpy as np
import pytest

import eager as ek
from tracing import TensorSpec, function

_CF_TYPES = {"If", "StatelessIf", "While", "StatelessWhile"}


def _line_of(fn, marker: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, marker
    return hits[0]


def _cf_ops(graph):
    """Control-flow ops of `graph` and of the bodies nested in them."""
    out = []
    for op in graph.get_operations():
        if op.type in _CF_TYPES:
            out.append(op)
            for attr in ("cond", "body", "then_branch", "else_branch"):
                try:
                    sub = op.get_attr(attr)
                except (KeyError, ValueError, AttributeError):
                    continue
                if hasattr(sub, "get_operations"):
                    out += _cf_ops(sub)
    return out


def program(x, n):
    s = ek.constant(0.0)
    if ek.reduce_sum(x) > 0:              # @if
        s = s + 1.0
        s = s * 2.0
    i = ek.constant(0)
    while i < n:                          # @while
        s = s + ek.reduce_sum(x)
        i += 1
    for row in x:                         # @for
        s = s + row
        s = s - 0.5
    t = (s + 1.0
         if s > 3.0 else s)               # (the ternary's statement starts on the line above)
    u = (s > 0.0 and                      # @and
         t > 0.0)
    v = (s > 5.0 or                       # @or
         t < 0.0)
    return s, t, u, v


def test_every_staged_control_flow_op_records_its_statement_line():
    cf = function(program).get_concrete_function(ek.zeros([3]), ek.constant(2))
    got = sorted((op.type.replace("Stateless", ""), op.location.lineno) for op in _cf_ops(cf.graph))
    for op in _cf_ops(cf.graph):
        assert op.location.filename == __file__
    ternary = _line_of(program, "t = (s + 1.0")
    want = sorted([("If", _line_of(program, "# @if")), ("While", _line_of(program, "# @while")),
                   ("While", _line_of(program, "# @for")), ("If", ternary),
                   ("If", _line_of(program, "# @and")), ("If", _line_of(program, "# @or"))])
    assert got == want


def test_staging_error_inside_a_loop_names_the_while_line():
    def f(x):
        n = ek.constant(0)
        while x > 0:
            x = x - 1
            n = ek.constant(0.5)
        return n
    line = _line_of(f, "while x > 0:")
    with pytest.raises(TypeError, match=rf"'n' has dtype int32 before the loop.*\.py:{line}\)"):
        function(f)(ek.constant(3))


def test_run_time_error_inside_a_staged_loop_names_the_op_and_the_loop():
    def f(x, k):
        acc = ek.zeros([2])
        i = 0
        for j in ek.range(k):
            acc = acc + ek.reshape(x, [2])   # fails at run time: x has 3 elements
            i = i + j
        return acc
    h = function(f, input_signature=[TensorSpec([None], ek.float32), TensorSpec([], ek.int32)])
    with pytest.raises(ek.errors.InvalidArgumentError) as info:
        h(ek.ones([3]), ek.constant(2))
    msg = str(info.value)
    assert re.search(rf"Reshape, created at test_fidelity_locations.py:{_line_of(f, 'ek.reshape(x, [2])')}",
                     msg), msg
    loop = [op for op in _cf_ops(h.get_concrete_function(ek.ones([3]), ek.constant(2)).graph)
            if "While" in op.type][0]
    assert loop.location.lineno == _line_of(f, "for j in ek.range(k):")


def test_traceback_of_a_converted_frame_shows_the_statement_line():
    def f(x):
        i = ek.constant(0)
        while i < x:
            i = i + 1
            i = i + ek.constant(1.5)      # dtype error raised while staging the body
        return i
    with pytest.raises(Exception) as info:
        function(f)(ek.constant(3))
    frames = [fr for fr in info.traceback if fr.path == __file__ or str(fr.path) == __file__]
    lines = [fr.lineno + 1 for fr in frames]
    assert _line_of(f, "while i < x:") in lines
    assert _line_of(f, "i = i + 1") not in lines


def test_identical_functions_in_two_files_keep_their_own_file(tmp_path):
    """Code objects compare equal across files (same text, same line): each file still gets its own
    conversion, so the staged ops of the second name the second file."""
    import importlib.util
    src = ("import eager as ek\n"
           "def f(x):\n"
           "    if ek.reduce_sum(x) > 0:\n"
           "        x = x * 2.0\n"
           "    return x\n")
    fns = []
    for name in ("first_copy", "second_copy"):
        path = tmp_path / f"{name}.py"
        path.write_text(src)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fns.append(module.f)
    assert fns[0].__code__ == fns[1].__code__               # the case: equal code objects, two files
    for fn in fns:
        cf = function(fn).get_concrete_function(TensorSpec([2], ek.float32))
        files = {op.location.filename for op in _cf_ops(cf.graph)}
        assert files == {fn.__code__.co_filename}
