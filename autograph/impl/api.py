"""Public entry points: convert, to_graph, to_code, do_not_convert,
set_loop_options, and `converted_call` (the call hook of converted code).

`convert(f)` never fails: what cannot be converted runs as is, with a
warning naming the function and the reason (silenced by `do_not_convert`).
`to_graph(f)` raises `ConversionError` instead, and so does `convert` in
strict mode (TF's `AUTOGRAPH_STRICT_CONVERSION=1` environment variable, read
at each conversion; TF's reference tests run in it): a generator or coroutine
then raises `UnsupportedLanguageElementError`, a `NotImplementedError`.  Both accept plain functions,
lambdas, nested functions and closures, bound methods, `functools.partial`
and callable objects, and return a callable with the same calling convention.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import os
import types
import warnings

from .. import ag__ as _operators
from ..experimental import DEFAULT_FEATURES, Feature, optional_features as optional_features_of
from ..operators.py_builtins import BUILTINS, print_
from ..pyct.transformer import ConversionError, UnsupportedLanguageElementError
from . import conversion

_DNC = "autograph_do_not_convert"
_CONVERTED = "autograph_converted"


class AutoGraphWarning(UserWarning):
    """A function called from converted code runs unconverted."""


_AG_MODULES: dict = {}


def _ag_module(features: frozenset = DEFAULT_FEATURES):
    """The `ag__` namespace converted code runs with: for non-default features, a copy whose
    `converted_call` converts the functions it calls with the same features."""
    if features == DEFAULT_FEATURES:
        return AG_NAMESPACE
    module = _AG_MODULES.get(features)
    if module is None:
        module = types.ModuleType("ag__")
        module.__dict__.update({k: v for k, v in vars(AG_NAMESPACE).items() if not k.startswith("__")})
        module.converted_call = functools.partial(converted_call, features=features)
        module = _AG_MODULES.setdefault(features, module)
    return module


def do_not_convert(func=None):
    """Decorator: `func` is always called as is from converted code."""
    if func is None:
        return do_not_convert
    try:
        setattr(func, _DNC, True)
        return func
    except (AttributeError, TypeError):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        setattr(wrapper, _DNC, True)
        return wrapper


def set_loop_options(shape_invariants=(), maximum_iterations=None) -> None:
    """Directive for the enclosing loop (must be the first statement of its
    body).  Conversion removes the call; unconverted, it does nothing."""
    del shape_invariants, maximum_iterations


def _warn(fn, reason: str) -> None:
    code = getattr(fn, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code else ""
    warnings.warn(f"autograph could not convert {getattr(fn, '__qualname__', fn)}{where}: "
                  f"{reason}; it runs unconverted. Decorate it with "
                  "@autograph.do_not_convert to silence this warning.", AutoGraphWarning,
                  stacklevel=3)


def _convert_function(fn: types.FunctionType, strict: bool, features: frozenset):
    if getattr(fn, _CONVERTED, False) or getattr(fn, _DNC, False) or conversion.is_library(fn):
        return fn
    if fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                               | inspect.CO_ASYNC_GENERATOR):
        reason = f"generators and coroutines are not supported (`{fn.__name__}` " \
                 f"at {fn.__code__.co_filename}:{fn.__code__.co_firstlineno})"
        if strict:
            raise UnsupportedLanguageElementError(reason)
        _warn(fn, reason)
        return fn
    entry = conversion.convert_code(fn, features=features)
    if entry.code is None:
        if strict:
            raise ConversionError(entry.error)
        _warn(fn, entry.error)
        return fn
    for w in entry.warnings:
        warnings.warn(w, AutoGraphWarning, stacklevel=3)
    return conversion.bind_converted(entry, fn, _ag_module(features))


def _convert(f, strict: bool, features: frozenset = DEFAULT_FEATURES):
    if getattr(f, _DNC, False) or getattr(f, _CONVERTED, False):
        return f
    if isinstance(f, functools.partial):
        inner = _convert(f.func, strict, features)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if inspect.ismethod(f):
        inner = _convert(f.__func__, strict, features)
        return f if inner is f.__func__ else types.MethodType(inner, f.__self__)
    if isinstance(f, types.FunctionType):
        return _convert_function(f, strict, features)
    if isinstance(f, type) or not callable(f):
        return f
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType):
        inner = _convert_function(call, strict, features)
        return f if inner is call else types.MethodType(inner, f)
    return f


def strict_conversion_mode() -> bool:
    """TF's switch: with AUTOGRAPH_STRICT_CONVERSION=1, what cannot be converted raises."""
    return os.environ.get("AUTOGRAPH_STRICT_CONVERSION", "0") == "1"


def convert(f, optional_features=None):
    """The converted version of `f` (cached per code object and feature set), or `f` itself (with a
    warning) when it cannot be converted; in strict mode the error is raised instead.  Used by tracing.
    `optional_features`: see `autograph.experimental.Feature`."""
    return _convert(f, strict_conversion_mode(), optional_features_of(optional_features))


def to_graph(f, recursive=True, experimental_optional_features=None):
    """Converts `f`; raises ConversionError naming the construct and line.  `recursive` is TF's
    argument: functions `f` calls are always converted when called."""
    del recursive
    return _convert(f, True, optional_features_of(experimental_optional_features))


def to_code(f, recursive=True, experimental_optional_features=None) -> str:
    """The converted source of `f` as readable Python text."""
    del recursive
    features = optional_features_of(experimental_optional_features)
    target = f
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.ismethod(target):
        target = target.__func__
    if not isinstance(target, types.FunctionType) and callable(target):
        target = type(target).__call__
    if not isinstance(target, types.FunctionType):
        raise TypeError(f"to_code expects a Python function, got {type(f).__name__}")
    target = inspect.unwrap(target, stop=lambda fn: not hasattr(fn, _CONVERTED))
    entry = conversion.convert_code(target, features=features)
    if entry.code is None:
        raise ConversionError(entry.error)
    return conversion.converted_source(target, features=features) + "\n"


def converted_call(f, args: tuple, kwargs, features: frozenset = DEFAULT_FEATURES):
    """Calls `f(*args, **kwargs)`, converting user code on the way (with these optional features)."""
    kwargs = kwargs or {}
    if f is builtins.print and Feature.BUILTIN_FUNCTIONS in features:
        return print_(*args, **kwargs)
    try:
        overload = BUILTINS.get(f)
    except TypeError:  # unhashable callable
        overload = None
    if overload is not None:
        return overload(*args, **kwargs)
    if isinstance(f, types.FunctionType) and (getattr(f, _CONVERTED, False) or
                                              conversion.is_library(f)):
        return f(*args, **kwargs)
    if isinstance(f, (types.BuiltinFunctionType, types.BuiltinMethodType, type)):
        return f(*args, **kwargs)
    return _convert(f, strict_conversion_mode(), features)(*args, **kwargs)


def _namespace() -> types.ModuleType:
    """The `ag__` that converted code calls: the runtime operators and `converted_call`."""
    ns = types.ModuleType("ag__", _operators.__doc__)
    ns.__dict__.update({name: getattr(_operators, name) for name in _operators.__all__})
    ns.converted_call = converted_call
    return ns


AG_NAMESPACE = _namespace()
