"""The seam through which eager-level libraries compile Python functions into graphs.

`eager.data` (a dataset's `map`/`filter` functions) and `eager.keras` (`fit`'s train and
test steps) are eager code, yet their traced parts should run through `@function` like user
code does, so that AutoGraph, retrace explanations and the optimizer serve them too.
`@function` lives in `tracing`, above `eager`, and imports only point down; so eager never
imports tracing.  Instead the compiler is looked up at first use:

1. a compiler registered with `register_function_compiler` (`tracing` registers
   `tracing.function` when it is imported);
2. otherwise the `graphjit.compilers` entry point named `function`, declared in
   pyproject.toml (`tracing.function:function`); loading it imports `tracing`, which
   registers itself.

If neither exists (a broken install), `function_compiler()` raises ImportError saying so:
it never falls back to running the Python eagerly behind the user's back.

`python_converter()` is AutoGraph's conversion alone (`convert(fn)`: the function with its
Python control flow rewritten, or `fn` itself with a warning when it cannot be converted), for
eager-level code that calls a user function while a graph is built but does not trace it as a
function of its own: `eager.data`'s `flat_map`/`interleave` functions build datasets, called
per element (eagerly or in a staged loop), as TF's AutoGraph converts them.  `tracing`
registers it with the compiler (`register_python_converter`).
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

ENTRY_POINT_GROUP = "graphjit.compilers"
ENTRY_POINT_NAME = "function"

_lock = threading.Lock()
_compiler: Optional[Callable] = None
_converter: Optional[Callable] = None


def _checked(fn, what: str) -> Callable:
    if not callable(fn):
        raise TypeError(f"{what}: expected a callable, got {type(fn).__name__}")
    return fn


def register_function_compiler(compiler: Callable) -> None:
    """Make `compiler` (a `@function`-like decorator factory) the one `function_compiler()` returns."""
    global _compiler
    with _lock:
        _compiler = _checked(compiler, "register_function_compiler")


def register_python_converter(converter: Callable) -> None:
    """Make `converter` (`fn -> converted fn`, AutoGraph's `convert`) the one `python_converter()` returns."""
    global _converter
    with _lock:
        _converter = _checked(converter, "register_python_converter")


def python_converter() -> Callable:
    """The registered AutoGraph conversion (loading the compiler's entry point first, which registers it)."""
    if _converter is None:
        function_compiler()
    if _converter is None:
        raise ImportError("no AutoGraph converter is registered (import tracing, which registers autograph's "
                          "convert with register_python_converter)")
    return _converter


def function_compiler() -> Callable:
    """The registered `@function` decorator: `function_compiler()(python_fn, **options)`."""
    if _compiler is not None:
        return _compiler
    _load_entry_point()
    if _compiler is None:
        raise ImportError(f"no graph compiler is registered: the '{ENTRY_POINT_NAME}' entry point of group "
                          f"'{ENTRY_POINT_GROUP}' did not register one (is graphjit installed? "
                          f"`pip install -e .` or import tracing first)")
    return _compiler


def _load_entry_point() -> None:
    from importlib import metadata    # stdlib, imported here because most programs never need it
    try:
        found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except TypeError:                 # Python < 3.10's entry_points() takes no arguments
        found = metadata.entry_points().get(ENTRY_POINT_GROUP, ())
    for ep in found:
        if ep.name == ENTRY_POINT_NAME:
            compiler = ep.load()
            if _compiler is None:     # importing tracing registers it; register what we loaded otherwise
                register_function_compiler(compiler)
            return
    raise ImportError(f"no graph compiler is registered and no '{ENTRY_POINT_NAME}' entry point of group "
                      f"'{ENTRY_POINT_GROUP}' is installed (is graphjit installed? `pip install -e .`, "
                      f"or import tracing first)")
