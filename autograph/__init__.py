"""autograph: converts Python control flow into graph ops (source to source).

Public API (see docs/api.md):

* `to_graph(func)` -> the converted function; raises `ConversionError` if
  `func` cannot be converted (generators, async, no source...).
* `to_code(func)` -> the converted source as readable Python text.
* `convert(func)` -> like `to_graph` but never raises: unconvertible code
  runs as is with an `AutoGraphWarning`.  Cached per code object, so calling
  it on every trace is cheap.  **tracing calls this**: with
  `function(autograph=True)`, trace `autograph.convert(python_function)`
  instead of the function itself (functions, methods, partials and callable
  objects all work; the result has the same calling convention).
* `do_not_convert` decorator; `set_loop_options(shape_invariants=[(var,
  shape)], maximum_iterations=None)` as the first statement of a loop body.
* `converted_call(f, args, kwargs)`: the hook converted code uses for calls.

Layout: `pyct/` (generic toolkit: parsing, templates, transformer base,
naming, annotations, origin info, loader), `static_analysis/` (activity,
liveness, definitions), `converters/` (one rewrite per module),
`impl/pipeline.py` (the ordered converter list), `impl/conversion.py`
(parse -> pipeline -> compile, cache), `operators/` (the runtime `ag__`
functions, Python path and staged path) and `ag__.py` (their namespace).

Converted code is compiled with the user's file name and line numbers, so
tracebacks, and the creation sites recorded for graph ops, point at the
user's source.  May import: gast, astunparse, numpy, and `eager` (lazily).
"""
from . import experimental  # noqa: F401
from .errors import AutoGraphError  # noqa: F401
from .impl.api import (AutoGraphWarning, convert, converted_call, do_not_convert,  # noqa: F401
                       set_loop_options, to_code, to_graph)
from .operators.data_structures import list_stack as stack  # noqa: F401
from .operators.variables import Undefined, UndefinedReturnValue  # noqa: F401
from .pyct.transformer import ConversionError, UnsupportedLanguageElementError  # noqa: F401

__all__ = ["to_graph", "to_code", "convert", "do_not_convert", "set_loop_options",
           "converted_call", "ConversionError", "UnsupportedLanguageElementError", "AutoGraphWarning", "stack",
           "experimental"]
