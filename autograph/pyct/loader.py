"""Loader: compiles a converted FunctionDef into a live function.

The converted function is compiled inside a factory whose parameters are the
runtime module name (`ag__`) and the original function's free variables:

    def factory(ag__, <freevars...>):
        def f(...): <converted body>
        return f

The inner code object is then bound with `types.FunctionType` to the original
globals, defaults and *the original closure cells* (so `nonlocal` writes and
late binding behave exactly as in the original), plus a fresh cell holding
the runtime module.  The code is compiled with the user's file name and line
numbers (see origin_info), so tracebacks point at the user's source.
`compile_function` consumes the converted tree (it is re-typed to `ast` in
place, translate.py): convert again to get another tree.
"""
from __future__ import annotations

import types

import gast

from . import origin_info, translate
from .templates import name_node


def compile_function(fn_node: gast.FunctionDef, freevars: tuple[str, ...],
                     ag_name: str, filename: str) -> types.CodeType:
    params = [name_node(n, gast.Param())
              for n in (ag_name,) + tuple(v for v in freevars if v != ag_name)]
    # The def gets a reserved name inside the factory, so that a recursive
    # reference to the function's own name still resolves to the global.
    user_name, fn_node.name = fn_node.name, ag_name + "converted_fn"
    factory = gast.FunctionDef(
        name="autograph__factory",
        args=gast.arguments(args=params, posonlyargs=[], vararg=None, kwonlyargs=[],
                            kw_defaults=[], kwarg=None, defaults=[]),
        body=[fn_node, gast.Return(value=name_node(fn_node.name))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.Module(body=[factory], type_ignores=[])
    # `origin_info.inherit([factory], fn_node)` and `ast.fix_missing_locations`, in the translation's walk;
    # consumes the tree (it is compiled once)
    py = translate.to_ast_in_place(module, fill_positions=True, inherit_from=origin_info.base_of(fn_node))
    code = compile(py, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == fn_node.name)
    fn_node.name = user_name
    return inner.replace(co_name=user_name)


def bind(code: types.CodeType, original: types.FunctionType, ag_module) -> types.FunctionType:
    """Creates a function running `code` with `original`'s globals and cells."""
    orig_cells = dict(zip(original.__code__.co_freevars, original.__closure__ or ()))
    cells = []
    for name in code.co_freevars:
        if name in orig_cells:
            cells.append(orig_cells[name])
        else:  # the runtime module is the only free variable we add
            assert name.startswith("ag__"), name
            cells.append(types.CellType(ag_module))
    fn = types.FunctionType(code, original.__globals__, original.__name__,
                            original.__defaults__, tuple(cells))
    fn.__kwdefaults__ = original.__kwdefaults__
    fn.__qualname__ = original.__qualname__
    fn.__doc__ = original.__doc__
    fn.__module__ = original.__module__
    fn.__dict__.update(original.__dict__)
    return fn
