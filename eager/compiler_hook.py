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
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

ENTRY_POINT_GROUP = "graphjit.compilers"
ENTRY_POINT_NAME = "function"

_lock = threading.Lock()
_compiler: Optional[Callable] = None


def register_function_compiler(compiler: Callable) -> None:
    """Make `compiler` (a `@function`-like decorator factory) the one `function_compiler()` returns."""
    global _compiler
    if not callable(compiler):
        raise TypeError(f"register_function_compiler: expected a callable, got {type(compiler).__name__}")
    with _lock:
        _compiler = compiler


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
