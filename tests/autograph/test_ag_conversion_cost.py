"""AutoGraph's conversion cost stays linear in the function's length: structural checks
(parse counts), not timings; and the fast tree walkers behave exactly like gast's."""
import importlib.util

import gast
import numpy as np

import autograph
from autograph.pyct import parsing, templates, translate, walk

_BLOCK = ("    y = abs(y) * 0.5 + max(y, 1.0)\n"
          "    if y > 2.0:\n"
          "        y = y - 1.0\n"
          "    i = 0\n"
          "    while i < 2:\n"
          "        y = y * 0.9\n"
          "        i = i + 1\n")


def _load(tmp_path, blocks: int):
    path = tmp_path / f"ag_cost_{blocks}.py"
    path.write_text("def f(y):\n" + _BLOCK * blocks + "    return y\n")
    spec = importlib.util.spec_from_file_location(f"ag_cost_{blocks}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def test_template_parses_do_not_grow_with_function_length(tmp_path, monkeypatch):
    """Templates are parsed once per text, not once per use: converting 200 lines parses no more
    than converting 21 lines of the same constructs (it used to parse a template per call, branch
    and loop)."""
    real, parses = translate.parse, []
    monkeypatch.setattr(translate, "parse", lambda *a, **k: parses.append(1) or real(*a, **k))
    counts = {}
    for blocks in (3, 29):  # 21 and 203 lines
        fn = _load(tmp_path, blocks)
        templates._parsed.cache_clear()
        parses.clear()
        converted = autograph.to_graph(fn)
        counts[blocks] = len(parses)
        assert converted(3.0) == fn(3.0) and converted(-1.0) == fn(-1.0)
    assert counts[3] == counts[29], counts
    assert counts[29] < 40, counts  # the source itself + one parse per distinct template


def test_to_code_of_long_function_is_the_block_repeated(tmp_path):
    """The converted text of 29 blocks has the converted first block's statements 29 times: no
    conversion step depends on how much code came before."""
    one = autograph.to_code(_load(tmp_path, 1))
    many = autograph.to_code(_load(tmp_path, 29))
    assert many.count("ag__.converted_call(abs") == 29 and many.count("ag__.if_stmt(") == 29


class _Edits:
    """Exercises every splicing rule: a statement becomes two, a statement is deleted, an expression
    field is replaced, a list element expression is replaced."""

    def visit_Assign(self, node):
        self.generic_visit(node)
        if isinstance(node.targets[0], gast.Name) and node.targets[0].id == "drop":
            return None
        if isinstance(node.targets[0], gast.Name) and node.targets[0].id == "twice":
            return [node, gast.Expr(value=gast.Constant(value=1, kind=None))]
        return node

    def visit_Name(self, node):
        if node.id == "old":
            return gast.Name(id="new", ctx=node.ctx, annotation=None, type_comment=None)
        return node


def test_walk_transformer_matches_gast_node_transformer():
    src = ("def g(a, old=old):\n    drop = 1\n    twice = f(old, [old, 2], k=old)\n"
           "    x = lambda: old\n    return [old for old in a if old]\n")

    def run(base):
        tree = gast.parse(src)
        type("T", (_Edits, base), {})().visit(tree)
        return parsing.unparse(tree)

    expected = run(gast.NodeTransformer)
    assert "drop" not in expected and "new" in expected  # the edits do something
    assert run(walk.Transformer) == expected


def test_copy_tree_is_a_deep_copy_keeping_shared_nodes():
    tree = gast.parse("y = f(x, 1.5)\nz = [x, 'a']")
    shared = tree.body[0].value
    tree.body[1].value.elts.append(shared)
    tree._ag_anno = {"live": {"x"}}
    copy = templates.copy_tree(tree)
    assert parsing.unparse(copy) == parsing.unparse(tree)
    assert copy.body[1].value.elts[2] is copy.body[0].value is not shared
    assert copy._ag_anno == tree._ag_anno and copy._ag_anno["live"] is not tree._ag_anno["live"]
    assert not any(a is b for a, b in zip(gast.walk(copy), gast.walk(tree)))
    np.testing.assert_equal(copy.body[0].value.args[1].value, 1.5)


def _awkward(x):
    s = """text
at column 0"""
    t = x + \
1
    # a comment, then blank lines

    return s, t
    # trailing comment


def test_source_lines_found_by_indentation_parse_as_inspects(monkeypatch):
    """parse_function finds a def's lines by indentation, not by tokenizing; the tree (positions
    included) is the one inspect.getsourcelines' lines give, for every function the AutoGraph tests
    convert and for one with a string, a continuation line and comments left of its body (there the
    fast block is cut short, fails to parse, and inspect is asked)."""
    import inspect
    import ag_cases
    fns = [v for v in vars(ag_cases).values() if inspect.isfunction(v)] + [_awkward, _load]
    assert len(fns) > 20
    dump = lambda fn: gast.dump(parsing.parse_function(fn)[0], include_attributes=True)  # noqa: E731
    fast = {fn: dump(fn) for fn in fns}
    assert len(parsing._source_lines(_awkward)[0]) < len(inspect.getsourcelines(_awkward)[0])
    monkeypatch.setattr(parsing, "_source_lines", lambda fn: (*inspect.getsourcelines(fn), False))
    for fn in fns:
        assert fast[fn] == dump(fn), fn


def test_conversion_runs_no_cyclic_collection_and_restores_gc(tmp_path):
    """Each collection would walk every tree node alive, making conversion superlinear in the
    function's length: the collector pauses during conversion, and is left as the user had it."""
    import gc
    from autograph.impl import conversion
    fn, starts = _load(tmp_path, 31), []  # sizes no other test converts (the cache compares code by value)
    callback = lambda phase, info: phase == "start" and starts.append(info)  # noqa: E731
    threshold = gc.get_threshold()
    gc.set_threshold(100)  # collections would certainly run during a 217-line conversion
    gc.callbacks.append(callback)
    try:
        assert conversion.convert_code(fn).code is not None
        assert len(starts) <= 5 and gc.isenabled(), len(starts)  # (292 before) a few run right after
        gc.disable()
        assert conversion.convert_code(_load(tmp_path, 30)).code is not None
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)


_EVERY_KIND = '''
import os as o, sys
from a.b import (c as d, e)
@dec(1)
class K(Base, metaclass=M):
    x: int = 1
    async def am(self, j):
        async with f() as (g, h):
            async for i in j:
                await k
        return [i async for i in j]
    def m(self, /, a, b=2, *args, c, d=3, **kw) -> "K":
        global q
        try:
            del a[1:2, ::3], b.c
        except (E, F) as err:
            raise G from err
        except H:
            pass
        else:
            yield
        finally:
            return (yield from z)
        try:
            pass
        except* H as eg:
            pass
def outer():
    v = 0
    def inner():
        nonlocal v
        v += 1
        return lambda *a, k=1, **b: {**b, 'k': [*a]}
    match v:
        case [1, *rest] | {"k": _, **rest} if rest:
            pass
        case K(x=0) as kk:
            pass
    while (w := v) > 0 and not w or w is None:
        v = -v if v else ~v
        break
    else:
        assert v, f"{v!r:>{w}}"
    return {i: j for i, j in zip(a, b) if i}, {i for i in a}, (i for i in a), [i for i in a][0]
'''


def test_fast_translation_gives_gasts_trees():
    """translate.py builds the trees gast's translators build (positions included), in place or not, for
    every node kind Python has and for this project's own source."""
    import ast
    import pathlib
    root = pathlib.Path(autograph.__file__).parent
    sources = [_EVERY_KIND] + [p.read_text() for p in sorted(root.rglob("*.py"))]
    dump_g = lambda t: gast.dump(t, include_attributes=True)  # noqa: E731
    dump_a = lambda t: ast.dump(t, include_attributes=True)  # noqa: E731
    for src in sources:
        expected_g = gast.ast_to_gast(ast.parse(src))
        got_g = translate.to_gast_in_place(ast.parse(src))
        assert dump_g(got_g) == dump_g(expected_g)
        assert all(type(n).__module__.startswith("gast") for n in gast.walk(got_g))
        expected_a = ast.fix_missing_locations(gast.gast_to_ast(expected_g))
        assert dump_a(translate.to_ast(got_g, fill_positions=True)) == dump_a(expected_a)
        assert dump_g(got_g) == dump_g(expected_g)                     # the copying translation left it
        got_a = translate.to_ast_in_place(got_g, fill_positions=True)
        assert dump_a(got_a) == dump_a(expected_a)
        assert all(type(n).__module__ == "ast" for n in ast.walk(got_a))
        compile(got_a, "<test>", "exec")


def test_fill_missing_positions_is_fix_missing_locations():
    import ast
    tree = gast.gast_to_ast(gast.parse("def f(x):\n    return g(x) + 1\n"))
    ret = tree.body[0].body[0]
    ret.value = ast.Call(func=ast.Name(id="h", ctx=ast.Load()), args=[ret.value], keywords=[])
    ret.value.args[0].end_lineno = None
    a, b = translate.fill_missing_positions(gast.gast_to_ast(gast.ast_to_gast(tree))), ast.fix_missing_locations(tree)
    assert ast.dump(a, include_attributes=True) == ast.dump(b, include_attributes=True)


def test_indented_function_is_parsed_where_it_stands():
    """A nested def is parsed at its file position (no pass shifts positions afterwards), so a multi-line
    string keeps its lines' indentation, as the running function has it (dedenting the source used to
    change it)."""
    def inner(a):
        s = """first
        second"""
        return s + \
            a
    node, info = parsing.parse_function(inner)
    assert node.lineno == inner.__code__.co_firstlineno and node.col_offset == 4
    assert node.body[1].lineno == node.lineno + 3 and node.body[1].col_offset == 8
    assert autograph.to_graph(inner)("!") == inner("!") == "first\n        second!"


def test_straight_line_function_skips_the_control_flow_analyses(tmp_path, monkeypatch):
    """Liveness and definitions annotate if/while/for for their lowering only: a function without any is
    converted without running them (and to the same code: nothing to lower); one with a loop runs them."""
    from autograph.converters import control_flow
    from autograph.static_analysis import liveness
    calls = []
    real = liveness.analyze
    monkeypatch.setattr(liveness, "analyze", lambda fn: calls.append(fn.name) or real(fn))
    path = tmp_path / "straight.py"
    path.write_text("def f(y):\n    y = abs(y) * 0.5\n    g = lambda: y\n    return g() + 1.0\n")
    spec = importlib.util.spec_from_file_location("straight", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not control_flow.has_control_flow(parsing.parse_function(module.f)[0].body)
    assert autograph.to_graph(module.f)(-2.0) == module.f(-2.0) == 2.0
    assert calls == []
    fn = _load(tmp_path, 6)             # a size no other test converts (the cache compares code by value)
    assert control_flow.has_control_flow(parsing.parse_function(fn)[0].body)
    assert autograph.to_graph(fn)(3.0) == fn(3.0) and calls == ["f"]


def test_positions_completed_in_the_translation_walk_are_inherit_then_fix_missing():
    """compile_function completes positions while it translates (one walk): the same positions as
    `origin_info.inherit` on the gast tree, then `gast_to_ast` and `ast.fix_missing_locations`."""
    import ast
    import inspect
    import ag_cases
    from autograph.impl import conversion, pipeline
    from autograph.pyct import naming, origin_info, transformer
    compared = 0
    for fn in [v for v in vars(ag_cases).values() if inspect.isfunction(v)]:
        node, info = parsing.parse_function(fn)
        if isinstance(node, gast.Lambda):
            node = conversion._lambda_to_def(node)
        try:
            node = pipeline.run(node, transformer.Context(naming.Namer.for_tree(node), info, "ag__"))
        except transformer.ConversionError:
            continue

        def wrapped():
            body = [templates.copy_tree(node), gast.Return(value=templates.name_node(node.name))]
            factory = gast.FunctionDef(name="factory", args=gast.arguments(
                args=[templates.name_node("ag__", gast.Param())], posonlyargs=[], vararg=None, kwonlyargs=[],
                kw_defaults=[], kwarg=None, defaults=[]), body=body, decorator_list=[], returns=None,
                type_comment=None, type_params=[])
            return gast.Module(body=[factory], type_ignores=[])
        expected, got = wrapped(), wrapped()
        origin_info.inherit([expected.body[0]], node)
        expected = ast.fix_missing_locations(gast.gast_to_ast(expected))
        got = translate.to_ast_in_place(got, inherit_from=origin_info.base_of(node))
        assert ast.dump(got, include_attributes=True) == ast.dump(expected, include_attributes=True), fn
        compared += 1
    assert compared > 15


def test_pipeline_skips_converters_with_nothing_to_act_on_and_declares_what_they_add(monkeypatch):
    """Each pipeline step says which node kinds it acts on and which it may add (impl/pipeline.py): a
    converter with nothing to act on does not run, and `check=True` verifies every declared `adds` on
    every function the AutoGraph tests convert (a converter adding an undeclared kind raises)."""
    import inspect
    import ag_cases
    from autograph.impl import conversion, pipeline
    from autograph.pyct import naming, transformer
    checked = 0
    for fn in [v for v in vars(ag_cases).values() if inspect.isfunction(v)] + [_awkward]:
        node, info = parsing.parse_function(fn)
        if isinstance(node, gast.Lambda):
            node = conversion._lambda_to_def(node)
        namer, kinds = naming.Namer.scan(node)
        try:
            pipeline.run(node, transformer.Context(namer, info, "ag__", kinds=kinds), check=True)
        except transformer.ConversionError:
            continue
        checked += 1
    assert checked > 15

    def straight(y):
        y = abs(y) * 0.5
        return y + 1.0
    node, info = parsing.parse_function(straight)
    namer, kinds = naming.Namer.scan(node)
    ran = []
    real = pipeline.PIPELINE
    monkeypatch.setattr(pipeline, "PIPELINE", [
        pipeline.Step(s.name, (lambda c, n: lambda f, ctx: ran.append(n) or c(f, ctx))(s.convert, s.name),
                      s.needs, s.adds, s.needed) for s in real])
    pipeline.run(node, transformer.Context(namer, info, "ag__", kinds=kinds))
    assert ran == ["unsupported", "directives", "call_trees", "control_flow"]    # no attribute: no `l.append`


def test_the_installed_gast_takes_the_fast_path():
    assert translate.FAST, translate.SLOW_REASON


def test_an_unchecked_gast_version_falls_back_to_gasts_public_translators(monkeypatch):
    from importlib import metadata
    monkeypatch.setattr(metadata, "version", lambda name: "9.1.0" if name == "gast" else metadata.version(name))
    assert "outside the checked versions" in translate._fast_path_problem()


def test_the_public_fallback_converts_the_same_code(tmp_path, monkeypatch):
    """With the fast translators off, conversion gives the same converted text, positions and results."""
    import ast
    from autograph.impl import conversion

    def positions(code):   # every code object's (name, positions), nested ones included
        out = [(code.co_name, list(code.co_positions()))]
        for c in code.co_consts:
            if hasattr(c, "co_positions"):
                out += positions(c)
        return out

    fn = _load(tmp_path, 3)
    fast_code = autograph.to_code(fn)
    conversion.CACHE.clear()
    fast_positions = positions(conversion.convert_code(fn).code)
    fast_tree = translate.to_ast(translate.parse(_EVERY_KIND), fill_positions=True)
    monkeypatch.setattr(translate, "FAST", False)
    conversion.CACHE.clear()
    try:
        assert autograph.to_code(fn) == fast_code
        assert positions(conversion.convert_code(fn).code) == fast_positions     # same tracebacks
        converted = autograph.to_graph(fn)
        assert converted(3.0) == fn(3.0) and converted(-1.0) == fn(-1.0)
        slow_tree = translate.to_ast(translate.parse(_EVERY_KIND), fill_positions=True)
        assert ast.dump(slow_tree, include_attributes=True) == ast.dump(fast_tree, include_attributes=True)
    finally:
        conversion.CACHE.clear()
